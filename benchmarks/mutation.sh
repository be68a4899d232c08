#!/bin/sh
# Mutation testing of the verdict code with mutmut (slow: not part of every CI run).
#
#   benchmarks/mutation.sh [MUTANT-GLOB...]     e.g. benchmarks/mutation.sh 'nodeqc.core.known_answer*'
#
# The modules mutated and the tests run are in pyproject.toml, [tool.mutmut]: the verdict modules
# (nodeqc/core/known_answer.py, nodeqc/checks/stress/*.py, nodeqc/checks/{common,health,nic,host_health,psu,fleet,burnin,host,conformance,
# host_stress,diagnosis,inventory,processes}.py, nodeqc/core/model.py, nodeqc/fabric/{scoring,report,pairing}.py,
# nodeqc/report/envelope.py) and the fast in-process tests that exercise them (tests marked slow left out). mutmut 3 copies the tree to mutants/ (git-ignored)
# and runs there; results are cached, so a second run only tries what changed. Then the hand-made
# mutations of issue 18, each against the test named to kill it. Score and survivors:
# benchmarks/RESULTS.md, "Mutation testing".
#
# Needs mutmut (3.8) beside the project's dependencies, in a venv of its own:
#   python3 -m venv /tmp/mutvenv && /tmp/mutvenv/bin/pip install mutmut numpy nvidia-ml-py cryptography \
#       psutil platformdirs pytest pytest-timeout pytest-xdist hypothesis
set -eu
cd "$(dirname "$0")/.."
MUTMUT=${MUTMUT:-/tmp/mutvenv/bin/mutmut}
PYTHON=${PYTHON:-$(dirname "$MUTMUT")/python}
CHILDREN=${CHILDREN:-2}
"$MUTMUT" run --max-children "$CHILDREN" "$@" || true  # exits non-zero while mutants survive
"$MUTMUT" results --all true | awk -F': ' '{n[$2]++} END {for (s in n) print s, n[s]}' | sort
"$PYTHON" benchmarks/hand_mutations.py

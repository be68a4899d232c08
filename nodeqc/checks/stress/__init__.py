"""Stress checks: the plan of work the GPUs do in worker processes, and the verdicts on what came back.

Each step names its workload (nodeqc/work/workloads.py), makes its tasks, and judges the outcomes together
with what telemetry saw during the step. Figures are judged against the profile's floor and against
the node's own median (a GPU well below its identical siblings fails even above the floor). A worker
that hung, crashed or lost its GPU is a failure of that GPU with the evidence.

- plan: the Step and the ordered PLAN (which workload runs for which check, and who judges it)
- outcomes: what the judges share (a worker's failure, one result per GPU, the node-median outlier
  rule, wrong data as said) and the sizes, seed and tolerance the params share
- burn (stress.burn), power (stress.power), pulse (stress.power_pulse), memory (stress.hbm_bandwidth,
  stress.memtest), pcie (stress.pcie_bandwidth), p2p (stress.p2p), nccl (stress.nccl, stress.nccl_net)

Import from those modules; this package re-exports nothing.
"""

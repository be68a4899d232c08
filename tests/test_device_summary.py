"""benchmarks/device_summary.py's step walls (issue 30: what each stress step took beyond its load on
the next lent GPU), read from a run's journal as the run writes it."""

import importlib.util
import json

from conftest import ROOT

spec = importlib.util.spec_from_file_location("device_summary", ROOT / "benchmarks" / "device_summary.py")
device_summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(device_summary)


def test_each_stress_step_from_its_start_to_its_last_result(tmp_path):
    journal = tmp_path / "n.journal.jsonl"
    events = [{"type": "check_started", "name": "inventory.nvml", "t": 0.0},
              {"type": "check_started", "name": "stress.burn", "t": 2.1},
              {"type": "check_finished", "t": 34.0, "result": {"name": "stress.burn", "subject": "gpu0"}},
              {"type": "check_started", "name": "stress.power", "t": 34.0},
              {"type": "check_finished", "t": 44.8, "result": {"name": "stress.power", "subject": "gpu0"}},
              {"type": "check_finished", "t": 44.9, "result": {"name": "stress.power", "subject": "node"}},
              {"type": "check_started", "name": "stress.memtest", "t": 59.0}]  # cut short: never finished
    journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert device_summary.step_walls(str(journal)) == (
        "steps, s from start to last result (first stress step at 2.1 s): stress.burn 31.9, stress.power 10.9")
    assert device_summary.step_walls(str(tmp_path / "missing.journal.jsonl")) is None

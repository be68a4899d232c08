"""The watchdog: a worker that hangs, crashes, dies on a signal or raises becomes an outcome with
evidence; nodeqc itself never hangs. Also: the runner's verdicts on those outcomes."""

import time

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.checks.stress.outcomes import outcome_failure
from nodeqc.core.model import Verdict
from nodeqc.work.workers import PipeReporter, Task, Watchdog, run_tasks


@pytest.fixture(scope="module")
def spec():
    return simulated_hardware("hgx-h100", []).compute_spec


def task(name, gpu=0, expected=0.1):
    return Task(f"workloads_for_tests:{name}", gpu, {}, expected)


def test_mixed_outcomes_come_back_together_in_order(spec):
    tasks = [task("steady", 0), task("exits", 1), task("segfaults", 2), task("raises", 3), task("silent", 4)]
    progress = []
    start = time.monotonic()
    outcomes = run_tasks(tasks, spec, Watchdog(startup_s=30, stall_s=2),
                         on_progress=lambda t, f, figs: progress.append((t.gpu, f)))
    elapsed = time.monotonic() - start
    assert [o.status for o in outcomes] == ["ok", "crash", "crash", "error", "hang"]
    ok, exited, segv, raised, hung = outcomes
    assert ok.result == {"done": True} and (0, 1.0) in progress
    assert exited.detail == "worker exited with status 3 without a result" and exited.evidence["exit_code"] == 3
    assert segv.detail == "worker killed by SIGSEGV without a result"
    assert "about to die" in segv.evidence["log_tail"]  # the worker's own output is evidence
    assert raised.detail.startswith("ValueError: bad parameter")
    assert hung.detail.startswith("worker killed by the watchdog: no progress for") and hung.evidence["silent_s"] >= 2
    assert elapsed < 20


def test_a_worker_that_never_reports_is_killed_at_the_startup_limit(spec):
    (o,) = run_tasks([task("never_starts")], spec, Watchdog(startup_s=2, stall_s=1))
    assert o.status == "hang" and "limit 2 s" in o.detail


def test_a_worker_past_its_deadline_is_killed_even_while_it_reports(spec):
    # Deadline: startup 6 s + expected 0 s + stall 0.5 s; the worker reports every 20 ms forever. The
    # start-up allowance is the worker's to reach its first report: under -n 8 on 2 cores a spawned
    # worker took over 3 s, and a 3 s allowance killed it as silent before the deadline could.
    start = time.monotonic()
    (o,) = run_tasks([Task("workloads_for_tests:chatty_forever", 0, {}, 0.0)], spec, Watchdog(startup_s=6, stall_s=0.5))
    assert o.status == "hang" and "deadline 6.5 s" in o.detail, o.detail
    assert 6.5 <= time.monotonic() - start < 12


def test_abort_kills_the_workers(spec):
    start = time.monotonic()
    outcomes = run_tasks([task("silent", 0), task("silent", 1)], spec, Watchdog(30, 30),
                         should_abort=lambda: time.monotonic() - start > 1.5)
    assert [o.status for o in outcomes] == ["aborted", "aborted"]
    assert time.monotonic() - start < 10


def test_verdicts_on_outcomes(spec):
    outcomes = run_tasks([task("exits"), task("raises"), task("cuda_error"), task("silent")], spec, Watchdog(30, 1.5))
    results = [outcome_failure("stress.burn", "gpu0", o) for o in outcomes]
    assert [(r.verdict, r.code) for r in results] == [
        (Verdict.FAIL, "WORKER_CRASH"),
        (Verdict.ERROR, "INTERNAL_ERROR"),  # our bug, not the GPU's: report it
        (Verdict.FAIL, "WORKER_ERROR"),  # CUDA said the GPU misbehaved
        (Verdict.FAIL, "WORKER_HANG"),
    ]
    assert results[0].evidence["worker"]["exit_code"] == 3


def test_a_worker_reports_at_most_ten_a_second_its_end_once_and_every_window_and_bound():
    class Pipe:
        def __init__(self):
            self.sent = []

        def send(self, message):
            self.sent.append(message)

    pipe = Pipe()
    report = PipeReporter(pipe)
    for n in range(100):  # a quick loop's steps: the first goes, the rest within 0.1 s do not
        report.progress(n / 100, step=n)
    for _ in range(700):  # a load held past its end (HBM's triad to its minimum wall time)
        report.progress(1.0, kind="triad")
    report.progress(0.5, window={"t": 1})  # results and the pulse's bounds always go
    report.progress(0.5, bound="start")
    fractions = [m[1] for m in pipe.sent]
    assert fractions == [0.0, 1.0, 0.5, 0.5], fractions

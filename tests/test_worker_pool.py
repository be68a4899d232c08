"""A run's kept workers (nodeqc.work.workers.WorkerPool): one process per GPU serves every step, so
start-up is paid once (issue 30); a worker whose task did not end well is never given another; a
task on another set of GPUs retires the idle workers holding them; nothing outlives the pool."""

import time

import psutil
import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.core.model import Verdict
from nodeqc.spec.profile import load_profile
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.work.workers import Task, Watchdog, WorkerPool, run_tasks

DOG = Watchdog(startup_s=30, stall_s=5)


@pytest.fixture(scope="module")
def spec():
    return simulated_hardware("hgx-h100", []).compute_spec


def task(name, gpu=0, gpus=(), **params):
    return Task(f"workloads_for_tests:{name}", gpu, params, 0.1, gpus)


def gone(pid, within_s=10.0):
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_one_process_per_gpu_serves_every_step(spec):
    with WorkerPool(spec) as pool:
        pool.start([0, 1])
        first = run_tasks([task("pid", 0), task("pid", 1)], spec, DOG, pool=pool)
        second = run_tasks([task("pid", 0), task("pid", 1)], spec, DOG, pool=pool)
        assert [o.status for o in first + second] == ["ok"] * 4
        pids = [o.result["pid"] for o in first]
        assert [o.result["pid"] for o in second] == pids and len(set(pids)) == 2
        assert pool.started == 2
    assert all(gone(p) for p in pids)


def test_without_a_pool_each_task_has_its_own_process(spec):
    a = run_tasks([task("pid", 0)], spec, DOG)
    b = run_tasks([task("pid", 0)], spec, DOG)
    assert a[0].result["pid"] != b[0].result["pid"]


@pytest.mark.parametrize("bad, status", [("raises", "error"), ("exits", "crash"), ("silent", "hang")])
def test_a_worker_whose_task_did_not_end_well_is_not_given_another(spec, bad, status):
    with WorkerPool(spec) as pool:
        (before,) = run_tasks([task("pid", 0)], spec, DOG, pool=pool)
        (failed,) = run_tasks([task(bad, 0)], spec, Watchdog(startup_s=30, stall_s=1.5), pool=pool)
        (after,) = run_tasks([task("pid", 0)], spec, DOG, pool=pool)
        assert failed.status == status and after.status == "ok"
        assert after.result["pid"] != before.result["pid"] and pool.started == 2
        assert gone(before.result["pid"])


def test_a_worker_that_could_not_free_its_gpu_keeps_its_result_but_takes_no_other_task(spec):
    """Its result stands (the work was done and verified), but a process whose device did not close
    may still hold the GPU's memory: the next task gets a fresh process, and is not handed to one
    that is about to end (a task sent there would come back as a crash that was not its own)."""
    with WorkerPool(spec) as pool:
        (freed_not,) = run_tasks([task("cannot_free", 0)], spec, DOG, pool=pool)
        assert (0,) not in pool._idle  # not kept, whether or not it has ended yet
        (after,) = run_tasks([task("pid", 0)], spec, DOG, pool=pool)
        assert freed_not.status == "ok" and after.status == "ok"
        assert after.result["pid"] != freed_not.result["pid"] and pool.started == 2


def test_a_kept_workers_crash_shows_its_own_tasks_log_not_the_last_tasks(spec):
    with WorkerPool(spec) as pool:
        (said,) = run_tasks([task("pid", 0, say="an earlier step's chatter")], spec, DOG, pool=pool)
        (crash,) = run_tasks([task("prints_then_segfaults", 0)], spec, DOG, pool=pool)
        assert pool.started == 1  # the same process ran both
        assert crash.status == "crash" and crash.detail == "worker killed by SIGSEGV without a result"
        assert "this task's last words" in crash.evidence["log_tail"]
        assert not any("chatter" in line for line in crash.evidence["log_tail"])


def test_a_task_on_several_gpus_retires_the_idle_workers_holding_them(spec):
    """Each kept worker holds a CUDA context on its GPU: a GPU-to-GPU step's process must not sit
    beside them (their memory would be missing from its GPUs), nor they come back after it."""
    with WorkerPool(spec) as pool:
        per_gpu = run_tasks([task("pid", 0), task("pid", 1), task("pid", 2)], spec, DOG, pool=pool)
        (both,) = run_tasks([task("pid", 0, gpus=(0, 1))], spec, DOG, pool=pool)
        assert gone(per_gpu[0].result["pid"]) and gone(per_gpu[1].result["pid"])
        assert psutil.pid_exists(per_gpu[2].result["pid"]) and not gone(per_gpu[2].result["pid"], 0.2)
        (again,) = run_tasks([task("pid", 0)], spec, DOG, pool=pool)
        assert gone(both.result["pid"]) and again.result["pid"] not in {o.result["pid"] for o in per_gpu}


def test_gpu_to_gpu_tasks_and_tasks_with_their_own_environment_get_a_fresh_process_each():
    """NCCL reads NCCL_P2P_DISABLE once a process, at its first communicator, and peer access once
    enabled stays: the in-node all-reduce and the one through the NICs (P2P and SHM off) in one
    process would run the second over NVLink and pass it without its work. So a GPU-to-GPU task is
    never given a kept process, nor is a task that sets its environment, which must not leak into
    the next task either."""
    spec = simulated_hardware("hgx-h100", []).compute_spec
    with WorkerPool(spec) as pool:
        first, second = (run_tasks([task("pid", 0, gpus=(0, 1))], spec, DOG, pool=pool)[0] for _ in range(2))
        assert first.result["pid"] != second.result["pid"] and pool._idle == {}
        (own,) = run_tasks([task("sets_env", 0, env={"NCCL_P2P_DISABLE": "1"})], spec, DOG, pool=pool)
        (after,) = run_tasks([task("sets_env", 0)], spec, DOG, pool=pool)
        assert own.result["seen"] == "1" and after.result["seen"] is None
        assert own.result["pid"] != after.result["pid"] and pool.started == 4


def test_a_kept_worker_ends_when_its_supervisor_is_gone(spec):
    """The supervisor killed outright closes the task pipe: a worker waiting on it exits rather than
    holding its GPU's context for ever."""
    pool = WorkerPool(spec)
    (o,) = run_tasks([task("pid", 0)], spec, DOG, pool=pool)
    worker = pool._idle[(0,)]
    worker.tasks.close()  # what the supervisor's death does to the pipe
    assert gone(o.result["pid"])
    pool.close()


def test_a_pool_serves_one_spec(spec):
    with WorkerPool(spec) as pool, pytest.raises(ValueError, match="another compute spec"):
        run_tasks([task("pid", 0)], dict(spec), DOG, pool=pool)


def test_a_simulated_run_starts_one_worker_per_gpu_for_all_its_steps(tmp_path, monkeypatch):
    """End to end: the quick plan's six per-GPU steps on a 1-GPU node, one process started, and
    started before the first step (its imports overlap telemetry's idle readings)."""
    said = []
    real = WorkerPool._spawn

    def counting(self, gpus, task):
        said.append(("spawned", gpus, task))
        return real(self, gpus, task)

    monkeypatch.setattr(WorkerPool, "_spawn", counting)
    hw = simulated_hardware("h100", [], time_scale=40)
    options = RunOptions(load_profile("h100"), create_key(tmp_path / "k.pem"), out_dir=tmp_path / "out", quick=True)
    outcome = Runner(options, hw, lambda e: said.append(("started", e.name)) if e.type == "check_started" else None).run()
    spawned = [s[1] for s in said if s[0] == "spawned"]
    first = next(n for n, s in enumerate(said) if s == ("started", "stress.burn"))
    assert said.index(("spawned", (0,), None)) < first
    assert outcome.exit_code == 0
    ran = {r.name for r in outcome.results if r.name.startswith("stress.") and r.verdict is Verdict.PASS}
    assert {"stress.burn", "stress.power", "stress.power_pulse", "stress.hbm_bandwidth", "stress.memtest",
            "stress.pcie_bandwidth"} <= ran
    assert spawned == [(0,)]
    assert not [p for p in psutil.Process().children(recursive=True) if "worker" in " ".join(p.cmdline())
                and p.status() != psutil.STATUS_ZOMBIE]


def test_a_run_waits_for_its_kept_workers_imports_then_no_longer(spec):
    """The run's idle readings last until every kept worker has imported what its tasks need (issue
    30: a fixed 2 s left a worker ready sooner idle): each says so once; that word is taken off its
    pipe and the tasks that follow run as before."""
    with WorkerPool(spec) as pool:
        pool.start([0, 1])
        assert pool.wait_ready(30) is True
        assert all(w.ready for w in pool._idle.values())
        outcomes = run_tasks([task("pid", 0), task("pid", 1)], spec, DOG, pool=pool)
        assert [o.status for o in outcomes] == ["ok", "ok"] and pool.started == 2


def test_a_workers_ready_is_no_sign_that_its_task_has_started(spec):
    """A kept worker's "ready" still in its pipe when its first task arrives (nobody waited for it)
    is passed over: the task is held to the start-up limit, not to the shorter stall limit that a
    sign of its life would bring."""
    with WorkerPool(spec) as pool:
        pool.start([0])
        worker = pool._idle[(0,)]
        assert worker.conn.poll(30)  # its "ready", not taken
        (o,) = run_tasks([task("never_starts", 0)], spec, Watchdog(startup_s=2.0, stall_s=0.3), pool=pool)
        assert o.status == "hang" and "(limit 2 s)" in o.detail


class _Process:
    """A stand-in worker process: alive until end(), its sentinel readable from then on."""

    def __init__(self):
        import multiprocessing

        self.sentinel, self._alive = multiprocessing.Pipe(duplex=False)

    def is_alive(self):
        return not self._alive.closed

    def end(self):
        self._alive.close()


def test_the_wait_for_workers_is_bounded_and_an_ended_worker_is_not_waited_for(spec):
    """Not ready within the time given: False, at once when the time is spent; a worker that ended
    without a word is not waited for (its first task's outcome says how it ended)."""
    import multiprocessing

    from nodeqc.work.workers import _Worker

    with WorkerPool(spec) as pool:
        said, says = multiprocessing.Pipe(duplex=False)
        _, tasks = multiprocessing.Pipe(duplex=False)
        slow, dead = _Process(), _Process()
        pool._idle[(0,)] = _Worker((0,), slow, said, tasks, "-")
        pool._idle[(1,)] = _Worker((1,), dead, multiprocessing.Pipe(duplex=False)[0], tasks, "-")
        began = time.monotonic()
        assert pool.wait_ready(0.3) is False
        assert 0.25 < time.monotonic() - began < 5
        dead.end()
        says.send(("ready",))
        assert pool.wait_ready(5) is True
        assert pool._idle[(0,)].ready and pool._idle[(1,)].ready and not said.poll()
        pool._idle.clear()

"""Imported by the simulated node's fork server alone (starts.SIM_PRELOAD), never by the run: the
fork server ignores SIGTERM, as each worker does (workers._worker_main).

SIGTERM reaches every process of a run (scancel, systemd's stop, `timeout`). The fork server died
of it, and multiprocessing, unable to ask it for its workers' exit status, gave each worker 255:
a healthy GPU failed stress.burn as WORKER_CRASH while the run was being aborted. The fork server
still ends when its last pool closes or the run's process is gone (its pipe from the run closes);
what it forks inherits the ignored SIGTERM until the worker sets its own."""

import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)

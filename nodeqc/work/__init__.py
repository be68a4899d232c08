"""The work a run does on the GPUs: tasks run in worker processes under a watchdog (workers), the
workloads they run (workloads), and the NVML telemetry sampled meanwhile (telemetry)."""

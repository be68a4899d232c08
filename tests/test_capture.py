"""Capture and replay: what the recorder writes down, the replay serves back the same way, so a
captured machine runs every check on a machine without its GPUs."""

import ctypes
import json

import pynvml
import pytest

from conftest import cli
from nodeqc.backends.host import LinuxHost
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_capture import _plain
from nodeqc.backends.nvml_replay import ReplayNvml
from nodeqc.core.na import NA
from nodeqc.run.capture import capture, write_capture

from nvml_descriptions import QUIRKS, h100_device, node


def machine():
    """The 'real' NVML: two H100s, one with quirks, one lost before the run."""
    return ReplayNvml(node([h100_device(0), h100_device(1, **QUIRKS["old_driver"]), h100_device(2, handle_error="GPU_IS_LOST")]))


def test_ctypes_answers_become_plain_tables():
    mem = pynvml.c_nvmlMemory_t()
    mem.total, mem.free, mem.used = 80, 70, 10
    assert _plain(mem) == {"total": 80, "free": 70, "used": 10}
    util = pynvml.c_nvmlUtilization_t()
    util.gpu, util.memory = 99, 40
    assert _plain(util) == {"gpu": 99, "memory": 40}
    assert _plain(b"NVIDIA H100") == "NVIDIA H100"
    assert _plain((ctypes.c_uint * 2)(9, 0)) == [9, 0]
    # pynvml hands compute processes over as its "friendly" objects, not ctypes structures.
    assert _plain([pynvml.nvmlFriendlyObject({"pid": 7, "usedGpuMemory": None})]) == [{"pid": 7, "usedGpuMemory": None}]


def test_replay_of_a_capture_answers_like_the_machine():
    data = capture(seconds=0.3, hz=20, load=False, host=LinuxHost().info(), nvml=machine())
    replayed = NvmlBackend(ReplayNvml(json.loads(json.dumps(data))))
    original = NvmlBackend(machine())
    replayed.open()
    original.open()
    assert [g.to_dict() for g in replayed.gpus()] == [g.to_dict() for g in original.gpus()]
    assert replayed.gpus()[2].lost
    assert replayed.gpus()[1].pcie_gpu_max_gen is NA  # the old driver's missing function stays missing
    assert [replayed.sample(0).to_dict() for _ in range(3)] == [original.sample(0).to_dict() for _ in range(3)]
    assert replayed.counters(1).to_dict() == original.counters(1).to_dict()
    assert replayed.driver_version() == "570.86.15"
    assert data["devices"][2] == {"handle_error": "GPU_IS_LOST"}
    assert data["load"].startswith("none")


def test_replay_run_exercises_every_check(tmp_path):
    data = capture(seconds=0.3, hz=20, load=False, host=LinuxHost().info(),
                   nvml=ReplayNvml(node([h100_device(0), h100_device(1)])))
    path = tmp_path / "h100x2.capture.json"
    write_capture(path, data)
    p = cli("--headless", "--replay", str(path), "--profile", "h100", "--quick", "--out", str(tmp_path / "r"))
    assert p.returncode in (0, 1), p.stderr
    for check in ("inventory.gpu_model", "stress.burn", "stress.memtest", "stress.p2p", "health.temperature",
                  "health.pcie_link", "health.nvlink", "host.cpu"):
        assert check in p.stderr, check
    report = p.stdout.strip().splitlines()[-1]
    show = cli("show", report)
    assert "SIMULATED" in show.stdout and "h100x2.capture.json" in show.stdout
    # A capture made by this nodeqc holds every answer a run asks for.
    assert "the capture holds no answer" not in p.stderr + show.stdout


def test_a_replay_says_which_answers_its_capture_never_recorded(tmp_path):
    """A capture made before nodeqc asked for the process list and on-chip ECC: the replay says so
    (warning, and in the report), not only that they are "not available on this GPU"."""
    data = capture(seconds=0.3, hz=20, load=False, host=LinuxHost().info(), nvml=ReplayNvml(node([h100_device(0)])))
    for gone in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetMemoryErrorCounter"):
        assert data["devices"][0].pop(gone, None) is not None, gone
    fields = data["devices"][0]["nvmlDeviceGetFieldValues"]
    fields.pop(str(pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP))
    path = tmp_path / "old.capture.json"
    write_capture(path, data)
    said = ("the capture holds no answer to nvmlDeviceGetComputeRunningProcesses, "
            "nvmlDeviceGetFieldValues(NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP), nvmlDeviceGetMemoryErrorCounter "
            "(made before nodeqc asked): checks reading them say not in the replayed capture, which says nothing of the "
            "captured GPU; a capture made now (nodeqc capture) records them")
    p = cli("--headless", "--replay", str(path), "--profile", "h100", "--quick", "--out", str(tmp_path / "r"))
    assert f"nodeqc: warning: {said}" in p.stderr, p.stderr
    report = p.stdout.strip().splitlines()[-1]
    assert json.loads(_payload(report))["predicate"]["simulation"]["unrecorded"] == [
        "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetFieldValues(NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP)",
        "nvmlDeviceGetMemoryErrorCounter"]
    assert f"          {said}" in cli("show", report).stdout.splitlines()
    # Each check that lacked an answer says the capture lacked it, not the GPU.
    checks = {c["name"]: c for c in json.loads(_payload(report))["predicate"]["checks"] if c["subject"] == "gpu0"}
    assert checks["health.sram_ecc"]["verdict"] == "skip"
    assert checks["health.sram_ecc"]["message"] == ("on-chip (SRAM) ECC counters not available in the replayed "
                                                    "capture (see the report's `replayed` line)")
    assert not any(c["message"].endswith("on this GPU") for c in checks.values() if c["verdict"] == "skip")
    # A description written by hand (tests' fake machines) is no capture: what it leaves out is the
    # driver's lack, recorded nowhere.
    description = node([h100_device(0)])
    description["devices"][0].pop("nvmlDeviceGetComputeRunningProcesses", None)
    fake = ReplayNvml(description)
    backend = NvmlBackend(fake)
    backend.open()
    assert backend.processes(0) is NA
    backend.close()
    assert backend.unrecorded() == [] and fake.unrecorded == set()


def _payload(report: str) -> bytes:
    import base64

    return base64.b64decode(json.loads(open(report).read())["payload"])


def test_capture_without_a_driver_is_one_line_and_exit_2(tmp_path):
    try:
        pynvml.nvmlInit()
        pytest.skip("an NVIDIA driver is present here")
    except pynvml.NVMLError:
        pass
    p = cli("capture", str(tmp_path / "c.json"))
    assert p.returncode == 2 and "NVML not available" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable capture"),
    ('{"devices": []}', "not a nodeqc capture"),
])
def test_bad_capture_files(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_text(content)
    p = cli("--headless", "--replay", str(path), "--profile", "h100")
    assert p.returncode == 2 and message in p.stderr


def test_a_capture_records_the_gpus_processes_and_their_names_for_replay():
    """The listing is taken before the capture's own load, and names travel with their pids."""
    procs = [{"pid": 4242, "usedGpuMemory": 1_127_219_200}]
    desc = node([h100_device(0, nvmlDeviceGetComputeRunningProcesses=procs), h100_device(1)])
    desc["system"]["nvmlSystemGetProcessName"] = {"args": {"4242": "python3"}}
    data = json.loads(json.dumps(capture(seconds=0.1, hz=20, load=False, host=LinuxHost().info(), nvml=ReplayNvml(desc))))
    assert data["devices"][0]["nvmlDeviceGetComputeRunningProcesses"] == procs
    assert data["system"]["nvmlSystemGetProcessName"] == {"args": {"4242": "python3"}}
    assert data["devices"][1]["nvmlDeviceGetComputeRunningProcesses"] == {"error": "FUNCTION_NOT_FOUND"}
    replayed = NvmlBackend(ReplayNvml(data))
    replayed.open()
    assert [p.to_dict() for p in replayed.processes(0)] == [{"pid": 4242, "name": "python3", "used_bytes": 1_127_219_200}]
    assert replayed.processes(1) is NA

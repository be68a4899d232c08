"""A capture given to `--replay` is input from the node under test: a field of the wrong kind is refused
in one line that names it, before anything reads it (nodeqc.backends.capture_shape). Before, a serial
that was an object, a device list that was text or a power limit that was text ended in an internal
error, and a time of capture that was no time ran through to the report."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.backends import replay_hardware
from nodeqc.backends.capture_shape import ANSWERS, NOT_RECORDED, CaptureShapeError, check_capture
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_replay import ReplayNvml
from nodeqc.core.errors import GpuLostError, UsageError

from nvml_descriptions import QUIRKS, h100_device, node

FIXTURES = ROOT / "tests" / "fixtures"
REAL = sorted(FIXTURES.glob("capture-*.json")) + sorted((ROOT.parent / "shared" / "measurements").rglob("capture-*.json"))
NEWEST = FIXTURES / "capture-h100-sxm5-80gb-2026-11-28.json"


@pytest.fixture(scope="module")
def newest() -> dict:
    return json.loads(NEWEST.read_text())


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_real_capture_is_of_its_kinds(path):
    check_capture(json.loads(path.read_text()))


def test_the_test_descriptions_and_their_driver_quirks_are_of_their_kinds():
    check_capture(node([h100_device(0), *(h100_device(n + 1, **q) for n, q in enumerate(QUIRKS.values()))]))


def test_every_nvml_function_the_backend_calls_has_a_kind():
    """A function the backend calls that the table lacks would go unchecked: a replayed answer of the
    wrong kind would again end in an internal error."""
    source = "".join(p.read_text() for p in (ROOT / "nodeqc" / "backends").glob("nvml*.py"))
    called = set(re.findall(r'"(nvml(?:Device|System)\w+)"', source)) - {"nvmlDeviceGetFieldValues"}
    assert called and called <= set(ANSWERS) | NOT_RECORDED, called - set(ANSWERS) - NOT_RECORDED


def _set(data: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


# Found by fuzzing 2026-11-28: each ended in an internal error, or ran on garbage with exit 0.
WRONG = [
    (("devices",), "x", "devices"),
    (("devices",), None, "devices"),
    (("devices",), [{}] * 65, "devices"),
    (("host",), "x", "host"),
    (("system",), None, "system"),
    (("host", "hostname"), None, "host.hostname"),
    (("host", "nvidia_gpus_on_pci"), "x", "host.nvidia_gpus_on_pci"),
    (("host", "nvidia_gpus_on_pci"), [{"bus_id": "zz"}], "host.nvidia_gpus_on_pci[0].bus_id"),
    (("host", "cores"), -4, "host.cores"),
    (("host", "imex"), {"running": "yes"}, "host.imex.running"),
    (("devices", 0, "nvmlDeviceGetSerial"), {}, "devices[0].nvmlDeviceGetSerial"),
    (("devices", 0, "nvmlDeviceGetUUID"), {}, "devices[0].nvmlDeviceGetUUID"),
    (("devices", 0, "nvmlDeviceGetVbiosVersion"), {}, "devices[0].nvmlDeviceGetVbiosVersion"),
    (("devices", 0, "nvmlDeviceGetTemperatureThreshold"), {}, "devices[0].nvmlDeviceGetTemperatureThreshold"),
    (("devices", 0, "nvmlDeviceGetPowerManagementDefaultLimit"), "x",
     "devices[0].nvmlDeviceGetPowerManagementDefaultLimit"),
    (("devices", 0, "nvmlDeviceGetPowerUsage"), {"series": []}, "devices[0].nvmlDeviceGetPowerUsage.series"),
    (("devices", 0, "nvmlDeviceGetPowerUsage"), 10 ** 30, "devices[0].nvmlDeviceGetPowerUsage"),
    (("devices", 0, "nvmlDeviceGetUtilizationRates"), "x", "devices[0].nvmlDeviceGetUtilizationRates"),
    (("devices", 0, "nvmlDeviceGetPciInfo", "busId"), "zz:1b", "devices[0].nvmlDeviceGetPciInfo.busId"),
    (("devices", 0, "nvmlDeviceGetSerial"), {"error": "NO_SUCH_ERROR"}, "devices[0].nvmlDeviceGetSerial.error"),
    (("devices", 0, "handle_error"), "x", "devices[0].handle_error"),
    (("devices", 0, "nvmlDeviceGetFieldValues", "82", "value"), {}, "devices[0].nvmlDeviceGetFieldValues.82.value.uiVal"),
    (("xid_events",), [{"device": 3, "xid": 79}], "xid_events[0].device"),
    (("captured_at",), "yesterday", "captured_at"),
    (("captured_at",), 12345, "captured_at"),
    (("tool",), "x", "tool"),
    (("load",), ["x"], "load"),
    (("init_error",), "BOGUS", "init_error"),
]


@pytest.mark.parametrize("path, value, where", WRONG, ids=[w[2] + ":" + type(w[1]).__name__ for w in WRONG])
def test_a_capture_field_of_the_wrong_kind_is_refused_naming_it(tmp_path, newest, path, value, where):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_set(newest, path, value)))
    with pytest.raises(UsageError) as refused:
        replay_hardware(str(bad))
    assert str(refused.value).startswith(f"--replay {bad}: a field of the wrong kind: {where}: expected ")


@pytest.mark.parametrize("path, value", [(("devices", 0, "nvmlDeviceGetSerial"), {}), (("devices",), "x")])
def test_on_the_command_line_a_wrong_kind_is_one_line_and_exit_2(tmp_path, newest, path, value):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_set(newest, path, value)))
    p = cli("--headless", "--replay", str(bad), "--profile", "auto", "--quick", "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and "a field of the wrong kind" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "internal error" not in p.stderr


# What a capture's answers might be turned into: each either refused or read without an error.
MUTANTS = [None, "x", "", {}, [], -1, 2 ** 64, 1.5, True, [None], ["x"], {"series": []}, {"series": "x"},
           {"series": [None]}, {"args": "x"}, {"args": {"1": "x"}}, {"error": 3}, {"fills": "x"}, {"fills": {"state": -1}},
           float("nan"), "0" * 200]


def _read_all(data: dict) -> None:
    backend = NvmlBackend(ReplayNvml(copy.deepcopy(data)))
    backend.open()
    try:
        backend.driver_version()
        backend.cuda_version()
        for gpu in backend.gpus():
            if gpu.lost:
                continue
            try:
                backend.sample(gpu.index)
                backend.counters(gpu.index)
                backend.processes(gpu.index)
            except GpuLostError:
                pass
    finally:
        backend.close()


def test_every_recorded_answer_turned_to_any_kind_is_refused_or_read_without_an_error(newest):
    """The kind table's promise, against the backend that reads the answers: for each function a real
    capture recorded and each wrong value, either the check refuses the capture or the NVML backend
    reads every GPU's inventory, telemetry, counters and processes from it without an exception."""
    device = newest["devices"][0]
    names = [("devices", 0, name) for name in device] + [("system", name) for name in newest["system"]]
    names += [("devices", 0, "nvmlDeviceGetFieldValues", fid) for fid in device["nvmlDeviceGetFieldValues"]]
    read, refused = 0, 0
    for path in names:
        for value in MUTANTS:
            data = _set(newest, path, value)
            try:
                check_capture(data)
            except CaptureShapeError:
                refused += 1
                continue
            try:
                _read_all(data)
            except Exception as e:  # noqa: BLE001 - the failure this test is for
                pytest.fail(f"{'.'.join(map(str, path))} = {value!r} passed the check and broke the backend: {e!r}")
            read += 1
    assert refused > 10 * read > 0  # most are refused; the rest (an error name's answer, "" text) read


def test_a_good_capture_still_replays_with_every_field_checked(newest, tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(newest))
    hardware = replay_hardware(str(good))
    assert hardware.replayed and hardware.simulation["captured_at"] == newest["captured_at"]
    assert Path(hardware.simulation["replay"]).name == "good.json"


def test_a_gpu_captured_twice_is_refused(newest):
    """The 2026-11-29 fuzzing: devices[0] copied to devices[1] replayed as two GPUs both named gpu0,
    and the node passed. A bus id or UUID two devices answer is no capture nodeqc writes."""
    import copy

    twice = copy.deepcopy(newest)
    twice["devices"].append(copy.deepcopy(twice["devices"][0]))
    with pytest.raises(CaptureShapeError, match=r"^devices\[1\]: expected a GPU of its own \(its bus id "):
        check_capture(twice)
    moved = copy.deepcopy(twice)
    moved["devices"][1]["nvmlDeviceGetPciInfo"]["busId"] = "00000000:2A:00.0"  # same UUID still
    with pytest.raises(CaptureShapeError, match=r"^devices\[1\]: expected a GPU of its own \(its UUID GPU-"):
        check_capture(moved)
    check_capture(node([h100_device(0), h100_device(1)]))  # two GPUs of their own
    # The same address spelt with a shorter domain is the same GPU (it passed as a second one).
    spelt = copy.deepcopy(twice)
    bus = spelt["devices"][1]["nvmlDeviceGetPciInfo"]["busId"]
    spelt["devices"][1]["nvmlDeviceGetPciInfo"]["busId"] = bus[4:]  # 00000000:1B:00.0 -> 0000:1B:00.0
    spelt["devices"][1]["nvmlDeviceGetUUID"], spelt["devices"][1]["nvmlDeviceGetSerial"] = "GPU-other", "other"
    with pytest.raises(CaptureShapeError, match=r"^devices\[1\]: expected a GPU of its own \(its bus id "):
        check_capture(spelt)


@pytest.mark.parametrize("field, value", [("nvmlDeviceGetCurrPcieLinkGeneration", 2 ** 32 - 1),
                                          ("nvmlDeviceGetCurrPcieLinkWidth", 2 ** 64 - 1),
                                          ("nvmlDeviceGetTemperature", 2 ** 64 - 1)])
def test_a_replayed_reading_no_part_can_give_is_not_read_and_the_gpu_not_qualified(tmp_path, field, value):
    """The 2026-11-29 fuzzing: a link of Gen4294967295 x4294967295 passed health.pcie_link (x2^64-1 wrote
    a report that failed its own check), and a GPU whose every temperature was garbage qualified."""
    import json

    from conftest import cli

    data = json.loads((FIXTURES / "capture-h100-sxm5-80gb.json").read_text())
    data["devices"][0][field] = value
    capture = tmp_path / "c.json"
    capture.write_text(json.dumps(data))
    p = cli("--headless", "--replay", str(capture), "--quick", "--only", "inventory,health", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "Traceback" not in p.stderr and "NOT VERIFIED" not in p.stderr, p.stderr
    check = "health.temperature" if "Temperature" in field else "health.pcie_link"
    assert f"ERROR {check}" in p.stderr and "[NOT_READ]" in p.stderr, p.stderr


@pytest.mark.parametrize("field, value, said", [
    # The review of those fixes: 2^32-1 mW "held 4294967.3 W of the 700 W limit" and passed the power test;
    # a clock of 2^64-1 MHz wrote a report that failed its own check.
    ("nvmlDeviceGetPowerUsage", 2 ** 32 - 1, "ERROR stress.power"),
    ("nvmlDeviceGetClockInfo", 2 ** 64 - 1, "RESULT:")])
def test_a_replayed_power_or_clock_no_part_can_give_is_no_reading(tmp_path, field, value, said):
    import json

    from conftest import cli

    data = json.loads((FIXTURES / "capture-h100-sxm5-80gb.json").read_text())
    for device in data["devices"]:
        device[field] = value
    capture = tmp_path / "c.json"
    capture.write_text(json.dumps(data))
    p = cli("--headless", "--replay", str(capture), "--quick", "--only", "stress.power", "--out", str(tmp_path / "o"))
    assert "4294967" not in p.stderr and "NOT VERIFIED" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert said in p.stderr and p.returncode != 0, p.stderr


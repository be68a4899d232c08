"""The NVML backend against a replayed NVML: units, NotSupported and missing functions as NA, lost
GPUs, XID events, and a driver that is not there."""

import time

import pytest

from nodeqc.backends.base import Clock
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_replay import ReplayNvml
from nodeqc.core.errors import BackendUnavailable, GpuLostError
from nodeqc.core.na import NA, is_na

from nvml_descriptions import QUIRKS, h100_device, node


def backend(devices, **extra) -> NvmlBackend:
    b = NvmlBackend(ReplayNvml(node(devices, **extra)))
    b.open()
    return b


def test_inventory_of_a_healthy_h100():
    b = backend([h100_device(0), h100_device(1)])
    assert b.driver_version() == "570.86.15" and b.cuda_version() == "12.8"
    g = b.gpus()[1]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.bus_id == "0000:1c:00.0"
    assert g.memory_total_bytes == 81559 * 1024 * 1024 and g.compute_capability == "9.0"
    assert (g.ecc_enabled, g.ecc_pending, g.persistence) == (True, True, True)
    assert (g.pcie_max_gen, g.pcie_max_width, g.nvlink_count) == (5, 16, 18)
    assert (g.temp_slowdown_c, g.temp_shutdown_c, g.temp_gpu_max_c, g.temp_mem_max_c) == (90, 92, 87, 95)
    assert g.power_limit_w == 700.0 and g.max_sm_clock_mhz == 1980


def test_each_gpu_says_how_it_reaches_the_others():
    """NVLink where the driver reports peer-to-peer over it, else NVML's common PCIe ancestor, else
    "unknown" (a driver without the function, a GPU it does not answer for); lost GPUs are left out."""
    pcie = {"nvmlDeviceGetP2PStatus": {"error": "NOT_SUPPORTED"}}
    b = backend([h100_device(0), h100_device(1), h100_device(2, **pcie), h100_device(3, **pcie),
                 h100_device(4, lost=True)])
    g = b.gpus()
    assert g[0].peer_paths == {"1": "nvlink", "2": "nvlink", "3": "nvlink"}
    assert g[2].peer_paths == {"0": "system", "1": "system", "3": "switch"}
    assert g[4].lost and g[4].peer_paths == {}
    levels = {"0": 0, "1": 10, "2": 20, "3": 30, "4": 40}
    b = backend([h100_device(5, nvmlDeviceGetTopologyCommonAncestor={"args": levels}, **pcie),
                 *[h100_device(i) for i in range(1, 5)]])
    assert b.gpus()[0].peer_paths == {"1": "switch", "2": "switches", "3": "host_bridge", "4": "numa_node"}
    quiet = {"nvmlDeviceGetTopologyCommonAncestor": {"error": "NOT_SUPPORTED"}, **pcie}
    assert backend([h100_device(0, **quiet), h100_device(1)]).gpus()[0].peer_paths == {"1": "unknown"}


def test_samples_convert_units_and_follow_the_series():
    b = backend([h100_device()])
    first, second = b.sample(0), b.sample(0)
    assert (first.power_w, first.util_pct, first.pcie_gen, first.reasons) == (72.0, 0, 1, 1)
    assert (second.power_w, second.util_pct, second.pcie_gen, second.sm_clock_mhz) == (310.0, 100, 5, 1980)
    assert second.mem_temp_c == 41 and second.power_limit_w == 700.0


def test_a_reading_no_gpu_can_give_is_no_reading():
    """A replayed capture's memory temperature as a double of 1e308 (the field's valueType 0): the
    run's mean overflowed to inf and its own report failed its check (2026-11-29 fuzzing). A
    temperature or power outside what any part can read is NA; what a part can read stands."""
    import pynvml

    from nodeqc.work.telemetry import Stat

    def fields(memory_temp):
        return {str(pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT): {"nvmlReturn": 0, "valueType": 1, "value": {"uiVal": 18}},
                str(pynvml.NVML_FI_DEV_MEMORY_TEMP): {"nvmlReturn": 0, "valueType": 0, "value": {"dVal": memory_temp}}}

    wild = backend([h100_device(nvmlDeviceGetFieldValues=fields(1e308),
                                nvmlDeviceGetTemperature={"series": [4294967295, 45, 1e308]})])
    samples = [wild.sample(0) for _ in range(3)]
    assert [s.mem_temp_c for s in samples] == [NA] * 3
    assert [s.temp_c for s in samples] == [NA, 45, NA]
    stat = Stat()
    for s in samples:
        stat.add(s.temp_c)
    assert stat.mean == 45
    assert backend([h100_device(nvmlDeviceGetFieldValues=fields(93.5))]).sample(0).mem_temp_c == 93.5


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_quirks_become_not_available_never_a_crash(quirk):
    b = backend([h100_device(**QUIRKS[quirk])])
    g, s, c = b.gpus()[0], b.sample(0), b.counters(0)
    for name in QUIRKS[quirk]:
        if name == "nvmlDeviceGetSerial":
            assert g.serial is NA
        if name == "nvmlDeviceGetFieldValues":
            assert is_na(s.mem_temp_c) and is_na(g.nvlink_count)
        if name == "nvmlDeviceGetRemappedRows":
            assert c.remap_pending is NA
        if name == "nvmlDeviceGetGpuMaxPcieLinkGeneration":
            assert g.pcie_gpu_max_gen is NA
        if name == "nvmlDeviceGetCurrentClocksEventReasons":
            assert s.reasons is NA
        if name == "nvmlDeviceGetPcieReplayCounter":
            assert c.pcie_replay is NA
    assert g.name == "NVIDIA H100 80GB HBM3"  # what is supported is still read


def test_a_function_the_driver_lacks_entirely_is_na():
    device = h100_device()
    del device["nvmlDeviceGetBoardPartNumber"]
    assert backend([device]).gpus()[0].board_part is NA


def test_gpu_lost_mid_run():
    device = h100_device(nvmlDeviceGetTemperature={"series": [40, {"error": "GPU_IS_LOST"}]})
    b = backend([device])
    assert b.sample(0).temp_c == 40
    with pytest.raises(GpuLostError):
        b.sample(0)
    with pytest.raises(GpuLostError):  # and it stays lost
        b.counters(0)


def test_a_gpu_lost_before_the_run_stays_an_object_that_says_so():
    b = backend([h100_device(0), h100_device(1, handle_error="GPU_IS_LOST"), h100_device(2, lost=True)])
    gpus = b.gpus()
    assert [g.lost for g in gpus] == [False, True, True]
    assert gpus[1].name == "unavailable" and gpus[1].subject == "gpu1"


def test_xid_events_arrive_with_their_gpu():
    b = backend([h100_device(0), h100_device(1)], xid_events=[{"device": 1, "xid": 79}])
    events = b.wait_xids(0.01, Clock())
    assert [(e.gpu, e.code) for e in events] == [(1, 79)]
    assert b.wait_xids(0.01, Clock()) == []  # then the wait times out quietly


class _FailingWait(ReplayNvml):
    calls = 0

    def nvmlEventSetWait(self, events, timeout_ms):
        _FailingWait.calls += 1
        raise self.error("GPU_IS_LOST")  # at once, as NVML may for a GPU gone


def test_an_xid_wait_that_fails_at_once_still_takes_its_time_so_the_xid_thread_never_spins():
    b = NvmlBackend(_FailingWait(node([h100_device(0)])))
    b.open()
    start = time.monotonic()
    while time.monotonic() - start < 0.5:  # the sampler's XID thread, for half a second
        assert b.wait_xids(0.1, Clock()) == []
    assert _FailingWait.calls <= 5  # without the wait, some hundred thousand calls


def test_a_replayed_xid_wait_blocks_until_its_timeout_as_nvml_does():
    b = backend([h100_device(0)])
    start = time.monotonic()
    assert b.wait_xids(0.2, Clock()) == []
    assert time.monotonic() - start >= 0.2


def test_no_driver_is_a_plain_reason():
    b = NvmlBackend(ReplayNvml({"init_error": "LIBRARY_NOT_FOUND"}))
    with pytest.raises(BackendUnavailable, match=r"^NVML not available: is the NVIDIA driver installed\?"):
        b.open()


def test_real_pynvml_without_a_driver_is_unavailable():
    """This machine has no NVIDIA driver: the real binding must fail the same plain way."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        pass
    else:
        pytest.skip("an NVIDIA driver is present here")
    with pytest.raises(BackendUnavailable, match="NVML not available: is the NVIDIA driver installed"):
        NvmlBackend().open()

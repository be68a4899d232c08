"""The simulated node: built-in scenarios, scenario files, telemetry that follows load, and faults
that happen (the checks find them: see test_fault_detection.py)."""

import threading
import time

import pytest

from nodeqc.backends.base import REASON_BITS
from nodeqc.backends.sim.compute import SimDevice
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.physics import LOST_AFTER_S
from nodeqc.backends.sim.scenario import list_scenarios, load_scenario
from nodeqc.core.errors import GpuLostError, UsageError


def node(name="hgx-h100", faults=(), scale=1000.0):
    return SimNode(load_scenario(name), [parse_fault(f) for f in faults], time_scale=scale)


def test_built_in_scenarios():
    names = set(list_scenarios())
    assert {"dgx-a100", "hgx-h100", "h100", "a100"} <= names
    hgx = load_scenario("hgx-h100")
    assert hgx.gpu_count == 8 and hgx.gpu_model.name == "NVIDIA H100 80GB HBM3"
    dgx = load_scenario("dgx-a100")
    assert dgx.gpu_count == 8 and dgx.bus_id(2) == "0000:47:00.0"


@pytest.mark.parametrize("text, message", [
    ('description = "x"\n[gpus]\nmodel = "h100-sxm5"\ncount = 2\n[host]\ncores = 8\nmemory_gib = 64\nram = 5\n', "[host] ram: unknown key"),
    ('[gpus]\nmodel = "b200"\ncount = 2\n', '[gpus] model: expected one of "a100-sxm4-40gb", "a100-sxm4-80gb"'),
    ('[gpus]\nmodel = "h100-sxm5"\n[host]\ncores = 8\nmemory_gib = 64\n', "[gpus] count: missing"),
    ('[gpus]\nmodel = "h100-sxm5"\ncount = 2\nbus_ids = ["0000:01:00.0"]\n[host]\ncores = 8\nmemory_gib = 64\n', "bus_ids: 1 addresses for 2 GPUs"),
    ('[gpus]\nmodel = "h100-sxm5"\ncount = "two"\n', '[gpus] count: expected an integer, got "two"'),
    ('time_scale = 0\n', "time_scale: expected at least 1, got 0"),
    ('[gpus\n', "invalid TOML"),
])
def test_bad_scenario_files(tmp_path, text, message):
    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(UsageError) as e:
        load_scenario(str(p))
    assert str(e.value).startswith(str(p)) and message in str(e.value)


def test_unknown_scenario_lists_the_known_ones():
    with pytest.raises(UsageError, match=r'no built-in scenario "hgx-b900"; known: a100, dgx-a100, gb200-nvl72-tray, '
                                         r'h100, h200, hgx-b200, hgx-h100'):
        load_scenario("hgx-b900")


def test_a_scenario_file_with_its_own_node(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('description = "two L40S"\n[gpus]\nmodel = "l40s"\ncount = 2\n[host]\ncores = 32\nmemory_gib = 256\n')
    n = SimNode(load_scenario(str(p)), [])
    gpus = n.management().gpus()
    assert [g.name for g in gpus] == ["NVIDIA L40S"] * 2 and len({g.bus_id for g in gpus}) == 2


def test_telemetry_follows_load_and_links_downtrain_at_idle():
    n = node()
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 0)
    idle = mgmt.sample(0)
    assert idle.reasons == REASON_BITS["gpu_idle"] and idle.pcie_gen == 1 and idle.util_pct == 0
    dev.set_load(1.0)
    time.sleep(0.1)  # 100 simulated seconds: well past the thermal time constant
    busy = mgmt.sample(0)
    assert busy.pcie_gen == 5 and busy.pcie_width == 16 and busy.util_pct == 100
    assert busy.temp_c > idle.temp_c + 20 and busy.power_w > 5 * idle.power_w
    # The H100 SXM5's sustained clock under load (nodeqc.core.skus: 1794 MHz), not its maximum, on
    # NVML's 15 MHz steps: 1785 or 1800.
    assert busy.sm_clock_mhz in (1785, 1800)
    dev.busy_step(1.0)  # the plain load computes in half precision: the clock a real H100 SXM5 held at its limit
    assert mgmt.sample(0).sm_clock_mhz in (1320, 1335)  # 1332 (sim_models.H100_SXM5_TWIN: stress.power, 2026-11-26)
    dev.release()
    assert mgmt.sample(0).sm_clock_mhz in (1785, 1800)
    assert mgmt.sample(1).util_pct == 0  # the others stay idle
    dev.set_load(0.0)
    # Trained while NVML's utilisation still counts the last sixth of a second busy, then down.
    time.sleep(0.001)  # a simulated second
    assert mgmt.sample(0).pcie_gen == 1 and mgmt.sample(0).util_pct == 0


def test_a_sample_nvml_still_counts_busy_reads_the_memory_clock_of_the_load(manual_time):
    """Telemetry counts a sample loaded by its utilisation, NVML's mean over the last sixth of a
    second; a part without a twin halves its memory clock at idle (an estimate). Just after the load
    ended the utilisation still read busy beside a halved memory clock: such a sample among an HBM
    step's few loaded ones averages its memory clock low, and the diagnosis says CLOCKS_LOW ("locked
    memory clocks") of slow memory (the likely cause of a 4x-l40s run under CI's load, 2026-11-29,
    that missed its HBM_SLOW). The clock now follows what NVML counts, as the link's generation does."""
    from nodeqc.backends.sim.physics import NVML_UTIL_WINDOW_S
    from nodeqc.work.telemetry import LOADED_UTIL_PCT

    n = SimNode(load_scenario("l40s"), [], time_scale=10.0)
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 0)
    full = n.scenario.gpu_model.mem_mhz
    assert mgmt.sample(0).mem_clock_mhz == full // 2  # idle
    dev.set_load(1.0)
    manual_time.sleep(0.1)  # a simulated second
    assert mgmt.sample(0).mem_clock_mhz == full
    dev.set_load(0.0)
    manual_time.sleep(NVML_UTIL_WINDOW_S / 3 / 10)  # a third of the window on the clock's scale
    tail = mgmt.sample(0)
    assert tail.util_pct >= LOADED_UTIL_PCT and tail.mem_clock_mhz == full
    manual_time.sleep(NVML_UTIL_WINDOW_S / 10)
    past = mgmt.sample(0)
    assert past.util_pct == 0 and past.mem_clock_mhz == full // 2


def test_injected_link_temperature_and_throttle():
    n = node(faults=["gpu2:pcie_width=8", "gpu2:pcie_gen=3", "gpu2:temp=95", "gpu2:throttle=hw_slowdown",
                     "gpu2:throttle=power_brake"])
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 2)
    dev.set_load(1.0)
    time.sleep(0.1)
    s = mgmt.sample(2)
    assert (s.pcie_gen, s.pcie_width) == (3, 8)
    assert s.temp_c > 93
    assert s.reasons & REASON_BITS["hw_slowdown"] and s.reasons & REASON_BITS["power_brake"]
    assert s.sm_clock_mhz < 1980


def test_counter_faults_grow_with_load_and_remap_flags_are_states():
    n = node(faults=["gpu1:ecc_dbe=3", "gpu1:ecc_sbe=40", "gpu1:pcie_replay=90", "gpu1:row_remap_pending"])
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 1)
    before = mgmt.counters(1)
    assert (before.ecc_dbe_volatile, before.ecc_sbe_volatile, before.pcie_replay) == (0, 0, 0)
    assert before.remap_pending is True and before.remap_failure is False
    dev.set_load(1.0)
    for _ in range(10):
        dev.busy_step(1.0)
    after = mgmt.counters(1)
    assert (after.ecc_dbe_volatile, after.ecc_sbe_volatile, after.pcie_replay) == (3, 40, 90)
    assert mgmt.counters(0).ecc_dbe_volatile == 0


def test_gpus_reach_each_other_over_nvlink_on_hgx_and_through_the_host_bridge_on_pcie_cards(tmp_path):
    hgx = node("hgx-h100").management().gpus()
    assert hgx[3].peer_paths == {str(i): "nvlink" for i in range(8) if i != 3}
    p = tmp_path / "cards.toml"
    p.write_text('description = "four L40S"\n[gpus]\nmodel = "l40s"\ncount = 4\n[host]\ncores = 32\nmemory_gib = 256\n')
    cards = SimNode(load_scenario(str(p)), []).management().gpus()
    assert cards[0].peer_paths == {str(i): "host_bridge" for i in range(1, 4)}
    assert node("h100").management().gpus()[0].peer_paths == {}


def test_pre_ampere_answers_retired_pages_not_remapping():
    n = node("v100")
    c = n.management().counters(0)
    assert c.retired_sbe == 0 and c.remap_pending is not True and c.remap_pending is not False


def test_lost_gpu_falls_off_after_some_load_and_reports_xid_79():
    n = node(faults=["gpu3:lost"])
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 3)
    dev.set_load(1.0)
    with pytest.raises(GpuLostError):
        for _ in range(int(LOST_AFTER_S) + 2):
            dev.busy_step(1.0)
    with pytest.raises(GpuLostError):
        mgmt.sample(3)
    events = mgmt.wait_xids(0.01, n.clock)
    assert [(e.gpu, e.code) for e in events] == [(3, 79)]


def test_injected_xid_arrives_under_load():
    n = node(faults=["gpu0:xid=48"])
    mgmt, dev = n.management(), SimDevice(n.compute_spec(), 0)
    assert mgmt.wait_xids(0.01, n.clock) == []
    dev.set_load(1.0)
    dev.busy_step(3.0)
    assert [(e.gpu, e.code) for e in mgmt.wait_xids(0.01, n.clock)] == [(0, 48)]


def test_hang_blocks_once_the_work_has_started():
    from nodeqc.backends.sim.compute import HANG_AFTER_STEPS

    n = node(faults=["gpu0:hang"])
    dev = SimDevice(n.compute_spec(), 0)
    for _ in range(HANG_AFTER_STEPS):
        dev.busy_step(0.1)
    t = threading.Thread(target=dev.busy_step, args=(0.1,), daemon=True)
    t.start()
    t.join(0.5)
    assert t.is_alive()


def test_missing_gpu_is_on_pci_only():
    n = node(faults=["gpu3:missing"])
    gpus = n.management().gpus()
    assert len(gpus) == 7 and "0000:61:00.0" not in {g.bus_id for g in gpus}
    assert "0000:61:00.0" in {p.bus_id for p in n.host().info().nvidia_gpus_on_pci}

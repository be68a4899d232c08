"""Host health over a run: EDAC and AER growth, the kernel log read from /dev/kmsg (for real on this
machine) and the journal, its lines classified from real kernel output, and the simulated node's
faults found by the real checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.backends.kernel_log import Kmsg, KernelRecord, open_kernel_log, parse_journal_json, parse_kmsg
from nodeqc.backends.platform import HostCounters
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.checks import host_health
from nodeqc.core.model import Verdict
from nodeqc.spec.profile import load_profile

from conftest import cli, whole

GENERIC = load_profile("generic")

# Kernel log lines as real kernels printed them, each from a public report:
REAL_LINES = {
    # NVIDIA/NVSentinel#155 (2025-10-25): the Xid line for a GPU that fell off the bus
    "xid79": "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.",
    # same issue: newer drivers print this without an Xid
    "fallen": "NVRM: The NVIDIA GPU 0000:b3:00.0\n               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
              "               NVRM: fallen off the bus and is not responding to commands.",
    # pop-os/pop#751: AER before Linux 6.8
    "aer_multi": "pcieport 0000:00:1d.0: AER: Multiple Corrected error received: 0000:03:00.0",
    # pop-os/pop#3363: AER since Linux 6.8
    "aer_new": "pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0",
    # endlessm/linux#131: an older kernel naming the requester id only
    "aer_id": "pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5",
    # detail lines that repeat an AER event must not count twice
    "aer_detail": "pcieport 0000:00:1d.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=00e8(Receiver ID)",
}

# An uncorrected DRAM error a process consumed and the kernel recovered from, on a firmware-first
# (APEI) Intel server with its EDAC driver unloaded (Tony Luck, LKML "Re: Machine check recovery
# broken in v6.9-rc1", 2024-04-05, <ZhCQPwgMWo9w3LlO@agluck-desk3>): no EDAC or AER counter grows, and
# the only line the old patterns knew was "Machine check events logged", taken for a corrected error.
RECOVERED_UE = [
    "mce: [Hardware Error]: Machine check events logged",
    "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
    "{1}[Hardware Error]: event severity: recoverable",
    "{1}[Hardware Error]:  Error 0, type: recoverable",
    "{1}[Hardware Error]:  fru_text: Card02, ChnA, DIMM0",
    "{1}[Hardware Error]:   section_type: memory error",
    "{1}[Hardware Error]:   error_type: 14, scrub uncorrected error",
    "{1}[Hardware Error]:   DIMM location: NODE 4 CPU1_DIMM_A1",
    "mce: Uncorrected hardware memory error in user-access at 8a398a400",
    "Memory failure: 0x8a398a: recovery action for dirty LRU page: Recovered",
    "Memory failure: 0x8a398a: already hardware poisoned",
]


def _counters(edac=None, aer=None, present=True) -> HostCounters:
    return HostCounters(edac=edac or {}, aer=aer or {}, edac_present=present,
                        edac_labels={k: "DIMM_A1" for k in (edac or {}) if "/" in k})


# ---------------------------------------------------------------------- EDAC


@pytest.mark.parametrize("ce, ue, verdict, code", [
    (0, 0, Verdict.PASS, None),
    (3, 0, Verdict.WARN, "EDAC_CE"),
    (101, 0, Verdict.FAIL, "EDAC_CE"),
    (0, 1, Verdict.FAIL, "EDAC_UE"),
])
def test_edac_growth(ce, ue, verdict, code):
    start = _counters({"mc0": {"ce": 5, "ue": 0}, "mc0/dimm2": {"ce": 5, "ue": 0}})
    end = _counters({"mc0": {"ce": 5 + ce, "ue": ue}, "mc0/dimm2": {"ce": 5 + ce, "ue": ue}})
    [r] = host_health.edac(start, end, GENERIC)
    assert (r.verdict, r.code) == (verdict, code)
    if code:
        assert "mc0/dimm2 (DIMM_A1)" in r.message  # the DIMM is named
    assert r.values["corrected"].value == ce


def test_edac_limits_are_the_nodes_so_errors_spread_over_dimms_add_up():
    # 60 + 60 corrected errors: each DIMM under the fail limit of 100, the node over it
    start = _counters({"mc0": {"ce": 0, "ue": 0}, "mc0/dimm0": {"ce": 0, "ue": 0}, "mc0/dimm1": {"ce": 0, "ue": 0}})
    end = _counters({"mc0": {"ce": 120, "ue": 0}, "mc0/dimm0": {"ce": 60, "ue": 0}, "mc0/dimm1": {"ce": 60, "ue": 0}})
    [r] = host_health.edac(start, end, GENERIC)
    assert (r.verdict, r.code) == (Verdict.FAIL, "EDAC_CE")
    assert r.message.startswith("120 corrected memory error(s) during the run") and "mc0/dimm1 (DIMM_A1): 60" in r.message
    # under the limit in all: the DIMMs' warnings, no node-wide line
    end = _counters({"mc0": {"ce": 20, "ue": 0}, "mc0/dimm0": {"ce": 10, "ue": 0}, "mc0/dimm1": {"ce": 10, "ue": 0}})
    [r] = host_health.edac(start, end, GENERIC)
    assert r.verdict is Verdict.WARN and "memory controllers" not in r.message


def test_edac_counts_before_the_run_do_not_count_and_profile_limits_apply(tmp_path):
    start = _counters({"mc0": {"ce": 900, "ue": 2}})
    assert host_health.edac(start, start, GENERIC)[0].verdict is Verdict.PASS
    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "generic"\n[host]\nmax_edac_ce = { fail = 10, warn = 5 }\n')
    strict = load_profile(str(prof))
    end = _counters({"mc0": {"ce": 904, "ue": 2}})
    assert host_health.edac(start, end, strict)[0].verdict is Verdict.PASS
    end = _counters({"mc0": {"ce": 907, "ue": 2}})
    assert host_health.edac(start, end, strict)[0].verdict is Verdict.WARN
    end = _counters({"mc0": {"ce": 911, "ue": 2}})
    assert host_health.edac(start, end, strict)[0].verdict is Verdict.FAIL


def test_no_edac_is_a_skip_that_says_what_to_load():
    [r] = host_health.edac(_counters(present=False), _counters(present=False), GENERIC)
    assert r.verdict is Verdict.SKIP and r.code == "EDAC_MISSING"


def test_edac_core_without_a_memory_controller_driver_is_a_skip_not_a_pass(tmp_path):
    """The EDAC core (built into most distribution kernels) makes /sys/devices/system/edac/mc by
    itself; with no memory controller's driver loaded it stays empty and nothing is watched."""
    from nodeqc.backends.platform import LinuxPlatform

    (tmp_path / "sys/devices/system/edac/mc/power").mkdir(parents=True)
    counters = LinuxPlatform(tmp_path).counters([])
    assert counters.edac_present is False
    [r] = host_health.edac(counters, counters, GENERIC)
    assert (r.verdict, r.code) == (Verdict.SKIP, "EDAC_MISSING")
    # counters that say present but carry no controller (an older capture) are not a pass either
    [r] = host_health.edac(_counters({}), _counters({}), GENERIC)
    assert (r.verdict, r.code) == (Verdict.SKIP, "EDAC_MISSING")


# ---------------------------------------------------------------------- AER


def test_aer_growth_names_the_device_and_the_bridge_above_it():
    names = {"0000:1b:00.0": "gpu0", "0000:17:01.0": "bridge 0000:17:01.0 above gpu0", "0000:18:00.0": "ibp24s0"}
    zero = {"correctable": 0, "nonfatal": 0, "fatal": 0}
    start = _counters(aer={b: dict(zero) for b in names})
    end = _counters(aer={"0000:1b:00.0": dict(zero, correctable=2), "0000:17:01.0": dict(zero, nonfatal=1),
                         "0000:18:00.0": dict(zero)})
    by = {r.subject: r for r in host_health.aer(start, end, names, GENERIC)}
    assert by["gpu0"].verdict is Verdict.FAIL and by["gpu0"].code == "AER_UNCORRECTABLE"
    assert "bridge 0000:17:01.0 above gpu0: 1 uncorrectable (non-fatal)" in by["gpu0"].message
    assert "gpu0: 2 correctable" in by["gpu0"].message
    assert by["ibp24s0"].verdict is Verdict.PASS
    assert host_health.aer(_counters(), _counters(), {}, GENERIC)[0].code == "AER_MISSING"


# ---------------------------------------------------------------------- the kernel log


def test_kmsg_records_parse():
    rec = parse_kmsg(b"4,1234,5678901,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.\n"
                     b" SUBSYSTEM=pci\n DEVICE=+pci:0000:1b:00.0\n")
    assert rec == KernelRecord(4, 1234, 5678901, "NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.")
    assert parse_kmsg(b"12,7,0,c;continued") .level == 4  # facility 1, level 4
    assert parse_kmsg(b"garbage") is None and parse_kmsg(b"x,y,z;text") is None


def test_journal_json_parses_and_dedups():
    lines = "\n".join(json.dumps(e) for e in (
        {"__CURSOR": "a", "PRIORITY": "4", "MESSAGE": REAL_LINES["aer_multi"], "__MONOTONIC_TIMESTAMP": "1"},
        {"__CURSOR": "b", "PRIORITY": "3", "MESSAGE": list(b"nvme nvme0: controller is down; will reset")},
        {"__CURSOR": "a", "PRIORITY": "4", "MESSAGE": "repeat"})) + "\nnot json\n"
    seen: set[str] = set()
    recs = parse_journal_json(lines, seen)
    assert [r.text for r in recs] == [REAL_LINES["aer_multi"], "nvme nvme0: controller is down; will reset"]
    assert parse_journal_json(lines, seen) == []  # read again: nothing new


@pytest.mark.parametrize("key, kind, verdict, device", [
    ("xid79", "xid", Verdict.FAIL, "0000:44:00.0"),
    ("fallen", "xid", Verdict.FAIL, "0000:b3:00.0"),
    ("aer_multi", "aer", Verdict.WARN, "0000:03:00.0"),
    ("aer_new", "aer", Verdict.WARN, "0000:00:00.0"),
    ("aer_id", "aer", Verdict.WARN, None),
])
def test_real_kernel_lines_are_classified(key, kind, verdict, device):
    f = host_health.classify(REAL_LINES[key])
    assert (f.kind, f.verdict, f.device) == (kind, verdict, device)


@pytest.mark.parametrize("line, kind, verdict", [
    ("pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0", "aer", Verdict.FAIL),
    ("pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error received: 0000:01:00.0", "aer", Verdict.FAIL),
    ("mce: [Hardware Error]: Machine check events logged", "mce", Verdict.WARN),
    ("mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 4: b200000000070f0f", "mce", Verdict.FAIL),
    ("nvme nvme0: I/O 839 (Read) QID 5 timeout, reset controller", "nvme", Verdict.FAIL),
    ("nvme nvme1: I/O 12 QID 3 timeout, aborting", "nvme", Verdict.WARN),
    ("NVRM: Xid (PCI:0000:1b:00): 13, pid=7, Graphics Exception", "xid", Verdict.WARN),
])
def test_kernel_lines_graded(line, kind, verdict):
    f = host_health.classify(line)
    assert (f.kind, f.verdict) == (kind, verdict)


@pytest.mark.parametrize("line", [REAL_LINES["aer_detail"], "EXT4-fs (nvme0n1p2): mounted filesystem",
                                  "nvme nvme0: 32/0/0 default/read/poll queues", "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE"])
def test_ordinary_lines_are_not_findings(line):
    assert host_health.classify(line) is None


def test_an_uncorrected_memory_error_the_kernel_recovered_from_fails():
    recs = [KernelRecord(3, i, i, t) for i, t in enumerate(RECOVERED_UE)]
    [r] = host_health.kernel_log(recs, "/dev/kmsg", None, {}, GENERIC)
    assert (r.subject, r.verdict, r.code) == ("node", Verdict.FAIL, "KERNEL_MCE")
    assert "uncorrected memory error" in r.message and "hardware error reported by the firmware (recoverable)" in r.message


@pytest.mark.parametrize("line, found", [
    # the bank's status word: UC (bit 61) set though no exception was raised (a recoverable error)
    ("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: be00000000800400",
     ("mce", Verdict.FAIL, "KERNEL_MCE", "machine check (uncorrected)")),
    ("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: 9c00004000010090",
     ("mce", Verdict.WARN, "KERNEL_MCE", "machine check (corrected)")),
    ("mce: Uncorrected hardware memory error in user-access at 8a398a400",
     ("mce", Verdict.FAIL, "KERNEL_MCE", "machine check (uncorrected memory error)")),
    ("Memory failure: 0x8a398a: recovery action for dirty LRU page: Recovered",
     ("mce", Verdict.FAIL, "KERNEL_MCE", "machine check (uncorrected memory error)")),
    ("{1}[Hardware Error]: event severity: fatal",
     ("ghes", Verdict.FAIL, "KERNEL_HW_ERROR", "hardware error reported by the firmware (fatal)")),
    ("{2}[Hardware Error]: event severity: corrected",
     ("ghes", Verdict.WARN, "KERNEL_HW_ERROR", "hardware error reported by the firmware (corrected)")),
])
def test_machine_checks_and_firmware_first_errors_graded(line, found):
    f = host_health.classify(line)
    assert (f.kind, f.verdict, f.code, f.text) == found


@pytest.mark.parametrize("line, device", [
    # drivers/pci/pcie/dpc.c since Linux 5.0 (pci_info on the port, "DPC: " prefix)
    ("pcieport 0000:00:03.1: DPC: containment event, status:0x1f01 source:0x0000", "0000:00:03.1"),
    # before 5.0, on the port's service device
    ("pcieport 0000:00:03.1:pcie010: DPC containment event, status:0x1f01 source:0x0000", "0000:00:03.1"),
    # newer kernels name the device that sent the error
    ("pcieport 0000:16:01.0: DPC: containment event, status:0x1f05, ERR_FATAL received from 0000:17:00.0", "0000:17:00.0"),
])
def test_downstream_port_containment_is_an_uncorrectable_pcie_error(line, device):
    _check_dpc(line, device)


@pytest.mark.parametrize("line, found", [
    # an HGX node's dmesg quoted in gpud's SXid document (leptonai/gpud, "NVIDIA GPU SXid errors"): the
    # NVSwitch links of a GPU that fell off the bus went down
    ("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
     ("sxid", Verdict.FAIL, "KERNEL_SXID", "nvswitch1", "fatal NVSwitch error SXid 20034 (link training (LTSSM) fault)")),
    # NVIDIA's always-fatal SXids (Fabric Manager user guide, appendix D) need the whole fabric reset,
    # whatever the line says; a code the tables do not hold takes the line's word.
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 23001, Fatal, ingress SRC-VC buffer overflow",
     ("sxid", Verdict.FAIL, "KERNEL_SXID", "nvswitch2", "always-fatal NVSwitch error (the whole NVLink fabric must be "
      "reset: reboot the host) SXid 23001 (ingress or egress buffer, credit or packet error in the switch fabric)")),
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 22003, Non-fatal, Minion halt",
     ("sxid", Verdict.FAIL, "KERNEL_SXID", "nvswitch2", "always-fatal NVSwitch error (the whole NVLink fabric must be "
      "reset: reboot the host) SXid 22003 (link controller (Minion) halt)")),
    ("nvidia-nvswitch5: SXid (PCI:0000:0b:00.0): 99999, Fatal, something new",
     ("sxid", Verdict.FAIL, "KERNEL_SXID", "nvswitch5", "fatal NVSwitch error SXid 99999 (not in NVIDIA's SXid tables "
      "as nodeqc read them)")),
    # digits without end are no Xid; 45 points at another Xid (judged itself): not of note
    ("NVRM: Xid (PCI:0000:1b:00): " + "9" * 5000, None),
    ("NVRM: Xid (PCI:0000:1b:00): 45, pid=7, Ch 00000010", None),
    # a real HGX dmesg line (a public dataset of labelled kernel lines): non-fatal, not judged
    ("nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error (First)", None),
    # non-fatal ones and the detail lines are not judged (see _SXID)
    ("nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Non-fatal, Link 60 Minion Link DLREQ interrupt", None),
    ("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Severity 1 Engine instance 63 Sub-engine instance 00", None),
])
def test_fatal_nvswitch_errors_fail(line, found):
    f = host_health.classify(line)
    assert (f if f is None else (f.kind, f.verdict, f.code, f.device, f.text)) == found


def _check_dpc(line, device):
    f = host_health.classify(line)
    assert (f.kind, f.verdict, f.code, f.device) == ("aer", Verdict.FAIL, "KERNEL_AER", device)
    by = {r.subject: r for r in host_health.kernel_log([KernelRecord(4, 1, 1, line)], "/dev/kmsg", None,
                                                       {"0000:17:00.0": "gpu3", "0000:16:01.0": "bridge 0000:16:01.0 above gpu3"},
                                                       GENERIC)}
    if device == "0000:17:00.0":
        assert by["gpu3"].verdict is Verdict.FAIL


@pytest.mark.parametrize("line", [
    # nvme core at every probe or reset of a healthy drive (seen at boot and at a hot-add)
    "nvme nvme10: Shutdown timeout set to 10 seconds",
    # mce-inject loading: reports no error
    "Machine check injector initialized",
    # a GHES record's other lines repeat the event its severity line already counted
    "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
    "{1}[Hardware Error]: event severity: info",
    # the DPC service's probe at boot or hot-add
    "pcieport 0000:00:03.1: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+ RP PIO Log 4",
])
def test_benign_hardware_lines_are_not_findings(line):
    assert host_health.classify(line) is None


def test_the_fallen_off_the_bus_line_that_follows_an_xid_counts_alone():
    # congphase/my-t450s troubleshoot_log.md (an nvidia-bug-report): printed after the Xid 79 line
    f = host_health.classify("NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.")
    assert (f.kind, f.verdict, f.device) == ("xid", Verdict.FAIL, "0000:01:00.0")
    # the GPU's identity line at every driver load is not a finding
    assert host_health.classify("NVRM: GPU at PCI:0000:01:00: GPU-1f2e3d4c-0000-1111-2222-333344445555") is None


def test_a_wrapped_ring_buffer_is_never_a_pass():
    [r] = host_health.kernel_log([KernelRecord(6, 9, 9, "hello")], "/dev/kmsg", None, {}, GENERIC, lost=3)
    assert (r.verdict, r.code) == (Verdict.WARN, "KERNEL_LOG_LOST")
    assert r.message.startswith("at least 3 kernel log record(s) of the run were overwritten")
    # with findings of its own, the node's result keeps them first and says what was lost
    recs = [KernelRecord(2, 1, 1, RECOVERED_UE[-3])]
    [r] = host_health.kernel_log(recs, "/dev/kmsg", None, {}, GENERIC, lost=2)
    assert (r.verdict, r.code) == (Verdict.FAIL, "KERNEL_MCE") and "at least 2 kernel log record(s)" in r.message
    # a GPU's finding stays the GPU's; the loss is the node's
    by = {r.subject: r for r in host_health.kernel_log([KernelRecord(2, 1, 1, REAL_LINES["xid79"])], "/dev/kmsg", None,
                                                       {"0000:44:00.0": "gpu2"}, GENERIC, lost=1)}
    assert (by["gpu2"].code, by["node"].verdict, by["node"].code) == ("KERNEL_XID", Verdict.WARN, "KERNEL_LOG_LOST")


def test_kmsg_counts_records_the_ring_buffer_overwrote(tmp_path, monkeypatch):
    import errno as _errno

    from nodeqc.backends import kernel_log as kl
    path = tmp_path / "kmsg"
    path.write_text("")
    log = Kmsg(str(path))
    reads = iter([b"6,100,1,-;one\n", BlockingIOError(), OSError(_errno.EPIPE, "Broken pipe"),
                  b"6,150,2,-;two\n", b"6,151,3,-;three\n", BlockingIOError()])

    def fake_read(fd, n):
        item = next(reads)
        if isinstance(item, BaseException):
            raise item
        return item
    monkeypatch.setattr(kl.os, "read", fake_read)
    try:
        assert [r.text for r in log.new_records()] == ["one"] and log.lost == 0
        assert [r.text for r in log.new_records()] == ["two", "three"] and log.lost == 49  # 101..149
    finally:
        log.close()
    # overwritten before the first read: at least one, how many is unknown
    log = Kmsg(str(path))
    reads = iter([OSError(_errno.EPIPE, "Broken pipe"), b"6,7,1,-;x\n", BlockingIOError()])
    try:
        assert [r.text for r in log.new_records()] == ["x"] and log.lost == 1
    finally:
        log.close()


def test_kernel_log_results_name_devices_and_modes(tmp_path):
    names = {"0000:44:00.0": "gpu2", "0000:03:00.0": "ibp24s0"}
    recs = [KernelRecord(4, i, i, REAL_LINES[k]) for i, k in enumerate(("xid79", "aer_multi", "aer_detail"))]
    by = {r.subject: r for r in host_health.kernel_log(recs, "/dev/kmsg", None, names, GENERIC)}
    assert by["gpu2"].verdict is Verdict.FAIL and by["gpu2"].code == "KERNEL_XID"
    assert "Xid 79 (GPU has fallen off the bus, action: reboot) on gpu2" in by["gpu2"].message
    assert by["ibp24s0"].verdict is Verdict.WARN and by["ibp24s0"].evidence["lines"] == [REAL_LINES["aer_multi"]]
    [clean] = host_health.kernel_log([KernelRecord(6, 1, 1, "hello")], "/dev/kmsg", None, names, GENERIC)
    assert clean.verdict is Verdict.PASS and clean.values["lines"].value == 1
    [skip] = host_health.kernel_log([], "none", "/dev/kmsg: Permission denied", names, GENERIC)
    assert skip.verdict is Verdict.SKIP and skip.code == "KERNEL_LOG_UNREADABLE"
    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "generic"\n[host]\nkernel_log = "warn"\n')
    soft = {r.subject: r for r in host_health.kernel_log(recs, "k", None, names, load_profile(str(prof)))}
    assert soft["gpu2"].verdict is Verdict.WARN
    prof.write_text('description = "x"\nextends = "generic"\n[host]\nkernel_log = "off"\n')
    assert host_health.kernel_log(recs, "k", None, names, load_profile(str(prof))) == []


def test_this_machine_kernel_log():
    """/dev/kmsg for real where it can be read: only what is printed after opening is returned."""
    log = open_kernel_log()
    try:
        if isinstance(log, Kmsg):
            assert log.new_records() == [] or all(isinstance(r.seq, int) for r in log.new_records())
            if os.access("/dev/kmsg", os.W_OK):
                with open("/dev/kmsg", "w") as k:
                    k.write("<6>nodeqc test: hello from test_host_health\n")
                assert any("nodeqc test: hello" in r.text for r in log.new_records())
        else:
            assert log.source in ("journalctl -k", "none")
    finally:
        log.close()


def test_unreadable_kmsg_says_why(tmp_path):
    log = open_kernel_log(str(tmp_path / "no-kmsg"))
    assert log.source in ("journalctl -k", "none")
    if log.source == "none":
        assert "no-kmsg" in log.reason and "root" in log.reason


# ---------------------------------------------------------------------- the simulated node


def test_simulated_counters_grow_only_after_load():
    hw = simulated_hardware("hgx-h100", [parse_fault("gpu1:aer=3"), parse_fault("host:edac_ce=4")])
    p = hw.platform
    buses = ["0000:43:00.0"]
    before = p.counters(buses)
    assert before.aer["0000:43:00.0"]["correctable"] == 0 and before.edac["mc0"]["ce"] == 0
    from nodeqc.backends.sim.node import SLOT_LOADED_S, SLOTS

    hw_node_shared = p.node.shared
    hw_node_shared[1 * SLOTS + SLOT_LOADED_S] = 5.0
    after = p.counters(buses)
    assert after.aer["0000:43:00.0"]["correctable"] == 3 and after.aer["0000:3f:01.0"]["correctable"] == 3
    assert after.edac["mc0/dimm2"]["ce"] == 4
    assert [r.verdict for r in host_health.edac(before, after, GENERIC)] == [Verdict.WARN]


@pytest.mark.slow
def test_run_finds_host_faults(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--sample-hz", "8",
            "--inject", "host:edac_ue=1", "--inject", "host:nvme_reset", "--inject", "gpu0:aer=2",
            "--only", "host,stress.burn", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "host.edac" in p.stderr and "[EDAC_UE]" in p.stderr
    assert "[KERNEL_NVME_RESET]" in p.stderr and "NVMe controller reset" in p.stderr
    assert "[AER_CORRECTABLE]" in p.stderr
    assert Path(p.stdout.strip().splitlines()[-1]).is_file()


# ---------------------------------------------------------------------- whole results, field by field (issue 18)

EDAC_LIMITS = [("max_edac_ce", "max", 100, 0, ""), ("max_edac_ue", "max", 0, 0, "")]
AER_LIMITS = [("max_aer_correctable", "max", 100, 0, ""), ("max_aer_uncorrectable", "max", 0, 0, "")]


def test_whole_results_edac():
    start = _counters({"mc0": {"ce": 5, "ue": 0}, "mc0/dimm2": {"ce": 5, "ue": 0}, "mc1": {"ce": 0, "ue": 0}})
    end = _counters({"mc0": {"ce": 8, "ue": 1}, "mc0/dimm2": {"ce": 8, "ue": 1}, "mc1": {"ce": 2, "ue": 0}})
    assert [whole(r) for r in host_health.edac(start, end, GENERIC)] == [(
        "host.edac", "node", "fail", "EDAC_UE",
        "mc0/dimm2 (DIMM_A1): 1 uncorrected memory error(s) during the run (now 1); mc0/dimm2 (DIMM_A1): 3 corrected "
        "memory error(s) during the run (now 8)", {"corrected": (5, ""), "uncorrected": (1, "")}, "corrected", EDAC_LIMITS, {})]
    assert [whole(r) for r in host_health.edac(start, start, GENERIC)] == [(
        "host.edac", "node", "pass", None, "no memory errors during the run (2 memory controllers)",
        {"corrected": (0, ""), "uncorrected": (0, "")}, "corrected", EDAC_LIMITS, {})]
    # A controller whose DIMMs are not listed: its total is judged and said.
    end = _counters({"mc0": {"ce": 5, "ue": 0}, "mc0/dimm2": {"ce": 5, "ue": 0}, "mc1": {"ce": 150, "ue": 0}})
    assert [whole(r) for r in host_health.edac(start, end, GENERIC)] == [(
        "host.edac", "node", "fail", "EDAC_CE", "150 corrected memory error(s) during the run (memory controllers)",
        {"corrected": (150, ""), "uncorrected": (0, "")}, "corrected", EDAC_LIMITS, {})]
    end = _counters({"mc0": {"ce": 5, "ue": 0}, "mc0/dimm2": {"ce": 5, "ue": 0}, "mc1": {"ce": 0, "ue": 2}})
    r = host_health.edac(start, end, GENERIC)[0]
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "EDAC_UE",
                                              "2 uncorrected memory error(s) during the run (memory controllers)")


def test_edac_a_dimm_without_a_label_and_one_new_since_the_start():
    start = HostCounters(edac={"mc0": {"ce": 0, "ue": 0}}, edac_present=True)
    end = HostCounters(edac={"mc0": {"ce": 4, "ue": 0}, "mc0/dimm7": {"ce": 4, "ue": 0}}, edac_present=True)
    # A DIMM first seen at the end has no start reading: its count is taken as what it was (no growth);
    # the controller's growth still counts.
    r = host_health.edac(start, end, GENERIC)[0]
    assert (r.verdict, r.message) == (Verdict.WARN, "4 corrected memory error(s) during the run (memory controllers)")
    start = HostCounters(edac={"mc0": {"ce": 0, "ue": 0}, "mc0/dimm7": {"ce": 0, "ue": 0}}, edac_present=True)
    r = host_health.edac(start, end, GENERIC)[0]
    assert r.message == "mc0/dimm7: 4 corrected memory error(s) during the run (now 4)"
    # Counters that went down (a driver reload) are no growth.
    assert host_health.edac(end, start, GENERIC)[0].verdict is Verdict.PASS


def test_whole_result_edac_missing():
    assert [whole(r) for r in host_health.edac(_counters(present=False), _counters(present=False), GENERIC)] == [(
        "host.edac", "node", "skip", "EDAC_MISSING",
        "no EDAC memory controllers in sysfs (/sys/devices/system/edac/mc): memory errors were not watched", {}, None, [], {})]


def test_whole_results_aer():
    names = {"0000:1b:00.0": "gpu0", "0000:17:01.0": "bridge 0000:17:01.0 above gpu0, gpu1", "0000:18:00.0": "ibp24s0"}
    zero = {"correctable": 0, "nonfatal": 0, "fatal": 0}
    start = _counters(aer={**{b: dict(zero) for b in names}, "0000:99:00.0": dict(zero)})
    end = _counters(aer={"0000:1b:00.0": dict(zero, correctable=2, fatal=1),
                         "0000:17:01.0": dict(zero, nonfatal=1, correctable=150), "0000:18:00.0": dict(zero),
                         "0000:99:00.0": dict(zero, correctable=1)})
    assert [whole(r) for r in host_health.aer(start, end, names, GENERIC)] == [
        ("host.aer", "gpu0", "fail", "AER_UNCORRECTABLE",
         "gpu0: 1 uncorrectable (fatal) PCIe error(s) during the run; gpu0: 2 correctable PCIe error(s) during the run; "
         "bridge 0000:17:01.0 above gpu0, gpu1: 1 uncorrectable (non-fatal) PCIe error(s) during the run; bridge "
         "0000:17:01.0 above gpu0, gpu1: 150 correctable PCIe error(s) during the run",
         {"correctable": (152, ""), "uncorrectable": (2, "")}, "correctable", AER_LIMITS, {}),
        ("host.aer", "ibp24s0", "pass", None, "no PCIe errors during the run (AER)",
         {"correctable": (0, ""), "uncorrectable": (0, "")}, "correctable", AER_LIMITS, {}),
        ("host.aer", "node", "warn", "AER_CORRECTABLE", "PCI 0000:99:00.0: 1 correctable PCIe error(s) during the run",
         {"correctable": (1, ""), "uncorrectable": (0, "")}, "correctable", AER_LIMITS, {})]
    assert [whole(r) for r in host_health.aer(_counters(), _counters(), {}, GENERIC)] == [(
        "host.aer", "node", "skip", "AER_MISSING", "no PCIe AER counters in sysfs (aer_dev_correctable): the kernel lacks "
        "AER statistics or the platform handles AER in firmware", {}, None, [], {})]


def test_aer_corrected_errors_at_the_fail_limit_and_a_device_new_at_the_end():
    zero = {"correctable": 0, "nonfatal": 0, "fatal": 0}
    names = {"0000:1b:00.0": "gpu0"}
    for n, verdict in ((100, Verdict.WARN), (101, Verdict.FAIL)):
        [r] = host_health.aer(_counters(aer={"0000:1b:00.0": dict(zero)}),
                              _counters(aer={"0000:1b:00.0": dict(zero, correctable=n)}), names, GENERIC)
        assert (r.verdict, r.code) == (verdict, "AER_CORRECTABLE")
    # No start reading: no growth to judge; a bridge that names no device below it is the node's.
    [r] = host_health.aer(_counters(), _counters(aer={"0000:1b:00.0": dict(zero, fatal=3)}), names, GENERIC)
    assert (r.subject, r.verdict) == ("gpu0", Verdict.PASS)
    assert host_health._subject("0000:17:01.0", {"0000:17:01.0": "bridge 0000:17:01.0"}) == ("node", "bridge 0000:17:01.0")


def test_aer_counters_a_device_lacks_or_the_start_did_not_read():
    names = {"0000:1b:00.0": "gpu0", "0000:2b:00.0": "gpu1", "0000:3b:00.0": "gpu2"}
    start = _counters(aer={"0000:1b:00.0": {"correctable": 5}, "0000:2b:00.0": {"nonfatal": 0, "fatal": 0},
                           "0000:3b:00.0": {"correctable": 0, "fatal": 0}})
    end = _counters(aer={"0000:1b:00.0": {"correctable": 7, "fatal": 4},  # fatal not read at the start: no growth
                         "0000:2b:00.0": {"nonfatal": 0, "fatal": 1},  # no correctable counter at all
                         "0000:3b:00.0": {"correctable": 3}})  # no uncorrectable counters at all
    by = {r.subject: r for r in host_health.aer(start, end, names, GENERIC)}
    assert {s: (r.verdict, r.code, r.values["correctable"].value, r.values["uncorrectable"].value) for s, r in by.items()} == {
        "gpu0": (Verdict.WARN, "AER_CORRECTABLE", 2, 0), "gpu1": (Verdict.FAIL, "AER_UNCORRECTABLE", 0, 1),
        "gpu2": (Verdict.WARN, "AER_CORRECTABLE", 3, 0)}
    assert by["gpu1"].message == "gpu1: 1 uncorrectable (fatal) PCIe error(s) during the run"


@pytest.mark.parametrize("xid, advised", [(79, "XID_REBOOT"), (54, "XID_CHECK_POWER"), (48, "XID_RESET_GPU"),
                                           (92, "XID_WARNING"), (4000000000, "XID_UNKNOWN")])
def test_a_kernel_log_xid_is_advised_as_health_xid_advises_it(xid, advised):
    """The 2026-11-28 advice review: every Xid in the kernel log got "reset the GPU", where the
    catalogue says reboot (79: a reset cannot reach a GPU off the bus) or connect its power (54)."""
    from nodeqc.core.codes import advice, remediation

    recs = [KernelRecord(4, 1, 1, f"NVRM: Xid (PCI:0000:44:00): {xid}, pid=7, x")]
    [r] = host_health.kernel_log(recs, "/dev/kmsg", None, {"0000:44:00.0": "gpu2"}, GENERIC)
    assert r.code == "KERNEL_XID"
    assert advice(r.code, r.subject, r.evidence, r.verdict.value) == advice(advised, "gpu2", None, r.verdict.value)
    assert advice("KERNEL_XID", "gpu2") == advice("KERNEL_XID", "gpu2", {"xid_action": "no such action"})
    assert remediation("KERNEL_XID") not in (remediation(advised),)


def test_kernel_log_whole_results():
    recs = [KernelRecord(4, i, i, REAL_LINES[k]) for i, k in enumerate(("xid79", "aer_multi", "aer_detail", "aer_new", "aer_id"))]
    recs += [KernelRecord(4, 9, 9, "NVRM: Xid (PCI:0000:44:00): 13, pid=7, Graphics Exception"),
             KernelRecord(4, 10, 10, "nvme nvme1: I/O 12 QID 3 timeout, aborting")]
    names = {"0000:44:00.0": "gpu2", "0000:03:00.0": "ibp24s0"}
    assert [whole(r) for r in host_health.kernel_log(recs, "/dev/kmsg", None, names, GENERIC)] == [
        ("host.kernel_log", "gpu2", "fail", "KERNEL_XID",
         "Xid 79 (GPU has fallen off the bus, action: reboot) on gpu2 (+1 more line(s)): NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.",
         {"lines": (2, "")}, "lines", [],
         {"lines": [REAL_LINES["xid79"], "NVRM: Xid (PCI:0000:44:00): 13, pid=7, Graphics Exception"], "source": "/dev/kmsg",
          "xid_action": "reboot"}),
        ("host.kernel_log", "ibp24s0", "warn", "KERNEL_AER", f"AER corrected error on ibp24s0: {REAL_LINES['aer_multi']}",
         {"lines": (1, "")}, "lines", [], {"lines": [REAL_LINES["aer_multi"]], "source": "/dev/kmsg"}),
        ("host.kernel_log", "node", "warn", "KERNEL_AER",
         f"AER corrected error on 0000:00:00.0 (+1 more line(s)): {REAL_LINES['aer_new']}; NVMe I/O timeout on nvme1: "
         "nvme nvme1: I/O 12 QID 3 timeout, aborting", {"lines": (3, "")}, "lines", [],
         {"lines": [REAL_LINES["aer_new"], REAL_LINES["aer_id"], "nvme nvme1: I/O 12 QID 3 timeout, aborting"],
          "source": "/dev/kmsg"})]
    assert [whole(r) for r in host_health.kernel_log([KernelRecord(6, 1, 1, "hello"), KernelRecord(6, 2, 2, "x")], "/dev/kmsg",
                                                     None, {}, GENERIC)] == [
        ("host.kernel_log", "node", "pass", None, "nothing of note in 2 kernel log line(s) during the run (/dev/kmsg)",
         {"lines": (2, "")}, "lines", [], {})]
    assert [whole(r) for r in host_health.kernel_log([], "none", "/dev/kmsg: Permission denied", {}, GENERIC)] == [
        ("host.kernel_log", "node", "skip", "KERNEL_LOG_UNREADABLE", "the kernel log could not be read: /dev/kmsg: Permission denied",
         {}, None, [], {})]


def test_kernel_log_keeps_the_first_lines_as_evidence_and_machine_checks_are_the_nodes():
    recs = [KernelRecord(4, i, i, f"nvme nvme0: I/O {i} QID 5 timeout, aborting") for i in range(25)]
    recs.append(KernelRecord(2, 99, 99, "mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 4: b200000000070f0f"))
    [r] = host_health.kernel_log(recs, "k", None, {}, GENERIC)
    assert (r.subject, r.verdict, r.code) == ("node", Verdict.FAIL, "KERNEL_MCE")
    assert r.message.startswith("machine check (uncorrected): mce: [Hardware Error]: CPU 0: Machine Check Exception")
    assert "NVMe I/O timeout on nvme0 (+24 more line(s)): nvme nvme0: I/O 0 QID 5 timeout, aborting" in r.message
    assert r.evidence["lines"] == [x.text for x in recs[:20]] and r.values["lines"].value == 26


@pytest.mark.parametrize("line, found", [
    # A number past any XID is judged as a code the catalogue does not hold.
    ("NVRM: Xid (PCI:0000:1b:00): 4000000000, pid=7, ?", ("xid", Verdict.WARN, "KERNEL_XID", "0000:1b:00.0",
                                                         "Xid 4000000000 (not in NVIDIA's XID catalogue as nodeqc read it)")),
    ("NVRM: Xid (PCI:0000:1B:00): 48, pid=7, DBE", ("xid", Verdict.FAIL, "KERNEL_XID", "0000:1b:00.0", "Xid 48 (double-bit ECC error, action: reset gpu)")),
    ("NVRM: Xid (PCI:0000:1b:00.0): 31, pid=7, MMU fault", ("xid", Verdict.WARN, "KERNEL_XID", "0000:1b:00.0",
                                                            "Xid 31 (GPU memory page fault, action: restart app)")),
    ("NVRM: The NVIDIA GPU 0000:B3:00.0 (PCI ID: 10de:26b5) has fallen off the bus", (
        "xid", Verdict.FAIL, "KERNEL_XID", "0000:b3:00.0", "Xid 79 (GPU has fallen off the bus, action: reboot)")),
    ("pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
     ("aer", Verdict.FAIL, "KERNEL_AER", "0000:01:00.0", "AER uncorrected error")),
    ("pcieport 0000:00:03.1: AER: Multiple Uncorrectable error message received from 0000:AB:00.1",
     ("aer", Verdict.FAIL, "KERNEL_AER", "0000:ab:00.1", "AER uncorrected error")),
    ("mce: [Hardware Error]: Machine check events logged", ("mce", Verdict.WARN, "KERNEL_MCE", None, "machine check (corrected)")),
    ("mce: [Hardware Error]: Machine check: uncorrected error", ("mce", Verdict.FAIL, "KERNEL_MCE", None,
                                                                 "machine check (uncorrected)")),
    ("Machine check: Processor context corrupt, UC", ("mce", Verdict.FAIL, "KERNEL_MCE", None, "machine check (uncorrected)")),
    ("mce: [Hardware Error]: Machine check: Fatal error", ("mce", Verdict.FAIL, "KERNEL_MCE", None, "machine check (uncorrected)")),
    ("nvme nvme2: controller is down; will reset: CSTS=0xffffffff", (
        "nvme", Verdict.FAIL, "KERNEL_NVME_RESET", "nvme2", "NVMe controller reset")),
    ("nvme nvme0: Removing after probe failure status: -19", (
        "nvme", Verdict.FAIL, "KERNEL_NVME_RESET", "nvme0", "NVMe controller reset")),
    ("nvme nvme0: I/O 5 QID 1 timeout, aborting", ("nvme", Verdict.WARN, "KERNEL_NVME_RESET", "nvme0", "NVMe I/O timeout")),
])
def test_kernel_lines_classified_whole(line, found):
    f = host_health.classify(line)
    assert (f.kind, f.verdict, f.code, f.device, f.text) == found


def test_device_names():
    from types import SimpleNamespace as NS
    gpus = [NS(bus_id="0000:1b:00.0", subject="gpu0", lost=False), NS(bus_id="0000:2b:00.0", subject="gpu1", lost=True)]
    nics = [NS(bus_id="0000:18:00.0", name="ibp24s0"), NS(bus_id=None, name="virtual0")]
    bridges = {"0000:17:01.0": ["gpu0", "ibp24s0"], "0000:18:00.0": ["x"]}
    assert host_health.device_names(gpus, nics, bridges) == {
        "0000:1b:00.0": "gpu0", "0000:18:00.0": "ibp24s0", "0000:17:01.0": "bridge 0000:17:01.0 above gpu0, ibp24s0"}


def test_the_kernel_log_is_read_between_steps_so_a_small_ring_buffer_loses_nothing():
    """A ring buffer of 3 records and a run that logs 5, an Xid first: read only at the end, the Xid
    is lost; read after each step (as the runner does), every line is judged."""
    from nodeqc.run.platform_watch import PlatformWatch

    class RingLog:
        source = "/dev/kmsg"
        lost = 0

        def __init__(self):
            self.ring: list[KernelRecord] = []
            self.next = 0  # the next seq to hand out
            self.printed = 0

        def print(self, text):
            self.ring = (self.ring + [KernelRecord(4, self.printed, self.printed, text)])[-3:]
            self.printed += 1

        def new_records(self):
            if self.ring and self.ring[0].seq > self.next:
                self.lost += self.ring[0].seq - self.next
            out = [r for r in self.ring if r.seq >= self.next]
            self.next = self.printed
            return out

    class Platform:
        def counters(self, bus_ids):
            return HostCounters()

    lines = [REAL_LINES["xid79"]] + [f"usb 1-1: new device {i}" for i in range(4)]
    for drain_between_steps in (False, True):
        watch = PlatformWatch(Platform())
        watch._start, watch._log, watch._names = HostCounters(), RingLog(), {"0000:44:00.0": "gpu2"}
        for step in (lines[:2], lines[2:4], lines[4:]):
            for text in step:
                watch._log.print(text)
            if drain_between_steps:
                watch.drain_kernel_log()
        [kernel] = [r for r in watch.health_results(GENERIC) if r.name == "host.kernel_log"]
        if drain_between_steps:
            assert (kernel.subject, kernel.verdict, kernel.code) == ("gpu2", Verdict.FAIL, "KERNEL_XID")
        else:  # what the old reading at the end could do at best: say it lost lines, never pass
            assert (kernel.subject, kernel.verdict, kernel.code) == ("node", Verdict.WARN, "KERNEL_LOG_LOST")


def test_a_kernel_log_that_cannot_be_read_to_the_end_keeps_what_was_read_and_never_passes():
    """journalctl hung (or /dev/kmsg failed) after the first step: the Xid read before still fails
    its GPU, the node says the rest went unread (WARN), and the run goes on (the read is not retried)."""
    import subprocess

    from nodeqc.run.platform_watch import PlatformWatch

    class FailingLog:
        source = "journalctl -k"
        lost = 0

        def __init__(self):
            self.calls = 0

        def new_records(self):
            self.calls += 1
            if self.calls > 1:
                raise subprocess.TimeoutExpired(["journalctl", "-k"], 60)
            return [KernelRecord(3, 0, 0, REAL_LINES["xid79"])]

    class Platform:
        def counters(self, bus_ids):
            return HostCounters()

    watch = PlatformWatch(Platform())
    watch._start, watch._log, watch._names = HostCounters(), FailingLog(), {"0000:44:00.0": "gpu2"}
    watch.drain_kernel_log()  # after the first step: the Xid
    watch.drain_kernel_log()  # after the second: journalctl times out
    results = [(r.subject, r.verdict, r.code, r.message) for r in watch.health_results(GENERIC)
               if r.name == "host.kernel_log"]
    assert [r[:3] for r in results] == [("gpu2", Verdict.FAIL, "KERNEL_XID"), ("node", Verdict.WARN, "KERNEL_LOG_LOST")]
    assert results[1][3].startswith("the kernel log could not be read to the end of the run (TimeoutExpired: "
                                    "Command '['journalctl', '-k']' timed out after 60 seconds)")
    assert watch._log.calls == 2
    # Nothing of note before it stopped: still a warning, never a pass.
    quiet = host_health.kernel_log([], "journalctl -k", None, {}, GENERIC, stopped="OSError: [Errno 5] EIO")
    assert [(r.verdict, r.code) for r in quiet] == [(Verdict.WARN, "KERNEL_LOG_LOST")]


@pytest.mark.parametrize("printed, exit_code", [("", 1), ('{"MESSAGE": "NVRM: Xid (PCI:0000:44:00): 79"}\n', 137)])
def test_a_journalctl_that_fails_is_a_log_not_read_not_a_quiet_one(tmp_path, monkeypatch, printed, exit_code):
    """journalctl killed mid-read (the OOM killer under the memory test) or refused printed none or
    part of the log, and its exit was not looked at: "nothing of note", a pass (the 2026-11-28
    hostile-node audit). Its exit now stops the reading, said as the log not read to the end."""
    from nodeqc.backends.kernel_log import JournalctlLog
    from nodeqc.run.platform_watch import PlatformWatch

    fake = tmp_path / "journalctl"
    fake.write_text(f"#!/bin/sh\nprintf '%s' '{printed}'\necho 'Failed to iterate through journal' >&2\nexit {exit_code}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(OSError, match=f"journalctl -k exited {exit_code}: Failed to iterate through journal") as cut:
        JournalctlLog(since=0).new_records()
    assert [r.text for r in cut.value.records] == ([] if not printed else ["NVRM: Xid (PCI:0000:44:00): 79"])

    class Platform:
        def counters(self, bus_ids):
            return HostCounters()

    watch = PlatformWatch(Platform())
    watch._start, watch._log, watch._names = HostCounters(), JournalctlLog(since=0), {"0000:44:00.0": "gpu2"}
    results = [r for r in watch.health_results(GENERIC) if r.name == "host.kernel_log"]
    # The Xid it printed before it was killed still fails its GPU; the rest is said unread.
    assert [(r.subject, r.verdict, r.code) for r in results] == ([("gpu2", Verdict.FAIL, "KERNEL_XID")] if printed
                                                                  else []) + [("node", Verdict.WARN, "KERNEL_LOG_LOST")]
    assert f"LogCutShort: journalctl -k exited {exit_code}" in results[-1].message


def test_a_flood_past_the_most_read_is_said_unjudged_not_dropped_in_silence(monkeypatch):
    """A kernel log flooding past MAX_RECORDS: reading stops there (the first lines say what the flood
    was), and the node says the rest went unread (WARN), where it used to pass over them in silence."""
    from nodeqc.run import platform_watch
    from nodeqc.run.platform_watch import PlatformWatch

    monkeypatch.setattr(platform_watch, "MAX_RECORDS", 4)

    class Flood:
        source = "/dev/kmsg"
        lost = 0
        calls = 0

        def new_records(self):
            self.calls += 1
            return [KernelRecord(6, i, i, f"usb 1-1: new device {i}") for i in range(3)]

    class Platform:
        def counters(self, bus_ids):
            return HostCounters()

    watch = PlatformWatch(Platform())
    watch._start, watch._log, watch._names = HostCounters(), Flood(), {}
    watch.drain_kernel_log()  # 3 lines: below the most
    assert watch._log_stopped is None
    watch.drain_kernel_log()  # 6: past it, reading stops
    watch.drain_kernel_log()
    [kernel] = [r for r in watch.health_results(GENERIC) if r.name == "host.kernel_log"]
    assert watch._log.calls == 2 and len(watch._records) == 6
    assert (kernel.verdict, kernel.code) == (Verdict.WARN, "KERNEL_LOG_LOST")
    assert "(it logged 6 lines, the most nodeqc reads in a run)" in kernel.message


def test_a_wrapped_ring_buffer_alone_in_full_and_a_dpc_line_as_it_is_said():
    """The tenth mutation pass's gaps in this session's host-health code: the whole result of a log
    that only lost records, and the finding a DPC line makes (its device in lower case, as the
    names it is looked up in are)."""
    [r] = host_health.kernel_log([KernelRecord(6, 9, 9, "hello")], "/dev/kmsg", None, {}, GENERIC, lost=3)
    assert (r.name, r.subject, r.key, {k: v.value for k, v in r.values.items()}) == (
        "host.kernel_log", "node", "lines", {"lines": 1})
    assert r.message.endswith("; nothing of note in the 1 line(s) read (/dev/kmsg)")
    f = host_health.classify("pcieport 0000:3A:01.0: DPC: containment event, status:0x1f01 source:0x0000")
    assert (f.kind, f.verdict, f.code, f.device, f.text) == (
        "aer", Verdict.FAIL, "KERNEL_AER", "0000:3a:01.0", "PCIe link contained (DPC) after an uncorrectable error")
    # A line's fatal "Machine Check Exception" alone makes it uncorrected.
    assert host_health.classify("mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4: 9000000000070005"
                                ).verdict is Verdict.FAIL


@pytest.mark.parametrize("xid, own_work, verdict, advised", [
    (94, True, Verdict.FAIL, "XID_APP_FAULT"),  # contained ECC error during nodeqc's own work
    (31, True, Verdict.FAIL, "XID_APP_FAULT"),
    (94, False, Verdict.WARN, "XID_WARNING"),  # a watch: users' work, whose own bug it most often is
    (79, True, Verdict.FAIL, "XID_REBOOT"),  # fatal whatever ran
])
def test_an_applications_xid_in_the_log_of_nodeqcs_own_work_fails_as_health_xid_fails_it(xid, own_work, verdict,
                                                                                        advised):
    """The 2026-11-28 advice review: where NVML refuses XID events (XID_NOT_WATCHED, as in some VMs),
    the kernel log is all there is, and an Xid 94 during nodeqc's known-good work only warned, where
    health.xid fails it (XID_APP_FAULT)."""
    from nodeqc.core.codes import advice

    recs = [KernelRecord(4, 1, 1, f"NVRM: Xid (PCI:0000:44:00): {xid}, pid=7, x")]
    [r] = host_health.kernel_log(recs, "/dev/kmsg", None, {"0000:44:00.0": "gpu2"}, GENERIC, own_work=own_work)
    assert (r.subject, r.verdict, r.code) == ("gpu2", verdict, "KERNEL_XID")
    assert advice(r.code, r.subject, r.evidence, r.verdict.value) == advice(advised, "gpu2", None, r.verdict.value)


@pytest.mark.parametrize("end_ue", ["0x7", "", "garbage", "²", "1" + "0" * 30])
def test_an_edac_count_that_is_not_a_number_is_not_judged_never_read_as_0(tmp_path, end_ue):
    """2026-11-29 fuzzing: ue_count 2 at the start and "0x7" at the end read as 0: "no memory
    errors during the run", PASS. A second controller still read is judged beside it."""
    from nodeqc.backends.platform import LinuxPlatform

    def tree(root, ue0):
        for mc, ue in (("mc0", ue0), ("mc1", "0")):
            d = root / "sys/devices/system/edac/mc" / mc
            d.mkdir(parents=True)
            (d / "ce_count").write_text("0\n")
            (d / "ue_count").write_text(ue + "\n")
        (root / "sys/devices/system/edac/mc/mc1-old").mkdir()  # matches mc[0-9]*: no traceback, not a controller
        (root / "sys/devices/system/edac/mc/mc1/dimm0.bak").mkdir()
        return LinuxPlatform(root).counters([])

    start, end = tree(tmp_path / "a", "2"), tree(tmp_path / "b", end_ue)
    assert set(start.edac) == {"mc0", "mc1"} and set(end.edac) == {"mc1"}
    [r] = host_health.edac(start, end, GENERIC)
    assert (r.verdict, r.code) == (Verdict.ERROR, "EDAC_UNREADABLE"), r.message
    assert r.message.startswith("mc0: error counts read at the start and not at the end")
    end.edac.pop("mc1")
    [r] = host_health.edac(start, end, GENERIC)
    assert (r.verdict, r.code) == (Verdict.ERROR, "EDAC_UNREADABLE") and "(mc0, mc1)" in r.message

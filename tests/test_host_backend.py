"""The real host backend: on this machine for real, and on a prepared sysfs tree for the PCI scan
and DMI placeholders."""

from pathlib import Path

import psutil

from nodeqc.backends.host import LinuxHost
from nodeqc.checks import host as host_checks
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.spec.profile import load_profile


def test_this_machine():
    info = LinuxHost().info()
    assert info.hostname
    assert info.cores == psutil.cpu_count(logical=False) and info.threads == psutil.cpu_count()
    assert info.memory_bytes == psutil.virtual_memory().total
    assert info.kernel and info.cpu_model
    assert info.sockets is NA or info.sockets >= 1


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def test_prepared_tree(tmp_path):
    for bus, vendor, cls in (("0000:1b:00.0", "0x10de", "0x030200"), ("0000:43:00.0", "0x10de", "0x030200"),
                             ("0000:05:00.0", "0x10de", "0x068000"),  # an NVSwitch: not a GPU
                             ("0000:61:00.0", "0x8086", "0x030000")):  # not NVIDIA
        _write(tmp_path, f"sys/bus/pci/devices/{bus}/vendor", vendor)
        _write(tmp_path, f"sys/bus/pci/devices/{bus}/class", cls)
        _write(tmp_path, f"sys/bus/pci/devices/{bus}/device", "0x2330")
    _write(tmp_path, "sys/class/dmi/id/sys_vendor", "Supermicro")
    _write(tmp_path, "sys/class/dmi/id/product_serial", "To Be Filled By O.E.M.")
    _write(tmp_path, "sys/class/dmi/id/board_serial", "OM123456")
    for cpu, pkg in ((0, 0), (1, 0), (2, 1), (3, 1)):
        _write(tmp_path, f"sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id", str(pkg))
    for n in range(2):
        (tmp_path / f"sys/devices/system/node/node{n}").mkdir(parents=True)
    _write(tmp_path, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n")
    _write(tmp_path, "etc/os-release", 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.5 LTS"')
    info = LinuxHost(tmp_path).info()
    assert [p.bus_id for p in info.nvidia_gpus_on_pci] == ["0000:1b:00.0", "0000:43:00.0"]
    assert info.system_vendor == "Supermicro"
    assert info.system_serial is NA  # a placeholder is not a serial
    assert info.board_serial == "OM123456"
    assert (info.sockets, info.numa_nodes) == (2, 2)
    assert info.cpu_model == "Intel(R) Xeon(R) Platinum 8480+" and info.os == "Ubuntu 22.04.5 LTS"


def test_host_checks_on_this_machine():
    info = LinuxHost().info()
    results = host_checks.host_results(info, load_profile("generic"))
    assert {r.name for r in results} == {"host.cpu", "host.memory"}
    # generic sets no host floors: the figures are reported, not judged.
    assert all(r.verdict is Verdict.PASS and "no limit set" in r.message for r in results)
    hgx = host_checks.host_results(info, load_profile("hgx-h100"))
    # This 2-core CI machine is no HGX host, and runs no NVSwitch fabric manager. Whether it can
    # tell that no GPUDirect RDMA module is loaded depends on what it lets us read.
    peermem = next(r for r in hgx if r.name == "host.gpudirect_rdma")
    assert (peermem.verdict, peermem.code) in ((Verdict.FAIL, "PEERMEM_MISSING"), (Verdict.SKIP, None))
    assert {(r.name, r.verdict, r.code) for r in hgx if r is not peermem} == {
        ("host.cpu", Verdict.FAIL, "HOST_CPU"), ("host.memory", Verdict.FAIL, "HOST_MEMORY"),
        ("host.fabric_manager", Verdict.FAIL, "FABRIC_MANAGER")}


def test_a_host_name_of_other_bytes_than_utf8_is_recorded_with_replacement_characters(monkeypatch):
    """socket.gethostname() gives such bytes as surrogate escapes, which the report's signing cannot
    write (UnicodeEncodeError at the end of the run); the archive refuses them in others' reports."""
    import socket

    from nodeqc.report.envelope import canonical

    monkeypatch.setattr(socket, "gethostname", lambda: "gpu\udcff17")
    name = LinuxHost().info().hostname
    assert name == "gpu\ufffd17" and canonical({"hostname": name})

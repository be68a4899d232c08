"""NVIDIA's XID catalogue as data: what each XID the driver reports means, whether it can be the
hardware, and what to do at once; and a small catalogue of NVSwitch SXIDs.

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (XID_SOURCE, the catalogue for Ampere
and newer GPUs, PCIe cards included), read through gpud's copy of its spreadsheet
(leptonai/gpud components/accelerator/nvidia/xid/catalog_generated.go, generated 2025-10-29) on
XID_READ (the date below). The meanings are nodeqc's own words; `nvidia` keeps NVIDIA's immediate
resolution bucket as NVIDIA names it (a fact, for the evidence). Codes 162-173 have no published
action in that catalogue: they carry ours, and `basis` says where it comes from (gpud's suggestion,
or an analogy with a catalogued code), or the action is "unknown" and the code is judged a warning.

How the catalogue becomes a severity (nodeqc's rule, one line each):
- fatal: NVIDIA's immediate action resets the GPU (RESET_GPU, the DBE and NVLink workflows),
  reboots the machine (RESTART_BM, RESTART_VM) or checks its power cabling (CHECK_MECHANICALS);
  and the codes cloud node agents take a node out of service for (shared/REFERENCE.md: 63 and 142
  are fatal only by that list) -- so no code nodeqc failed before is judged more mildly now.
- warning: the others NVIDIA gives an action for (restart the application, ignore with a follow-up,
  contact support), every code unused on Ampere and newer (NVIDIA: contact support if seen), and
  every code whose action is unknown (162-166, 168, 170, any code not in the catalogue).
- ignorable: reports that only point at another XID or are test messages (14, 45, 106, 107, 154).
  No code gpud marks critical is ignorable.
`hardware` says whether the cause can be the hardware: True where NVIDIA's investigatory action is
to contact support or inspect the link, where its workflow for the code includes the hardware (13,
31), or where the code reports memory, bus or power hardware; False where NVIDIA points at the
application or the software (CHECK_APP/CUDA, INVESTIGATE_SW, UPDATE_SWFW); None where nobody says.
How a run judges an XID (the context: nodeqc's own known-good work) is nodeqc.checks.health.xid's.
"""

from __future__ import annotations

from dataclasses import dataclass

XID_SOURCE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
XID_READ = "2026-11-27"  # when nodeqc's catalogue was read from XID_SOURCE (gpud's 2025-10-29 copy)

SEVERITIES = ("fatal", "warning", "ignorable")
# What to do at once, in a small set (NVIDIA's buckets folded): nothing; restart the application;
# reset the GPU; reboot the node; check the board's power cabling; check the driver and software
# stack (UPDATE_SWFW, CHECK_UVM); contact NVIDIA support; not published.
ACTIONS = ("ignore", "restart_app", "reset_gpu", "reboot", "check_power", "check_software", "contact_support",
           "unknown")
CATEGORIES = ("application", "engine", "driver", "firmware", "memory", "nvlink", "bus", "power", "hardware",
              "security", "virtualization", "informational", "unused", "unknown")


@dataclass(frozen=True)
class Xid:
    code: int
    meaning: str  # nodeqc's words
    category: str
    severity: str  # fatal | warning | ignorable
    action: str  # one of ACTIONS
    hardware: bool | None  # can the cause be the hardware
    nvidia: str  # NVIDIA's immediate resolution bucket ("" where none is published)
    basis: str = ""  # where the action comes from when not from NVIDIA's catalogue

    @property
    def known(self) -> bool:
        return self.category != "unknown"


UNUSED_ON_AMPERE = "not used on Ampere and newer GPUs"
# The catalogue is NVIDIA's for Ampere and newer (XID_SOURCE). On an older GPU (compute capability
# below 8.0: Volta, Turing) a code it marks unused is one that generation reports, for which the
# catalogue publishes no action: judged as any code whose action is unknown (a warning).
AMPERE_COMPUTE_CAPABILITY = 8.0


def _unused(code: int, older: str = "") -> Xid:
    meaning = UNUSED_ON_AMPERE + (f" (on older GPUs: {older})" if older else "")
    return Xid(code, meaning, "unused", "warning", "contact_support", None, "CONTACT_SUPPORT")


def _x(code: int, meaning: str, category: str, severity: str, action: str, hardware: bool | None, nvidia: str,
       basis: str = "") -> Xid:
    return Xid(code, meaning, category, severity, action, hardware, nvidia, basis)


_CE = "copy engine {} error"
_NVDEC = "video decoder (NVDEC{}) error"
_NVJPG = "JPEG decoder (NVJPG{}) error"
_NVL5 = ("NVLink error in the {} unit (NVIDIA grades it by sub-status, from ignore to reset; nodeqc "
         "does not decode the sub-status and takes the worst)")

_ENTRIES: list[Xid] = [
    *(_unused(c) for c in (1, 2, 3, 4, 5, 6, 7)),
    _x(8, "a GPU engine stopped processing its work (idle timeout)", "engine", "warning", "restart_app", True, "RESTART_APP"),
    _unused(9, "driver error programming the GPU"),
    _unused(10),
    _x(11, "invalid or corrupted command stream sent to the GPU", "application", "warning", "restart_app", False, "RESTART_APP"),
    _unused(12, "driver error handling a GPU exception"),
    _x(13, "graphics engine exception", "application", "warning", "restart_app", True, "RESTART_APP"),
    _x(14, "a deliberately injected test error (not used)", "unused", "ignorable", "ignore", False, "IGNORE"),
    *(_unused(c) for c in (15, 16, 17, 18, 19, 20, 21, 22, 23, 24)),
    _x(25, "invalid or illegal command stream sent to the GPU", "application", "warning", "restart_app", False, "RESTART_APP"),
    *(_unused(c) for c in (26, 27, 28, 29, 30)),
    _x(31, "GPU memory page fault", "application", "warning", "restart_app", True, "RESTART_APP"),
    _x(32, "corrupted command stream seen by the push-buffer DMA engine", "application", "warning", "restart_app", False,
       "RESTART_APP"),
    *(_unused(c) for c in (33, 34, 35, 36)),
    _x(37, "driver firmware error (a firmware method not implemented)", "driver", "warning", "ignore", False, "IGNORE"),
    _x(38, "driver firmware watchdog timeout", "firmware", "warning", "ignore", True, "IGNORE"),
    _x(39, _CE.format(0), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(40, _CE.format(1), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(41, _CE.format(2), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _unused(42),
    _x(43, "GPU stopped processing a channel after an application fault", "application", "warning", "ignore", True, "IGNORE"),
    _x(44, "graphics engine fault during a context switch", "engine", "warning", "ignore", True, "IGNORE"),
    _x(45, "channels cleaned up after an earlier error (it follows another XID, which is judged itself)",
       "informational", "ignorable", "ignore", False, "WORKFLOW_XID_45"),
    _x(46, "GPU stopped processing (timeout)", "engine", "fatal", "reset_gpu", True, "RESET_GPU"),
    _unused(47),
    _x(48, "double-bit ECC error", "memory", "fatal", "reset_gpu", True, "WORKFLOW_XID_48"),
    *(_unused(c) for c in (49, 50, 51, 52, 53)),
    _x(54, "auxiliary power is not connected", "power", "fatal", "check_power", True, "CHECK_MECHANICALS"),
    *(_unused(c) for c in (55, 56, 57, 58, 59)),
    _x(60, "video processor (SEC2) exception", "engine", "warning", "restart_app", False, "RESTART_APP"),
    _unused(61, "internal micro-controller breakpoint/warning"),
    _x(62, "internal micro-controller halt", "firmware", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(63, "ECC page retirement or row remapping recorded (it takes effect after a GPU reset)", "memory", "fatal",
       "reset_gpu", True, "IGNORE", "fatal and a reset by the cloud node agents' list (shared/REFERENCE.md): the "
       "remap is pending until the GPU is reset"),
    _x(64, "ECC page retirement or row remapper failure", "memory", "fatal", "reset_gpu", True, "RESET_GPU"),
    _unused(65),
    _x(66, "illegal register access by the driver", "driver", "warning", "ignore", False, "IGNORE"),
    _x(67, "illegal access by the driver (verification)", "driver", "warning", "ignore", True, "IGNORE"),
    _x(68, _NVDEC.format(0), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(69, "graphics engine class error", "application", "warning", "restart_app", False, "RESTART_APP"),
    _x(70, _CE.format(3), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(71, _CE.format(4), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(72, _CE.format(5), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _unused(73),
    _x(74, "NVLink error", "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK_ERR"),
    _x(75, _CE.format(6), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(76, _CE.format(7), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(77, _CE.format(8), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(78, "virtual GPU failed to start", "virtualization", "warning", "check_software", False, "UPDATE_SWFW"),
    _x(79, "GPU has fallen off the bus", "bus", "fatal", "reboot", True, "RESTART_BM"),
    _x(80, "corrupted data sent to the GPU (command buffer checksum mismatch)", "application", "warning", "restart_app",
       False, "RESTART_APP"),
    _unused(81),
    _x(82, _NVJPG.format(0), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(83, _NVDEC.format(1), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(84, _NVDEC.format(2), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(85, _CE.format(9), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(86, "optical flow accelerator (OFA0) error", "engine", "warning", "restart_app", True, "RESTART_APP"),
    _unused(87),
    _x(88, _NVDEC.format(3), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(89, _NVDEC.format(4), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _unused(90),
    _unused(91),
    _x(92, "high single-bit ECC error rate", "memory", "warning", "ignore", True, "IGNORE"),
    _x(93, "InfoROM wear limit exceeded (not fatal)", "firmware", "warning", "ignore", True, "IGNORE"),
    _x(94, "contained ECC error (the application using the memory was stopped)", "memory", "warning", "restart_app",
       True, "RESTART_APP"),
    _x(95, "uncontained ECC error", "memory", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(96, _NVDEC.format(5), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(97, _NVDEC.format(6), "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(98, _NVDEC.format(7), "engine", "warning", "restart_app", True, "RESTART_APP"),
    *(_x(c, _NVJPG.format(c - 98), "engine", "warning", "restart_app", True, "RESTART_APP") for c in range(99, 106)),
    _x(106, "out-of-band management (SMBPBI) test message", "informational", "ignorable", "ignore", False, "IGNORE"),
    _x(107, "out-of-band management (SMBPBI) test message, silent", "informational", "ignorable", "ignore", False,
       "IGNORE"),
    _x(108, "NVLink remote translation error (not used)", "nvlink", "warning", "ignore", None, "IGNORE"),
    _x(109, "context switch timeout", "engine", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(110, "security fault", "security", "fatal", "reset_gpu", False, "RESET_GPU"),
    *(_unused(c) for c in range(111, 119)),
    _x(119, "GSP RPC timeout", "firmware", "fatal", "reset_gpu", False, "RESET_GPU"),
    _x(120, "GSP error", "firmware", "fatal", "reset_gpu", False, "RESET_GPU"),
    _x(121, "chip-to-chip (C2C) link error", "bus", "warning", "ignore", True, "IGNORE"),
    *(_unused(c) for c in (122, 123, 124, 125)),
    *(_x(c, _CE.format(c - 116), "engine", "warning", "restart_app", True, "RESTART_APP") for c in range(126, 136)),
    _x(136, "link training failed", "nvlink", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(137, "NVLink privilege error", "nvlink", "warning", "ignore", None, "IGNORE"),
    _unused(138),
    _x(139, "optical flow accelerator (OFA1) error", "engine", "warning", "restart_app", True, "RESTART_APP"),
    _x(140, "unrecovered ECC error (escaped containment)", "memory", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(141, "CUDA fast path error", "driver", "warning", "ignore", True, "IGNORE"),
    _x(142, "video encoder (NVENC3) error", "engine", "fatal", "contact_support", True, "CONTACT_SUPPORT",
       "fatal by the cloud node agents' list (shared/REFERENCE.md)"),
    _x(143, "GPU initialisation error", "hardware", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(144, _NVL5.format("SAW"), "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK5_ERR"),
    _x(145, _NVL5.format("RLW"), "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK5_ERR"),
    _x(146, _NVL5.format("TLW"), "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK5_ERR"),
    _x(147, "NVLink error in the TREX unit (NVIDIA lists only non-fatal sub-statuses)", "nvlink", "warning", "ignore",
       None, "WORKFLOW_NVLINK5_ERR"),
    _x(148, "NVLink error in the NVLPW control unit (NVIDIA lists only non-fatal sub-statuses)", "nvlink", "warning",
       "ignore", None, "WORKFLOW_NVLINK5_ERR"),
    _x(149, _NVL5.format("NETIR"), "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK5_ERR"),
    _x(150, "NVLink management (MSE) watchdog error", "nvlink", "fatal", "reset_gpu", True, "WORKFLOW_NVLINK5_ERR"),
    _x(151, "key rotation error (confidential computing)", "security", "fatal", "reboot", False, "RESTART_VM"),
    _x(152, "deep learning accelerator (DLA) memory management error", "engine", "warning", "ignore", True, "IGNORE"),
    _x(153, "deep learning accelerator (DLA) timeout", "engine", "warning", "ignore", True, "IGNORE"),
    _x(154, "the recovery action another XID needs has changed (it names the action; the other XID is judged itself)",
       "informational", "ignorable", "ignore", False, "XID_154"),
    _x(155, "NVLink software-defined error (link down)", "nvlink", "fatal", "reset_gpu", False, "RESET_GPU"),
    _x(156, "resource retirement event", "memory", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(157, "resource retirement failure", "memory", "warning", "ignore", True, "IGNORE"),
    _x(158, "GPU fatal timeout", "hardware", "fatal", "reset_gpu", True, "RESET_GPU"),
    _x(159, "coherent interconnect (CHI) non-data error", "bus", "warning", "check_software", None, "CHECK_UVM"),
    _x(160, "channel retirement event", "driver", "warning", "ignore", False, "IGNORE"),
    _x(161, "channel retirement failure", "driver", "warning", "ignore", False, "IGNORE"),
    _x(162, "power-smoothing circuitry re-engaged", "power", "warning", "unknown", None, ""),
    _x(163, "power-smoothing circuitry disengaged", "power", "warning", "unknown", None, ""),
    _x(164, "power-smoothing circuitry near the end of its lifetime", "power", "warning", "unknown", True, ""),
    _x(165, "power-smoothing circuitry lifetime exhausted", "power", "warning", "unknown", True, ""),
    _x(166, "encrypted NVLink traffic before the link was set up for it (confidential computing)", "security",
       "warning", "unknown", None, ""),
    _x(167, "PCIe fatal timeout", "bus", "fatal", "reboot", True, "",
       "gpud suggests a reboot; by analogy with XID 79 (the GPU lost on its bus)"),
    _x(168, "reduced GPU memory capacity (errors in the write-protected region)", "memory", "warning", "unknown", True, ""),
    _x(169, "internal micro-controller (SEC2) halt", "firmware", "fatal", "reset_gpu", True, "",
       "by analogy with XID 62 (internal micro-controller halt: reset the GPU)"),
    _x(170, "interrupt seen in confidential-computing mode", "security", "warning", "unknown", None, ""),
    _x(171, "uncorrectable DRAM error (a detail of XID 48)", "memory", "fatal", "reset_gpu", True, "",
       "by analogy with XID 48 (double-bit ECC error), which it details"),
    _x(172, "uncorrectable SRAM error (a detail of XID 48)", "memory", "fatal", "reset_gpu", True, "",
       "by analogy with XID 48 (double-bit ECC error), which it details"),
    _x(173, "chip-to-chip (C2C) fatal link failure", "bus", "fatal", "reboot", True, "",
       "gpud suggests a reboot; a fatal link failure between the GPU and its CPU"),
]

XIDS: dict[int, Xid] = {e.code: e for e in _ENTRIES}


def lookup(code: int, compute_capability: object = None) -> Xid:
    """The catalogue's entry for any integer code; a code it does not hold gets an entry that says
    so: action unknown, judged a warning (never passed silently). `compute_capability` ("7.0"): the
    GPU's, where known; on a GPU older than Ampere a code the catalogue marks unused on Ampere is
    described as that generation's, with no published action (a V100's Xid 61 read "not used on
    Ampere and newer GPUs": the 2026-11-28 advice review)."""
    if isinstance(code, int) and not isinstance(code, bool) and code in XIDS:
        entry = XIDS[code]
        if entry.category == "unused" and _before_ampere(compute_capability):
            older = entry.meaning.removeprefix(UNUSED_ON_AMPERE).strip()
            older = older.removeprefix("(on older GPUs: ").removesuffix(")")
            return Xid(code, (older or "an XID of GPUs before Ampere") + f" (compute capability {compute_capability}; "
                       "NVIDIA's catalogue, for Ampere and newer, publishes no action for it)",
                       "unknown", "warning", "unknown", None, "")
        return entry
    return Xid(code, "not in NVIDIA's XID catalogue as nodeqc read it", "unknown", "warning", "unknown", None, "")


def _before_ampere(compute_capability: object) -> bool:
    try:
        return float(str(compute_capability)) < AMPERE_COMPUTE_CAPABILITY
    except ValueError:
        return False  # not known (NA, None): the catalogue's own words


# ---------------------------------------------------------------------- NVSwitch SXIDs
# NVIDIA Fabric Manager user guide, appendix D (the NVSwitch SXid tables: non-fatal, fatal, always
# fatal), read through gpud's copy (leptonai/gpud components/accelerator/nvidia/sxid/sxid.go) on
# SXID_READ. "fatal": the traffic through that NVSwitch port stopped; the GPUs and switches on it need
# a reset (the fatal ones propagate to the GPUs as XID 74). "always fatal": the whole NVLink fabric
# must be reset, which means rebooting the host. The driver's own line says Fatal or Non-fatal for each
# event; nodeqc takes its word, except that an always-fatal code is always fatal. Names in short.
SXID_SOURCE = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
SXID_READ = "2026-11-27"
_SBE = "corrected (single-bit) ECC error in a switch memory"
_DBE = "uncorrectable (double-bit) ECC error in a switch memory"
SXIDS: dict[int, tuple[str, str]] = {
    **{c: (_SBE, "non_fatal") for c in (11012, 11021, 11022, 11023, 12021, 12023, 15008, 15011, 19049, 19055, 19057,
                                         19059, 19062, 19065, 19068, 19071, 24001, 24002, 24003)},
    11004: ("ingress access-control violation (a partition misconfiguration)", "non_fatal"),
    12028: ("egress non-posted privilege error", "non_fatal"),
    19084: ("link heartbeat timeout", "non_fatal"),
    20001: ("link transmit replay", "non_fatal"),
    20009: ("link receive short error rate", "non_fatal"),
    20012: ("broken or inconsistent link connection", "non_fatal"),
    22013: ("link controller (Minion) request interrupt", "non_fatal"),
    10001: ("host privilege error", "non_fatal"), 10002: ("host privilege timeout", "non_fatal"),
    10003: ("host unhandled interrupt", "non_fatal"), 10004: ("switch thermal event started", "non_fatal"),
    10005: ("switch thermal event ended", "non_fatal"),
    11001: ("ingress invalid command", "fatal"), 11009: ("ingress invalid virtual-channel set", "fatal"),
    11020: ("ingress control parity error", "fatal"), 12001: ("egress crossbar overflow", "fatal"),
    12002: ("egress packet route error", "fatal"), 12025: ("egress credit overflow", "fatal"),
    12026: ("egress destination request ID error", "fatal"), 12027: ("egress destination response ID error", "fatal"),
    12030: ("egress control parity error", "fatal"), 12031: ("egress credit parity error", "fatal"),
    12032: ("egress flit type mismatch", "fatal"), 14017: ("transaction timeout", "fatal"),
    15001: ("route buffer over- or underflow", "fatal"), 15006: ("route completion over- or underflow", "fatal"),
    15010: ("route parity error", "fatal"), 15013: ("route credit parity error", "fatal"),
    20034: ("link training (LTSSM) fault", "fatal"), 24007: ("source-tracking timeout", "fatal"),
    **{c: (_DBE, "fatal") for c in (11013, 11018, 11019, 12022, 12024, 15009, 15012, 19047, 19048, 19054, 19056,
                                     19058, 19060, 19061, 19063, 19064, 19066, 19067, 19069, 19070, 24004, 24005,
                                     24006)},
    12020: ("egress sequence ID error", "always_fatal"), 22003: ("link controller (Minion) halt", "always_fatal"),
    22011: ("link controller (Minion) external error", "always_fatal"),
    **{c: ("ingress or egress buffer, credit or packet error in the switch fabric", "always_fatal")
       for c in range(23001, 23018)},
}


def sxid_grade(code: int, line_says_fatal: bool) -> str:
    """'always_fatal', 'fatal' or 'non_fatal' for one SXid event: the line's word, except that an
    always-fatal code is always fatal."""
    if SXIDS.get(code, ("", ""))[1] == "always_fatal":
        return "always_fatal"
    return "fatal" if line_says_fatal else "non_fatal"


def sxid_meaning(code: int) -> str:
    return SXIDS.get(code, ("not in NVIDIA's SXid tables as nodeqc read them", ""))[0]

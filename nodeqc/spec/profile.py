"""Profiles: what a node of a class must have and achieve, read from TOML.

A profile may `extends` another (looked up beside it, then among the shipped profiles); tables
merge key by key, the child winning. Every key is declared in SCHEMA, so a typo is an error that
names the file, the table and the key, never a silently ignored setting.

Thresholds are keys named `min_*` (floors) or `max_*` (ceilings). Each is a number (the fail limit,
with the profile's `warn_band` giving the warning limit) or a table `{ fail = X, warn = Y }`.

A profile that names `skus` (nodeqc/core/skus.py) takes its performance floors from them by the
calibration rule (nodeqc/spec/calibration.py): resolved for the SKU the GPUs are (`load_for`), or, before
the GPUs are known, those of its slowest SKU. These generated settings come after what the profile
says itself (a profile naming skus may not set their floors: one place for each figure; with one
SKU they also narrow its models and dtypes to that SKU's), and a profile extending it can still
set a floor of its own. Every shipped SKU is also a profile by its key (`h100-sxm5-80gb`): its
family's profile resolved for that SKU.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.backends.nic import IPERF3_MAX_S, IPERF3_MAX_STREAMS
from nodeqc.core.arguments import MAX_DURATION_S
from nodeqc.core.errors import UsageError
from nodeqc.core.model import Threshold
from nodeqc.core.resources import profiles_dir
from nodeqc.core.safefile import UnreadableInput, as_toml, read_input
from nodeqc.core.schema import Spec, validate
from nodeqc.core.skus import BY_KEY, Sku, identify
from nodeqc.spec import calibration
from nodeqc.spec.peers import parse_peers

# A node's GPUs at most, as a profile's [gpu] count and --gpus take them: an 8-way HGX has 8, a
# GB200 tray 4; more is a typo (and 10^22 made a report its own verifier refused: 2026-11-29 fuzzing).
MAX_GPU_COUNT = 64

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
# Host floors that say how the host was configured when bought, not whether it is healthy: a node
# profile chosen by `--profile auto` leaves them out (Profile.chosen_by_auto).
HOST_CONFIG_FLOORS = ("min_cpu_cores", "min_memory_gib")
DEFAULT_WARN_BAND = 0.05  # AzNHC warns within 5% of a floor (shared/REFERENCE.md)


def _t(help: str) -> Spec:
    return Spec("threshold", help)


SCHEMA: dict[str, dict[str, Spec]] = {
    "": {
        "description": Spec("str", "one line shown by `nodeqc profiles`"),
        "extends": Spec("str", "profile to inherit from (name or path)"),
        "kind": Spec("choice", "gpu: one GPU model, any count; node: a whole node, fixed count",
                     ("gpu", "node")),
        "warn_band": Spec("number", "default warning band as a fraction of a limit", low=0, high=0.5),
        "baseline": Spec("str", "golden baseline file (nodeqc baseline create) every node must match; "
                         "relative to this profile's file"),
        "baseline_warn": Spec("strlist", "baseline fields whose differences only warn, e.g. [\"kernel\"]"),
        "baseline_ignore": Spec("strlist", "baseline fields not compared"),
        "valid_days": Spec("int", "days a qualification stays valid (reports carry valid_until)", low=1, high=3650),
        "skus": Spec("strlist", "the GPU SKUs the profile accepts (nodeqc/core/skus.py); floors come from them",
                     tuple(BY_KEY)),
    },
    "gpu": {
        "models": Spec("strlist", "NVML device names accepted (shell patterns, case-insensitive)"),
        "count": Spec("int", "exact number of GPUs (node profiles)", low=1, high=MAX_GPU_COUNT),
        "compute_capability": Spec("version", "CUDA compute capability every GPU must report, e.g. \"9.0\""),
        "pcie_gen": Spec("int", "PCIe generation the link must train to under load", low=1, high=6),
        "pcie_width": Spec("choice", "PCIe lanes the link must train to under load", (1, 2, 4, 8, 16, 32)),
        # At least one: 0 turned the NVLink check off on GPUs that report 18 (a GPU without NVLink leaves it unset).
        "nvlink_links": Spec("int", "active NVLink links expected per GPU (unset for GPUs without NVLink)", low=1, high=32),
        "require_ecc": Spec("bool", "ECC must be enabled"),
        "require_fabric": Spec("bool", "every GPU must be registered with the NVLink fabric (rack-scale NVLink)"),
        "require_persistence": Spec("bool", "persistence mode must be on (otherwise a warning)"),
        "min_driver": Spec("version", "oldest acceptable NVIDIA driver"),
        "min_cuda": Spec("version", "oldest CUDA version the driver must support"),
        "dtypes": Spec("strlist", "matmul burn data types", DTYPES),
        "memtest_fraction": Spec("number", "fraction of free memory the pattern test covers", low=0.01, high=0.99),
        "min_memory_gib": _t("memory per GPU"),
        "max_temp_c": _t("GPU temperature during the run"),
        "max_mem_temp_c": _t("GPU memory (HBM) temperature during the run"),
        "max_throttle_s": _t("seconds of thermal, HW-slowdown or power-brake throttling"),
        "max_pulse_brake_ms": _t("milliseconds of power brake the driver counts within one period of the pulse test"),
        "max_pcie_replays": _t("PCIe replay counter growth during the run (a run over 10 min: its worst 10 min)"),
        "max_ecc_sbe": _t("corrected (single-bit) ECC errors that appear during the run"),
        "max_ecc_dbe": _t("uncorrected (double-bit) ECC errors since the driver loaded"),
        "max_sram_ecc_dbe": _t("uncorrectable ECC errors in on-chip memory (SRAM), in the GPU's life"),
        "max_sram_ecc_sbe": _t("corrected ECC errors in on-chip memory (SRAM), in the GPU's life"),
        "max_sram_ecc_sbe_growth": _t("corrected ECC errors in on-chip memory (SRAM) that appear during the run"),
        "max_retired_pages": _t("retired memory pages (pre-Ampere GPUs)"),
        "max_row_remaps": _t("rows remapped for uncorrectable errors (Ampere and newer)"),
        "max_nvlink_errors": _t("NVLink replays and recoveries during the run"),
        "max_nvlink_crc_per_s": _t("NVLink CRC errors per second during the run"),
        **{f"min_{d}_tflops": _t(f"sustained {d} matmul rate per GPU") for d in DTYPES},
        "min_hbm_gbps": _t("device memory bandwidth, bytes read plus written"),
        "min_h2d_gbps": _t("pinned host-to-device bandwidth"),
        "min_d2h_gbps": _t("pinned device-to-host bandwidth"),
        "min_p2p_gbps": _t("one-way GPU-to-GPU bandwidth per pair"),
        "min_p2p_bidir_gbps": _t("bidirectional GPU-to-GPU bandwidth per pair"),
        "max_p2p_latency_us": _t("GPU-to-GPU copy latency"),
        "min_nccl_busbw_gbps": _t("NCCL all-reduce bus bandwidth across the node's GPUs"),
        "min_nccl_nvls_busbw_gbps": _t("NCCL all-reduce bus bandwidth with NVLink SHARP (NVLS): catches NVLS off or failed"),
        "min_power_fraction": _t("fraction of the enforced power limit reached during the burn"),
        "max_outlier_pct": _t("how far below the node's median one GPU may fall, in percent"),
        "max_burnin_drift_pct": _t("how far a GPU's matmul rate may fall from the start to the end of a burn-in"),
    },
    "host": {
        "min_cpu_cores": _t("physical CPU cores"),
        "min_memory_gib": _t("host memory"),
        "fabric_manager": Spec("bool", "the NVSwitch fabric manager service must be running"),
        "gpudirect_rdma": Spec("bool", "the GPUDirect RDMA peer-memory module must be loaded"),
        "imex_nodes": Spec("int", "nodes of the multi-node NVLink (IMEX) domain: nvidia-imex must run, with its "
                           "channels, and its nodes config must list this many nodes", low=1, high=1024),
        "max_edac_ce": _t("corrected memory errors (EDAC) that appear during the run"),
        "max_edac_ue": _t("uncorrected memory errors (EDAC) that appear during the run"),
        "max_aer_correctable": _t("correctable PCIe errors (AER) per device during the run"),
        "max_aer_uncorrectable": _t("uncorrectable PCIe errors (AER) per device during the run"),
        "stress_s": Spec("number", "seconds of CPU known-answer stress on every logical CPU in a full run", low=1,
                         high=MAX_DURATION_S),
        "min_mem_bw_gbps": _t("host memory copy bandwidth, bytes read plus written, every core streaming"),
        "fio_targets": Spec("strlist", "NVMe devices fio reads (read-only, --readonly) in a full run, e.g. [\"/dev/nvme0n1\"]"),
        "fio_scratch": Spec("str", "a scratch file fio may write (1 GiB) and read in a full run; deleted after"),
        "min_nvme_read_gbps": _t("sequential read rate of each fio target"),
        "optics": Spec("bool", "read the NICs' optical modules (ethtool -m) in a full run (default true)"),
        "kernel_log": Spec("choice", "kernel log findings during the run: fail (as graded), warn (never "
                           "more than a warning) or off", ("fail", "warn", "off")),
    },
    "dcgm": {
        "level": Spec("int", "NVIDIA DCGM diagnostic level of a full run, where dcgmi is installed (dcgmi diag "
                      "-r LEVEL: 1 seconds, 2 about 2 minutes, 3 about 30, 4 one to two hours; 0: not run; default 2)",
                      low=0, high=4),
        "quick_level": Spec("int", "DCGM diagnostic level of a --quick run (default 1; 0: not run)", low=0, high=4),
        "timeout_s": Spec("number", "longest dcgmi diag may take before it is killed and its check is an ERROR "
                          "(default by level: 300, 900, 3600, 14400 s)", low=1, high=86400),
    },
    "fleet": {
        "outlier_pct": Spec("number", "a GPU or node this many percent below its fleet's median is a fleet "
                            "outlier (a warning)", low=0.1, high=90),
        "min_fleet": Spec("int", "fewest nodes of a SKU before fleet outliers are judged", low=3, high=100_000),
    },
    "nic": {
        "match": Spec("strlist", "interface names of the NICs to check (shell patterns), e.g. [\"ib*\"]"),
        "drivers": Spec("strlist", "kernel drivers of the NICs to check, e.g. [\"mlx5_core\"] (with match: both)"),
        "count": Spec("int", "exact number of NICs the profile selects", low=0, high=64),
        "pcie_gen": Spec("int", "PCIe generation each NIC trains to under traffic (default: its maximum)",
                         low=1, high=6),
        "pcie_width": Spec("choice", "PCIe lanes each NIC trains to under traffic (default: its maximum)",
                           (1, 2, 4, 8, 16, 32)),
        "min_speed_mbit": _t("link speed of each NIC"),
        "min_mtu": _t("MTU of each NIC"),
        "min_ib_rate_gbit": _t("rate of each InfiniBand/RoCE port"),
        "min_tcp_fraction": _t("iperf3 TCP throughput as a fraction of the link speed"),
        "min_rdma_fraction": _t("ib_write_bw bandwidth as a fraction of the port rate"),
        "peers": Spec("strlist", "traffic peers: HOST[:PORT] for any NIC, NIC=HOST[:PORT] for one "
                      "(--nic-peer replaces them)"),
        "streams": Spec("int", "parallel iperf3 streams per NIC", low=1, high=IPERF3_MAX_STREAMS),
        "traffic_s": Spec("number", "seconds of each traffic round (TCP, then RDMA) in a full run", low=1, high=IPERF3_MAX_S),
        "quick_traffic_s": Spec("number", "seconds of each traffic round with --quick", low=1, high=IPERF3_MAX_S),
        "rdma_use_cuda": Spec("bool", "ib_write_bw moves GPU memory (GPUDirect RDMA, --use_cuda)"),
        "min_nccl_loopback_busbw_gbps": _t("NCCL all-reduce across the node's GPUs with P2P and SHM off, every "
                                           "byte through the NICs (runs when set and the node has RDMA NICs)"),
        "min_fabric_nccl_busbw_gbps": _t("two-node NCCL all-reduce bus bandwidth across both nodes' GPUs "
                                         "(nodeqc fabric --tests nccl)"),
        "min_fabric_allgather_busbw_gbps": _t("two-node NCCL all-gather bus bandwidth across both nodes' GPUs "
                                              "(nodeqc fabric --tests allgather)"),
        "min_fabric_alltoall_busbw_gbps": _t("two-node NCCL all-to-all bus bandwidth across both nodes' GPUs "
                                             "(nodeqc fabric --tests alltoall)"),
        "min_fabric_nvlink_busbw_gbps": _t("NCCL all-reduce bus bandwidth across a group of nodes within one "
                                           "multi-node NVLink domain (nodeqc fabric --tests nccl --group-size)"),
    },
    # [run]'s lengths: at most MAX_DURATION_S, the longest --burn-in takes. Unbounded, a typo's
    # quick_burn_s = 1e18 was taken, and the run burnt on for ever.
    "run": {
        "sample_hz": Spec("number", "telemetry samples per second", low=0.1, high=50),
        "burn_s": Spec("number", "seconds of load for the burn in a full run", low=1, high=MAX_DURATION_S),
        "quick_burn_s": Spec("number", "seconds of load for the burn with --quick", low=1, high=MAX_DURATION_S),
        "stall_timeout_s": Spec("number", "a worker silent this long is killed as hung", low=1, high=MAX_DURATION_S),
        "startup_timeout_s": Spec("number", "time a worker may take before its first progress", low=1, high=MAX_DURATION_S),
        "burn_in_s": Spec("number", "seconds of burn-in as part of qualification (0: none unless --burn-in)", low=0,
                          high=MAX_DURATION_S),
        "power_s": Spec("number", "seconds every GPU is held at its power limit in a full run", low=1, high=MAX_DURATION_S),
        "quick_power_s": Spec("number", "seconds every GPU is held at its power limit with --quick", low=1, high=MAX_DURATION_S),
        "pulse_s": Spec("number", "seconds of the pulse test at each period in a full run", low=0.5, high=MAX_DURATION_S),
        "quick_pulse_s": Spec("number", "seconds of the pulse test at each period with --quick", low=0.5, high=MAX_DURATION_S),
        # At least a second: at 0 the bit fade read back what it had just written and passed as run
        # (the retention fault missed, 2026-11-29 fuzzing).
        "memtest_retention_s": Spec("number", "seconds the full memory test leaves each bit-fade pattern "
                                    "alone before reading it back", low=1, high=86400),
        "memtest_s": Spec("number", "the full memory test repeats its patterns until it has run this long "
                          "(0: once)", low=0, high=86400),
        "quick_memtest_s": Spec("number", "the quick memory test repeats its patterns until it has run this "
                                "long (0: once)", low=0, high=86400),
    },
}

_UNITS = (("_tflops", "TFLOP/s"), ("_gbps", "GB/s"), ("_gib", "GiB"), ("_us", "us"), ("_pct", "%"),
          ("_c", "C"), ("_per_s", "per s"), ("_ms", "ms"), ("_s", "s"), ("_mbit", "Mb/s"), ("_gbit", "Gb/s"))

# Settings every profile gets unless it says otherwise.
DEFAULTS: dict[str, dict[str, Any]] = {
    # memtest_retention_s: far beyond the 32-64 ms DRAM refresh interval, so a cell that loses its
    # charge between refreshes has time to show; cuda_memtest's bit fade waits 90 minutes, too long
    # for a qualification run (a profile may ask for more).
    "run": {"sample_hz": 4, "burn_s": 600, "quick_burn_s": 30, "stall_timeout_s": 60,
            "startup_timeout_s": 180, "memtest_retention_s": 60,
            # DCGM's targeted power runs 120 s by default. With --quick, 8 s (issue 30's 60 s): on
            # a real H100 SXM5 and H200 the power reached the limit 1 s after the load began, and the
            # mean of the readings under load over 8 s was 0.951 and 0.947 of the limit, against
            # 0.959 and 0.954 over 10 s (shared/measurements/2026-11-26, the quick runs' telemetry),
            # all far above the 0.80 warning floor. The pulse test 10 s per period (2 s with
            # --quick: 100 swings at 20 ms, 2 at 1 s, the fewest its 1 s period is judged on).
            "power_s": 120, "quick_power_s": 8, "pulse_s": 10, "quick_pulse_s": 2,
            # The memory test's patterns once over (0), by default: on an H100 the quick ones sweep
            # 70 GiB five times in under 2 s (2026-11-26), where DCGM's memtest and cuda_memtest run
            # minutes; a profile that wants their length asks for it here.
            "memtest_s": 0, "quick_memtest_s": 0},
    "nic": {"streams": 4, "traffic_s": 10, "quick_traffic_s": 5},
}


def unit_of(key: str) -> str:
    return next((u for suffix, u in _UNITS if key.endswith(suffix)), "")


@dataclass
class Profile:
    name: str
    path: Path
    data: dict[str, Any]
    chain: list[str] = field(default_factory=list)  # this profile, then what it extends
    notices: list[str] = field(default_factory=list)  # how it was resolved for these GPUs, when that needs saying

    @property
    def description(self) -> str:
        return self.data.get("description", "")

    @property
    def kind(self) -> str:
        return self.data.get("kind", "gpu")

    def section(self, name: str) -> dict[str, Any]:
        return self.data.get(name, {})

    def get(self, section: str, key: str, default: Any = None) -> Any:
        return self.section(section).get(key, default)

    def threshold(self, section: str, key: str) -> Threshold | None:
        raw = self.section(section).get(key)
        if raw is None:
            return None
        return make_threshold(key, raw, self.data.get("warn_band", DEFAULT_WARN_BAND))

    @property
    def baseline_path(self) -> Path | None:
        """The golden baseline the profile names (`baseline = FILE`, relative to the profile's file)."""
        ref = self.data.get("baseline")
        if not ref:
            return None
        return Path(ref) if Path(ref).is_absolute() else Path(self.path).parent / ref

    @property
    def digest(self) -> str:
        """sha256 of the resolved content: two runs with equal digests applied the same rules."""
        canon = json.dumps(self.data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()

    def accepts_model(self, model: str) -> bool:
        patterns = self.get("gpu", "models", ["*"])
        return any(fnmatch.fnmatch(model.lower(), p.lower()) for p in patterns)

    def chosen_by_auto(self) -> "Profile":
        """The profile as `--profile auto` applies it: without the host floors that say how a buyer
        configured the host (HOST_CONFIG_FLOORS: cores, memory), which the GPUs found cannot tell
        (an 8x H100 SXM5 node with 64 cores and 1 TB is not a DGX H100 missing half of both), with a
        notice naming what was left out. Named (`--profile NAME`), the profile applies them all."""
        host = self.section("host")
        left = {k: host[k] for k in HOST_CONFIG_FLOORS if k in host}
        if not left:
            return self
        data = json.loads(json.dumps(self.data))
        for k in left:
            del data["host"][k]
        said = ", ".join(f"{k} {make_threshold(k, v, 0).fail:g}" for k, v in left.items())
        notice = (f"profile {self.name} (chosen by auto from the GPUs): its host floors ({said}) are left out, as the "
                  f"host's cores and memory are how it was bought, not a fault; name the profile (--profile {self.name}) "
                  "or a baseline to apply them")
        return Profile(self.name, self.path, data, self.chain, self.notices + [notice])

    def with_gpu_count(self, count: int) -> "Profile":
        data = json.loads(json.dumps(self.data))
        data.setdefault("gpu", {})["count"] = count
        return Profile(self.name, self.path, data, self.chain, self.notices)

    @property
    def sku(self) -> Sku | None:
        """The one SKU whose floors the profile applies; None when it accepts several (their
        conservative floors apply) or names none."""
        skus = self.data.get("skus", [])
        return BY_KEY[skus[0]] if len(skus) == 1 else None

    def floors(self) -> dict[str, dict[str, float]]:
        """Every [gpu] floor and ceiling as resolved: what the GPUs were judged against."""
        return {k: self.threshold("gpu", k).to_dict() for k in self.section("gpu")
                if k.startswith(("min_", "max_"))}

    def summary(self) -> dict[str, Any]:
        sku = self.sku
        return {"name": self.name, "path": str(self.path), "sha256": self.digest,
                "chain": self.chain, "kind": self.kind, "skus": self.data.get("skus", []),
                "sku": sku.key if sku else None, "floors": self.floors(), "notices": self.notices}


def make_threshold(key: str, raw: Any, band: float) -> Threshold:
    kind = "min" if key.startswith("min_") else "max"
    if isinstance(raw, dict):
        fail = float(raw["fail"])
        warn = float(raw["warn"]) if "warn" in raw else _banded(kind, fail, band)
    else:
        fail = float(raw)
        warn = _banded(kind, fail, band)
    return Threshold(key, kind, fail, warn, unit_of(key))


def _banded(kind: str, fail: float, band: float) -> float:
    # Rounded to 12 significant digits: 0.9 x 1.05 must be 0.945, not 0.9450000000000001, or a value
    # exactly at the warning level would warn. Never rounded past the limit itself (a limit of more
    # than 12 digits with no band: 100000.6484375 became a warning level of 100000.648438 beyond it).
    warn = float(f"{fail * (1 + band) if kind == 'min' else fail * (1 - band):.12g}")
    return max(warn, fail) if kind == "min" else min(warn, fail)


# ---------------------------------------------------------------- loading


def list_profiles() -> list[Profile]:
    """The shipped profile files (the SKU profiles are in nodeqc.core.skus.SKUS)."""
    return [load_profile(p.stem) for p in sorted(profiles_dir().glob("*.toml"))]


def load_profile(ref: str, sku: str | None = None) -> Profile:
    """Load a shipped profile by name, a SKU's profile by its key, or a profile file by path, with
    the floors of `sku` (one of those it accepts) or else of its slowest SKU; raise UsageError if it
    is bad."""
    name = None
    if ref in BY_KEY and not _is_file_ref(ref) and not (profiles_dir() / f"{ref}.toml").is_file():
        name, sku = ref, ref
        ref = BY_KEY[ref].family
    path = _locate(ref, None)
    data, chain = _resolve(path, [], sku)
    if sku is not None:
        if sku not in data.get("skus", []):
            raise UsageError(f"{_shown(path)}: does not accept the SKU {sku} (skus: {', '.join(data.get('skus', [])) or 'none'})")
        data["skus"] = [sku]
    if name:
        data["description"] = f"{BY_KEY[name].name}, any number of GPUs (profile {ref} for this SKU)"
    for section, defaults in DEFAULTS.items():
        data[section] = {**defaults, **data.get(section, {})}
    _check_complete(path, data)
    profile = Profile(name or path.stem, path, data, [name] + chain if name else chain)
    _check_baseline(profile)
    return profile


def _check_baseline(profile: Profile) -> None:
    """A profile's `baseline =` file is read and checked with the profile, so a bad one stops the
    command line (exit 2) and the app's Start before anything runs, not when the run reaches it."""
    if profile.baseline_path is None:
        return
    from nodeqc.spec.baseline import Baseline

    try:
        Baseline.load(profile.baseline_path, profile)
    except UsageError as e:
        text = str(e)
        raise UsageError(text if text.startswith("profile ") else f"profile {profile.name}: {text}") from None


def load_for(ref: str, gpus: list[Any]) -> Profile:
    """The profile `ref` resolved for these GPUs (nodeqc.backends.base.GpuInfo): when they are all
    one SKU the profile accepts, that SKU's floors; otherwise its conservative floors, with a
    notice saying why."""
    profile = load_profile(ref)
    accepted = profile.data.get("skus", [])
    live = [g for g in gpus if not g.lost]
    if not accepted or not live:
        return profile
    found = {g.subject: identify(g) for g in live}
    kinds = {s.key if s else None for s in found.values()}
    if len(kinds) == 1 and None not in kinds:
        sku = next(iter(found.values()))
        if sku.key in accepted:
            if len(accepted) == 1:
                return profile
            resolved = load_profile(ref, sku.key)
            resolved.notices = [f"profile {profile.name}: the GPUs are {sku.name} (PCI device "
                                f"0x{_device_id(live[0])}): the floors of {sku.key} apply"]
            return resolved
    notices, said = [], set()
    for g in live:
        sku = found[g.subject]
        if (g.name, g.pci_device_id) in said:
            continue  # one notice per kind of GPU, not one per GPU
        said.add((g.name, g.pci_device_id))
        if sku is None and profile.accepts_model(str(g.name)):
            notices.append(f"{g.name} (PCI device 0x{_device_id(g)}) is a GPU nodeqc has no figures for: "
                           f"profile {profile.name} applies the floors of the slowest SKU it accepts")
        elif sku is not None and sku.key not in accepted:
            notices.append(f"{sku.name} is not among the SKUs profile {profile.name} accepts "
                           f"({', '.join(accepted)}): the floors of the slowest of them apply")
    if len(kinds - {None}) > 1:
        notices.append(f"the GPUs are of several SKUs ({', '.join(sorted(kinds - {None}))}): profile "
                       f"{profile.name} applies the floors of the slowest SKU it accepts")
    profile.notices = notices
    return profile


def _device_id(gpu: Any) -> str:
    return f"{gpu.pci_device_id:04x}" if isinstance(gpu.pci_device_id, int) else "unknown"


def _is_file_ref(ref: str) -> bool:
    return ref.endswith(".toml") or "/" in ref


def _locate(ref: str, beside: Path | None) -> Path:
    if _is_file_ref(ref):
        path = Path(ref) if beside is None or Path(ref).is_absolute() else beside / ref
        if path.is_dir():
            raise UsageError(f"{ref}: a directory, not a profile file (name a .toml file, or a profile nodeqc "
                             f"ships: `nodeqc profiles` lists them)")
        if not path.exists():  # one that is there but no file (a FIFO) is told so where it is read
            looked = f" (looked for {path})" if path != Path(ref) else ""
            stem = Path(ref).name.removesuffix(".toml")
            named = (f'; a profile nodeqc ships is named by its name alone: "{stem.lower()}"'
                     if stem.lower() in _profile_names() else "")
            raise UsageError(f"{ref}: profile file not found{looked}{named}")
        return path
    candidates = ([beside / f"{ref}.toml"] if beside else []) + [profiles_dir() / f"{ref}.toml"]
    for c in candidates:
        if c.is_file():
            return c
    names = _profile_names()
    known = ", ".join(names)
    # Names are lower case: "H100" means h100, never the v100 a case-sensitive match would offer.
    by_lower = {n.lower(): n for n in names}
    hint = difflib.get_close_matches(ref.lower(), list(by_lower), n=1)
    extra = f" (did you mean {by_lower[hint[0]]}?)" if hint else ""
    raise UsageError(f'no profile named "{ref}"{extra}; known: {known}')


def _profile_names() -> list[str]:
    return sorted({p.stem for p in profiles_dir().glob("*.toml")} | set(BY_KEY))


MAX_EXTENDS = 32  # the shipped chains are three deep (hgx-h100 -> h100 -> generic)


def _resolve(path: Path, seen: list[Path], sku: str | None = None) -> tuple[dict[str, Any], list[str]]:
    if path.resolve() in seen:
        loop = " -> ".join(p.stem for p in seen + [path.resolve()])
        raise UsageError(f"{_shown(path)}: extends: circular ({loop})")
    if len(seen) >= MAX_EXTENDS:  # a thousand files deep ended in a RecursionError (2026-11-29 fuzzing)
        raise UsageError(f"{_shown(path)}: extends: more than {MAX_EXTENDS} profiles deep")
    raw = _read_toml(path)
    _validate(path, raw)
    parent_ref = raw.get("extends")
    own = {k: v for k, v in raw.items() if k != "extends"}
    if parent_ref is None:
        parent, chain = {}, []
    else:
        try:
            parent_path = _locate(parent_ref, path.parent)
        except UsageError as e:
            raise UsageError(f"{_shown(path)}: extends: {e}") from None
        parent, chain = _resolve(parent_path, seen + [path.resolve()], sku)
    merged = _merge(parent, own)
    if "skus" in raw:
        layer = _sku_layer(raw["skus"], sku)
        clash = sorted(set(layer) & set(raw.get("gpu", {})) - {"models", "dtypes"})
        if clash:
            raise UsageError(f"{_shown(path)}: [gpu] {clash[0]}: set by the profile's skus (nodeqc/core/skus.py, "
                             "calibration.py); set it in a profile that extends this one")
        merged = _merge(merged, {"gpu": layer})
    return merged, [path.stem] + chain


def _sku_layer(accepted: list[str], sku: str | None) -> dict[str, Any]:
    """What a profile's `skus` give it: with one SKU chosen among them, that SKU's settings;
    otherwise the floors that hold for all of them (each the slowest SKU's)."""
    if sku in accepted or len(accepted) == 1:
        return calibration.sku_floors(BY_KEY[sku if sku in accepted else accepted[0]])
    return calibration.conservative_floors(BY_KEY[k] for k in accepted)


MAX_PROFILE_BYTES = 1 << 20  # the largest shipped profile is some 3 kB


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return as_toml(read_input(path, MAX_PROFILE_BYTES, "profile"))
    except UnreadableInput as e:
        raise UsageError(f"{_shown(path)}: {e}") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and k in SCHEMA else v
    return out


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _validate(path: Path, raw: dict[str, Any]) -> None:
    validate(_shown(path), SCHEMA, raw)


def _check_complete(path: Path, data: dict[str, Any]) -> None:
    where = _shown(path)
    if "description" not in data:
        raise UsageError(f"{where}: description: missing (one line saying what the profile is for)")
    if data.get("baseline") == "":  # said nothing, and took no baseline (2026-11-29 fuzzing)
        raise UsageError(f"{where}: baseline: an empty path (name a golden baseline file, or leave the key out)")
    host = data.get("host", {})
    if host.get("fio_scratch") == "" or "" in host.get("fio_targets", []):  # host.nvme gone, or a drive "failed"
        key = "fio_scratch" if host.get("fio_scratch") == "" else "fio_targets"
        raise UsageError(f"{where}: [host] {key}: an empty path (name the file or device, or leave the key out)")
    if data.get("kind") == "node" and "count" not in data.get("gpu", {}):
        raise UsageError(f"{where}: [gpu] count: a node profile must fix the GPU count")
    parse_peers(data.get("nic", {}).get("peers", []), where=f"{where}: [nic] peers:")
    run = data.get("run", {})
    if run.get("stall_timeout_s", 1) > run.get("startup_timeout_s", 1e9):
        raise UsageError(f"{where}: [run] stall_timeout_s: must not exceed startup_timeout_s")


def version_tuple(v: str) -> tuple[int, ...]:
    """'535.104.05' -> (535, 104, 5); non-numeric parts (a driver's 'N/A') give ()."""
    try:
        return tuple(int(p) for p in v.strip().split("."))
    except ValueError:
        return ()


SXM_GPU_COUNTS = (1, 2, 4, 8)  # a baseboard's GPUs (HGX 4- and 8-GPU), and a cloud VM's share of them


def suggest_profile(gpus: list[Any]) -> str:
    """The shipped profile that fits these GPUs (nodeqc.backends.base.GpuInfo) best: a node profile
    whose count, models and SKUs match (8x H100 SXM5: hgx-h100); else, when they are all one known
    SKU, that SKU's profile; else a family profile that accepts their models (its conservative
    floors: load_for says why); else generic."""
    live = [g for g in gpus if not g.lost]
    if not live:
        return "generic"
    models = [str(g.name) for g in live]
    skus = {identify(g) for g in live}
    profiles = [p for p in list_profiles() if p.name != "generic"]
    def node_of(p: Profile) -> bool:
        return p.kind == "node" and all(p.accepts_model(m) for m in models) and \
            (not p.data.get("skus") or all(s is not None and s.key in p.data["skus"] for s in skus))

    for p in profiles:
        if node_of(p) and p.get("gpu", "count") == len(gpus):
            return p.name
    # SXM GPUs come on baseboards of 4 or 8, and clouds pass 1, 2, 4 or 8 of them to a VM: any other
    # count is a board that lost a GPU (7 of 8 off the bus), which the board's node profile fails
    # (GPU_COUNT) where the SKU's profile accepts any count (the 2026-11-28 advice review: an HGX
    # H100 with 7 GPUs passed, exit 0).
    if len(gpus) not in SXM_GPU_COUNTS and None not in skus and all(s.form == "sxm" for s in skus):
        for p in profiles:
            if node_of(p) and int(p.get("gpu", "count", 0)) > len(gpus):
                return p.name
    if len(skus) == 1 and None not in skus:
        return next(iter(skus)).key
    for p in profiles:
        if p.kind == "gpu" and all(p.accepts_model(m) for m in models):
            return p.name
    return "generic"

"""What nodeqc knows of machines: `nodeqc profiles` (the profiles and SKUs a node is held to),
`nodeqc scenarios` (the simulated nodes and the faults they take) and `nodeqc capture` (a real
machine's NVML answers, for --replay)."""

from __future__ import annotations

import sys
from pathlib import Path

from nodeqc.core.arguments import Parser, number_in
from nodeqc.core.errors import UsageError


def cmd_profiles(argv: list[str]) -> int:
    from nodeqc.core.text import clean, clean_lines
    from nodeqc.spec.profile import SCHEMA, list_profiles, load_profile

    p = Parser(prog="nodeqc profiles", description="List the profiles, or show one resolved.")
    p.add_argument("name", nargs="?", help="show this profile's resolved settings and limits")
    args = p.parse_args(argv)
    if args.name:
        prof = load_profile(args.name)
        # The chain starts with the profile itself: "extends" names only what it inherits from.
        parents = prof.chain[1:]
        # A profile file's words are anyone's: escaped as a report's are (a description's ESC and BEL reached the terminal).
        print(clean_lines(f"{prof.name}: {prof.description}\n  file {prof.path}\n"
                          f"  extends {' -> '.join(parents) if parents else 'nothing (a base profile)'}\n  sha256 {prof.digest}"))
        sku = prof.sku
        if sku is not None:
            print(f"  sku {sku.key}: {sku.name}, PCI {', '.join(f'0x{i:04x}' for i in sku.pci_device_ids)} (floors: nodeqc/core/skus.py)")
            print(f"  healthy figures: {_provenance(sku)}")
        elif prof.data.get("skus"):
            print(f"  skus {', '.join(prof.data['skus'])}: the floors of the slowest until the GPUs are known")
            from nodeqc.core.skus import BY_KEY
            for key in prof.data["skus"]:
                if key in BY_KEY:
                    print(f"    {key} healthy figures: {_provenance(BY_KEY[key])}")
        for section in ("gpu", "host", "nic", "run"):
            print(f"[{section}]")
            for key in SCHEMA[section]:
                if key not in prof.section(section):
                    continue
                # Only limits have a warning band: a version floor (min_driver) is shown as written.
                t = prof.threshold(section, key) if SCHEMA[section][key].kind == "threshold" else None
                shown = t.describe() if t else prof.get(section, key)
                print(clean(f"  {key:<22} {shown}"))
        return 0
    profiles = list_profiles()
    width = max(10, *(len(p.name) for p in profiles))
    for prof in profiles:
        count = prof.get("gpu", "count")
        gpus = f"{count} GPUs" if count else "any count"
        print(clean(f"{prof.name:<{width}} {prof.kind:<4} {gpus:<10} {prof.description}"))
    _print_skus()
    return 0


def _print_skus() -> None:
    """The SKU table (nodeqc/core/skus.py): how each SKU is recognised, its healthy figures, the floors
    the calibration rule makes of them, and where the figures come from."""
    from nodeqc.core.skus import SKUS
    from nodeqc.spec import calibration

    print(f"\nSKUs, each a profile by its key; floors warn below {calibration.WARN_FRACTION:.0%} and fail below "
          f"{calibration.FAIL_FRACTION:.0%} of the healthy figure (TFLOP/s, GB/s):")
    for sku in SKUS:
        ids = ", ".join(f"0x{i:04x}" for i in sku.pci_device_ids)
        print(f"{sku.key:<19} PCI {ids:<14} {sku.name}, {sku.memory_gib:g} GiB, {sku.default_power_w:g} W"
              f" ({'measured' if sku.measured else 'not measured'})")
        figures = {**sku.healthy_tflops, "hbm": sku.healthy_hbm_gbps, "h2d": sku.healthy_h2d_gbps,
                   "d2h": sku.healthy_d2h_gbps}
        print("  healthy " + ", ".join(f"{k} {v:g}" for k, v in figures.items()))
        print("  fail <  " + ", ".join(f"{k} {calibration.floor(v)['fail']:g}" for k, v in figures.items()))
        print(f"  source: {sku.source}")
        if sku.estimated:
            print(f"  {_provenance(sku)}")


def _provenance(sku) -> str:
    """Which of a SKU's healthy figures were measured (or published) and which are estimates: a floor
    made of an estimate may be wrong by more than its warning band."""
    figures = [*sku.healthy_tflops, "hbm"]
    known = [f for f in figures if f not in sku.estimated]
    guessed = [f for f in figures if f in sku.estimated]
    parts = [f"{'measured' if sku.measured else 'published'}: {', '.join(known)}"] if known else []
    if guessed:
        parts.append(f"estimates (datasheet-derived, not measured): {', '.join(guessed)}")
    if sku.not_burned:
        from nodeqc.core.skus import NOT_BURNED_REASON
        parts.append(f"not burned: {', '.join(sku.not_burned)} ({NOT_BURNED_REASON})")
    return "; ".join(parts)


def cmd_scenarios(argv: list[str]) -> int:
    from nodeqc.backends.sim.faults import GPU_FAULTS, HOST_FAULTS, NIC_FAULTS
    from nodeqc.backends.sim.scenario import list_scenarios, load_scenario

    p = Parser(prog="nodeqc scenarios", description="List the built-in simulated nodes and the faults they take.")
    p.parse_args(argv)
    names = list_scenarios()
    width = max(10, *(len(n) for n in names))
    for name in names:
        s = load_scenario(name)
        print(f"{name:<{width}} {s.gpu_count} x {s.gpu_model.name:<24} {s.data.get('description', '')}")
    print("any SKU's key (nodeqc profiles): one GPU of that SKU in a cloud VM (16 cores, 125.9 GiB); "
          "h100-sxm5-80gb and h200-sxm-141gb as measured (no BMC, EDAC or AER)")
    print("\nfaults (--inject gpuN:FAULT[=VALUE] / nicN:FAULT[=VALUE] / host:FAULT[=VALUE]):")
    for target, vocab in (("gpu", GPU_FAULTS), ("nic", NIC_FAULTS), ("host", HOST_FAULTS)):
        for name, (parser, text) in vocab.items():
            print(f"  {target}{'' if target == 'host' else 'N'}:{name}{'=VALUE' if parser else '':<7} {text}")
    return 0


def cmd_capture(argv: list[str]) -> int:
    from nodeqc.backends.host import LinuxHost
    from nodeqc.core.errors import BackendUnavailable
    from nodeqc.run.capture import capture, write_capture
    from nodeqc.run.flow import ensure_writable

    p = Parser(prog="nodeqc capture", description="Record this machine's NVML answers (inventory, counters, "
               "telemetry under load) for replay with --replay.")
    p.add_argument("out", help="the capture file to write (JSON)")
    # Bounded (the 2026-11-29 fuzzing: --hz 1e-300 overflowed a sleep, --seconds 1e300 ran on for ever):
    # ten minutes at up to 10 Hz, which a replay's 16 MiB holds for eight GPUs (50 Hz made some 22 MiB).
    p.add_argument("--seconds", type=number_in(1, 600), default=10.0, help="seconds of telemetry, 1 to 600 (default 10)")
    p.add_argument("--hz", type=number_in(0.1, 10), default=4.0, help="telemetry samples per second, 0.1 to 10 (default 4)")
    p.add_argument("--no-load", action="store_true", help="do not load the GPUs while sampling")
    args = p.parse_args(argv)
    out = Path(args.out)
    ensure_writable(out.parent if str(out.parent) else Path("."))
    try:
        data = capture(args.seconds, args.hz, not args.no_load, LinuxHost().info())
    except BackendUnavailable as e:
        raise UsageError(f"capture: {e}") from None
    write_capture(out, data)
    print(f"nodeqc: captured {len(data['devices'])} GPU(s); load: {data['load']}", file=sys.stderr)
    print(out)
    return 0

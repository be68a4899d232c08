"""Profiles: every shipped one loads and cites its sources; broken ones fail with one precise line."""

import re
from pathlib import Path

import pytest

from nodeqc.backends.base import GpuInfo
from nodeqc.core.errors import UsageError
from nodeqc.core.resources import profiles_dir
from nodeqc.core.skus import BY_KEY
from nodeqc.spec import calibration
from nodeqc.spec.profile import SCHEMA, list_profiles, load_for, load_profile, suggest_profile

REQUIRED = {"a100", "h100", "h200", "v100", "t4", "l40s", "dgx-a100", "hgx-h100", "generic"}


def test_required_profiles_ship():
    assert REQUIRED <= {p.name for p in list_profiles()}


@pytest.mark.parametrize("path", sorted(profiles_dir().glob("*.toml")), ids=lambda p: p.stem)
def test_every_threshold_cites_a_source(path: Path):
    """Each min_/max_ key has a comment right above it (or above the run of keys it belongs to)."""
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines):
        if not re.match(r"^(min|max)_\w+\s*=", line):
            continue
        k = n - 1
        while k >= 0 and re.match(r"^(min|max)_\w+\s*=", lines[k]):
            k -= 1
        assert k >= 0 and lines[k].lstrip().startswith("#"), f"{path.name}:{n + 1}: {line.split('=')[0].strip()} has no source comment"


def test_node_profiles_fix_the_count_and_single_model_profiles_do_not():
    profiles = {p.name: p for p in list_profiles()}
    assert profiles["dgx-a100"].get("gpu", "count") == 8 and profiles["dgx-a100"].kind == "node"
    assert profiles["hgx-h100"].get("gpu", "count") == 8
    for name in ("a100", "h100", "h200", "v100", "t4", "l40s", "generic"):
        assert profiles[name].get("gpu", "count") is None, name


def test_generic_has_no_absolute_floors():
    generic = load_profile("generic")
    floors = [k for k in generic.section("gpu") if k.startswith("min_") and k != "min_power_fraction"]
    assert floors == []


def test_extends_merges_key_by_key():
    dgx = load_profile("dgx-a100")
    assert dgx.chain == ["dgx-a100", "a100", "generic"]
    assert dgx.get("gpu", "pcie_gen") == 4  # from a100
    assert dgx.threshold("gpu", "max_pcie_replays").fail == 80  # from generic
    # From its SKUs (A100 SXM4 40/80 GB, nodeqc/core/skus.py), above a100's, which serve the PCIe 40GB too.
    assert dgx.threshold("gpu", "min_bf16_tflops").fail == 216 > load_profile("a100").threshold("gpu", "min_bf16_tflops").fail
    assert dgx.get("run", "quick_burn_s") == 30  # default


def test_profile_by_path_and_digest_is_stable(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('description = "mine"\nextends = "h100"\n[gpu]\nmax_temp_c = 80\n')
    a, b = load_profile(str(p)), load_profile(str(p))
    assert a.digest == b.digest and a.name == "mine"
    assert a.threshold("gpu", "max_temp_c").fail == 80
    assert a.digest != load_profile("h100").digest


def test_a_profile_beside_a_user_profile_is_found_before_the_shipped_one(tmp_path):
    (tmp_path / "base.toml").write_text('description = "base"\n[gpu]\nmax_temp_c = 70\n')
    (tmp_path / "child.toml").write_text('description = "child"\nextends = "base"\n')
    assert load_profile(str(tmp_path / "child.toml")).threshold("gpu", "max_temp_c").fail == 70


BROKEN = [
    ('description = "x"\n[gpu]\nmin_bf16_tflops = "fast"\n', '[gpu] min_bf16_tflops: expected a number, got "fast"'),
    ('description = "x"\n[gpu]\nmin_bf16_tflop = 5\n', "[gpu] min_bf16_tflop: unknown key (did you mean min_bf16_tflops?)"),
    ('description = "x"\n[gpu]\nmax_temp_c = { fail = 80, warn = 90 }\n', "[gpu] max_temp_c: warn (90) must not be above fail (80) for a ceiling"),
    ('description = "x"\n[gpu]\nmin_hbm_gbps = { fail = 100, warn = 90 }\n', "[gpu] min_hbm_gbps: warn (90) must not be below fail (100) for a floor"),
    ('description = "x"\n[gpu]\nmin_hbm_gbps = { warn = 90 }\n', "[gpu] min_hbm_gbps: a threshold table needs fail = NUMBER"),
    ('description = "x"\n[gpu]\nmin_hbm_gbps = { fail = 1, lo = 2 }\n', "[gpu] min_hbm_gbps: unknown field 'lo'"),
    ('description = "x"\n[gpu]\nmin_hbm_gbps = -5\n', "[gpu] min_hbm_gbps: expected a number >= 0, got -5"),
    # An integer past a float's range ended the load in OverflowError, naming nothing (2026-11-29 fuzzing).
    ('description = "x"\n[gpu]\nmax_temp_c = 1' + "0" * 400 + "\n",
     "[gpu] max_temp_c: expected a number, got a whole number of 401 digits, past 2^63"),
    ('description = "x"\n[gpu]\nmax_temp_c = { fail = 1' + "0" * 400 + ", warn = 80 }\n",
     "[gpu] max_temp_c: fail: expected a number, got a whole number of 401 digits, past 2^63"),
    ('description = "x"\n[gpu]\ncount = 0\n', "[gpu] count: expected at least 1, got 0"),
    ('description = "x"\n[gpu]\ncount = 2.5\n', "[gpu] count: expected an integer, got 2.5"),
    ('description = "x"\n[gpu]\npcie_width = 12\n', "[gpu] pcie_width: expected one of 1, 2, 4, 8, 16, 32, got 12"),
    ('description = "x"\n[gpu]\nrequire_ecc = "yes"\n', '[gpu] require_ecc: expected true or false, got "yes"'),
    ('description = "x"\n[gpu]\ndtypes = ["bf16", "int4"]\n', '[gpu] dtypes: unknown entry "int4"'),
    ('description = "x"\n[gpu]\nmodels = []\n', "[gpu] models: expected at least one entry"),
    ('description = "x"\n[gpu]\nmin_driver = "r535"\n', '[gpu] min_driver: expected a version like "535.104", got "r535"'),
    # str.isdigit() took another script's digits ("٥٣٥" is 535 in Arabic-Indic); a version is ASCII digits
    ('description = "x"\n[gpu]\nmin_driver = "\u0665\u0663\u0665"\n', '[gpu] min_driver: expected a version like'),
    # accepted as any text before, and never checked: now a version every GPU must report
    ('description = "x"\n[gpu]\ncompute_capability = "x"\n', '[gpu] compute_capability: expected a version like'),
    ('description = "x"\ngpu = 5\n', "[gpu]: expected a table, got 5"),
    ('description = "x"\n[gpus]\ncount = 8\n', "gpus: unknown key (did you mean gpu?)"),
    ('description = "x"\nkind = "rack"\n', 'kind: expected one of "gpu", "node", got "rack"'),
    ('description = "x"\nkind = "node"\n', "[gpu] count: a node profile must fix the GPU count"),
    ('[gpu]\ncount = 1\n', "description: missing"),
    ('description = "x"\n[run]\nsample_hz = 1000\n', "[run] sample_hz: expected at most 50, got 1000"),
    # --burn-in refuses over 30 days; the profile's own burn-in took 1e12 s and ran until killed
    ('description = "x"\n[run]\nburn_in_s = 1e12\n', "[run] burn_in_s: expected at most 2.592e+06, got"),
    ('description = "x"\n[run]\nstall_timeout_s = 500\nstartup_timeout_s = 100\n', "[run] stall_timeout_s: must not exceed startup_timeout_s"),
    ('description = "x"\nextends = "zzz"\n', 'extends: no profile named "zzz"'),
    ('description = "x\n', "invalid TOML: "),
    ('description = "x"\n[gpu]\n[gpu]\n', "invalid TOML: "),
    ('description = "x"\n[gpu]\nmodels = ' + "[" * 5000 + "]" * 5000 + "\n",
     "invalid TOML: arrays or tables nested too deeply"),
    ("# " + "x" * (1 << 20) + "\n", "more than any profile (1048576 bytes): not a profile"),
]


@pytest.mark.parametrize("text, message", BROKEN, ids=[m.split(":")[0][:40] for _, m in BROKEN])
def test_broken_profile_names_file_table_and_key(tmp_path, text, message):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as e:
        load_profile(str(path))
    text = str(e.value)
    assert text.startswith(str(path) + ":"), text
    assert message in text
    assert "\n" not in text


def test_circular_extends(tmp_path):
    (tmp_path / "a.toml").write_text('description = "a"\nextends = "b"\n')
    (tmp_path / "b.toml").write_text('description = "b"\nextends = "a.toml"\n')
    with pytest.raises(UsageError, match=r"circular \(a -> b -> a\)"):
        load_profile(str(tmp_path / "a.toml"))


def test_error_in_a_parent_names_the_parent(tmp_path):
    (tmp_path / "base.toml").write_text('description = "b"\n[host]\nmin_cpu_cores = "many"\n')
    (tmp_path / "child.toml").write_text('description = "c"\nextends = "base"\n')
    with pytest.raises(UsageError, match=r"base\.toml: \[host\] min_cpu_cores: expected a number"):
        load_profile(str(tmp_path / "child.toml"))


def test_unknown_name_suggests_and_lists():
    with pytest.raises(UsageError, match=r'no profile named "h10" \(did you mean h100\?\); known: a100, .*v100'):
        load_profile("h10")


def test_missing_file():
    with pytest.raises(UsageError, match="nope.toml: profile file not found"):
        load_profile("nope.toml")


def test_a_directory_given_as_a_profile_is_named_a_directory(tmp_path):
    with pytest.raises(UsageError) as e:  # it said "profile file not found" of a directory that is there
        load_profile(str(tmp_path) + "/")
    assert str(e.value).startswith(f"{tmp_path}/: a directory, not a profile file")


def test_a_name_in_upper_case_is_offered_its_own_profile_not_a_neighbour():
    # difflib alone, case-sensitive, offers v100 for "H100": the wrong GPU, one letter away.
    with pytest.raises(UsageError, match=r'no profile named "H100" \(did you mean h100\?\)'):
        load_profile("H100")


@pytest.mark.parametrize("ref", ["h100.toml", "profiles/h100.toml", "H100.toml"])
def test_extending_a_shipped_profile_by_its_file_name_says_where_it_looked_and_the_name_to_use(tmp_path, ref):
    (tmp_path / "mine.toml").write_text(f'description = "m"\nextends = "{ref}"\n')
    with pytest.raises(UsageError) as e:
        load_profile(str(tmp_path / "mine.toml"))
    assert str(e.value) == (f"{tmp_path / 'mine.toml'}: extends: {ref}: profile file not found (looked for "
                            f'{tmp_path / ref}); a profile nodeqc ships is named by its name alone: "h100"')


def test_a_missing_file_of_ones_own_gets_no_shipped_name(tmp_path):
    (tmp_path / "mine.toml").write_text('description = "m"\nextends = "site.toml"\n')
    with pytest.raises(UsageError) as e:
        load_profile(str(tmp_path / "mine.toml"))
    assert str(e.value).endswith(f"site.toml: profile file not found (looked for {tmp_path / 'site.toml'})")


def test_schema_units_follow_key_names():
    p = load_profile("hgx-h100")
    units = {k: p.threshold("gpu", k).unit for k in SCHEMA["gpu"] if k.startswith(("min_", "max_")) and p.get("gpu", k) is not None}
    assert units["min_bf16_tflops"] == "TFLOP/s" and units["min_hbm_gbps"] == "GB/s"
    assert units["max_temp_c"] == "C" and units["max_throttle_s"] == "s" and units["max_pcie_replays"] == ""


@pytest.mark.parametrize("models, expected", [
    (["NVIDIA H100 80GB HBM3"] * 8, "hgx-h100"),  # a node profile whose count, models and SKU match
    (["NVIDIA H100 80GB HBM3"] * 4, "h100-sxm5-80gb"),  # else the SKU's own profile
    (["NVIDIA H100 80GB HBM3"], "h100-sxm5-80gb"),  # one SXM GPU passed to a VM (the measured ones)
    # A count no SXM board or cloud slice has is a board that lost a GPU: its node profile fails it
    # (GPU_COUNT), where the SKU's profile accepted any count and passed (the 2026-11-28 advice review).
    (["NVIDIA H100 80GB HBM3"] * 7, "hgx-h100"),
    (["NVIDIA H100 80GB HBM3"] * 3, "hgx-h100"),
    (["NVIDIA H100 PCIe"] * 7, "h100-pcie-80gb"),  # PCIe cards come in any number
    (["NVIDIA H100 PCIe"] * 8, "h100-pcie-80gb"),  # 8 GPUs, but not the SKU hgx-h100 is built of
    (["NVIDIA A100-SXM4-80GB"] * 8, "dgx-a100"),
    (["NVIDIA A100-SXM4-40GB"] * 8, "dgx-a100"),
    (["NVIDIA A100 80GB PCIe"] * 2, "a100-pcie-80gb"),
    (["Tesla T4"], "t4"),
    (["NVIDIA H200"], "h200-sxm-141gb"),
    (["NVIDIA H100 96GB HBM3"], "h100"),  # an H100 nodeqc has no figures for: its family's profile
    (["NVIDIA GeForce RTX 4090"], "generic"),
    ([], "generic"),
])
def test_suggest_profile(models, expected):
    gpus = [GpuInfo(index=i, name=m, uuid=f"GPU-{i}", bus_id=f"0000:{i + 1:02x}:00.0") for i, m in enumerate(models)]
    assert suggest_profile(gpus) == expected


def test_with_gpu_count_does_not_touch_the_original():
    h100 = load_profile("h100")
    four = h100.with_gpu_count(4)
    assert four.get("gpu", "count") == 4 and h100.get("gpu", "count") is None
    assert four.digest != h100.digest


def test_single_gpu_profiles_pass_a_healthy_cloud_host():
    """The host the real H100 and H200 were measured on (one GPU, 16 cores, 125.9 GiB): how a buyer
    configured a host is no fault of its GPU, so only node profiles, from their datasheet, judge it."""
    from nodeqc.backends.base import HostInfo
    from nodeqc.checks import host as host_checks
    from nodeqc.core.model import Verdict

    cloud = HostInfo(hostname="vm", cores=16, threads=16, memory_bytes=135148564480, fabric_manager=False,
                     peer_memory_module="")
    singles = [p for p in list_profiles() if p.kind == "gpu"]
    assert len(singles) >= 7
    for p in singles:
        assert all(r.verdict is Verdict.PASS for r in host_checks.host_results(cloud, p)), p.name
    for p in [p for p in list_profiles() if p.kind == "node"]:
        verdicts = {r.name: r.verdict for r in host_checks.host_results(cloud, p)}
        assert verdicts["host.cpu"] is Verdict.FAIL and verdicts["host.memory"] is Verdict.FAIL, p.name


def _gpus(*specs):
    """GpuInfo for (name, PCI device id) pairs."""
    return [GpuInfo(index=i, name=name, uuid=f"GPU-{i}", bus_id=f"0000:{i + 1:02x}:00.0", pci_device_id=dev)
            for i, (name, dev) in enumerate(specs)]


def test_a_family_profile_resolves_to_the_sku_of_the_gpus():
    p = load_for("h100", _gpus(("NVIDIA H100 80GB HBM3", 0x2330)))
    assert p.sku.key == "h100-sxm5-80gb" and p.name == "h100"  # the profile asked for, resolved for the SKU
    assert p.floors() == load_profile("h100-sxm5-80gb").floors()
    assert p.notices == ["profile h100: the GPUs are H100 SXM5 80GB (PCI device 0x2330): the floors of "
                         "h100-sxm5-80gb apply"]
    # The SKU's bf16 warning level: 0.9 of its healthy 677.38, rounded up to a tenth (609.7).
    bf16_warn = calibration.floor(BY_KEY["h100-sxm5-80gb"].healthy_tflops["bf16"])["warn"]
    assert p.summary()["sku"] == "h100-sxm5-80gb" and p.summary()["floors"]["min_bf16_tflops"]["warn"] == bf16_warn
    pcie = load_for("h100", _gpus(("NVIDIA H100 PCIe", 0x2331)))
    assert pcie.threshold("gpu", "min_bf16_tflops").fail < p.threshold("gpu", "min_bf16_tflops").fail


def test_an_unknown_sku_of_a_known_family_gets_the_family_floors_with_a_notice():
    # 0x2339: an H100 SXM5 94GB (pci.ids), which nodeqc has no figures for.
    gpus = _gpus(("NVIDIA H100 94GB HBM2e", 0x2339), ("NVIDIA H100 94GB HBM2e", 0x2339))
    assert suggest_profile(gpus) == "h100"
    p = load_for("h100", gpus)
    assert p.sku is None and p.floors() == load_profile("h100").floors()
    assert p.notices == ["NVIDIA H100 94GB HBM2e (PCI device 0x2339) is a GPU nodeqc has no figures for: "
                         "profile h100 applies the floors of the slowest SKU it accepts"]


def test_mixed_or_unaccepted_skus_get_the_conservative_floors_with_a_notice():
    mixed = load_for("h100", _gpus(("NVIDIA H100 80GB HBM3", 0x2330), ("NVIDIA H100 PCIe", 0x2331)))
    assert mixed.sku is None and mixed.floors() == load_profile("h100").floors()
    assert mixed.notices[-1].startswith("the GPUs are of several SKUs (h100-pcie-80gb, h100-sxm5-80gb)")
    hgx = load_for("hgx-h100", _gpus(*[("NVIDIA H100 PCIe", 0x2331)] * 8))
    assert hgx.notices == ["H100 PCIe 80GB is not among the SKUs profile hgx-h100 accepts (h100-sxm5-80gb): "
                           "the floors of the slowest of them apply"]
    assert load_for("generic", _gpus(("NVIDIA H100 PCIe", 0x2331))).notices == []


def test_a_profile_naming_skus_cannot_also_set_their_floors(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('description = "x"\nextends = "h100"\nskus = ["h100-pcie-80gb"]\n[gpu]\nmin_bf16_tflops = 1\n')
    with pytest.raises(UsageError, match=r"x.toml: \[gpu\] min_bf16_tflops: set by the profile's skus"):
        load_profile(str(path))
    # A profile that extends one naming skus may set its own floor: it wins.
    path.write_text('description = "x"\nextends = "h100"\n[gpu]\nmin_bf16_tflops = 1\n')
    assert load_for(str(path), _gpus(("NVIDIA H100 80GB HBM3", 0x2330))).threshold("gpu", "min_bf16_tflops").fail == 1


# ---------------------------------------------------------------------- auto and the host floors

def _bought_smaller(tmp_path) -> Path:
    """The simulated 8x H100 SXM5 node on a host bought with 64 cores and 1 TB."""
    from nodeqc.core.resources import scenarios_dir

    text = (scenarios_dir() / "hgx-h100.toml").read_text()
    text = text.replace("cores = 112", "cores = 64").replace("threads = 224", "threads = 128")
    text = text.replace("memory_gib = 2015", "memory_gib = 1007")
    path = tmp_path / "hgx-h100-64c.toml"
    path.write_text(text)
    return path


def test_auto_leaves_out_the_host_floors_and_says_which(tmp_path, run_cli):
    """Issue 24: `--profile auto` on 8x H100 SXM5 with 64 cores and 1 TB picked hgx-h100 and failed
    host.cpu and host.memory ('reseat DIMMs'). Chosen by auto, the node profile judges the GPUs and
    says which host floors it left out; named, it applies them."""
    import base64
    import json

    scenario = _bought_smaller(tmp_path)
    auto = run_cli("--headless", "--simulate", str(scenario), "--quick", "--only", "host.cpu,host.memory",
                   "--out", str(tmp_path / "auto"))
    assert auto.returncode == 0, auto.stderr
    envelope = json.loads(next((tmp_path / "auto").glob("*.report.json")).read_text())
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["profile"]["name"] == "hgx-h100"
    assert {c["name"]: c["verdict"] for c in predicate["checks"]} == {"host.cpu": "pass", "host.memory": "pass"}
    said = [n for n in predicate["profile"]["notices"] if "chosen by auto" in n]
    assert said and "min_cpu_cores 112, min_memory_gib 1900" in said[0] and "--profile hgx-h100" in said[0]
    assert "min_cpu_cores 112, min_memory_gib 1900" in auto.stderr
    named = run_cli("--headless", "--simulate", str(scenario), "--profile", "hgx-h100", "--quick",
                    "--only", "host.cpu,host.memory", "--out", str(tmp_path / "named"))
    assert named.returncode == 1 and "[HOST_CPU]" in named.stderr and "[HOST_MEMORY]" in named.stderr


def test_a_profile_without_host_floors_is_left_as_it_is():
    gpus = [GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0", bus_id="0000:1b:00.0", pci_device_id=0x2330)]
    profile = load_for("h100", gpus)
    assert profile.chosen_by_auto() is profile
    node = load_profile("hgx-h100").chosen_by_auto()
    assert node.threshold("host", "min_cpu_cores") is None and node.threshold("host", "min_memory_gib") is None
    assert node.get("host", "fabric_manager") is True  # what the node needs to work stays
    assert load_profile("hgx-h100").threshold("host", "min_cpu_cores").fail == 112

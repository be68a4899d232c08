"""Fleet outliers: a GPU or node more than a set distance below its fleet's median for its SKU and
measure is an outlier (a warning, with its percentile), even when it clears the profile's floor.

Pure functions of figures taken from each node's newest report (nodeqc.archive.fleet gathers them). The
median and the median absolute deviation describe the fleet: both ignore the few bad parts they
are meant to find, where a mean and a standard deviation would be dragged towards them.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from nodeqc.core.figures import measure_label

# Figures whose unit says which way is better: rates (higher) and latencies (lower).
HIGHER_BETTER_UNITS = ("TFLOP/s", "GB/s", "Gb/s")
LOWER_BETTER_UNITS = ("us",)
# Defaults when a profile's [fleet] sets none. Healthy H100 SXM5s differed by about 5% in bf16 across
# three machines (shared/measurements/README.md: 747-782 TFLOP/s), so 10% below the median is well
# outside healthy spread; a fleet of fewer than 10 nodes is too small to call anyone an outlier.
DEFAULT_OUTLIER_PCT = 10.0
DEFAULT_MIN_FLEET = 10


@dataclass(frozen=True)
class FleetFigure:
    node: str
    subject: str  # gpu3 or node
    sku: str  # the GPU model, or "8x MODEL" for node figures
    measure: str  # check:value, e.g. stress.burn:bf16_tflops
    value: float
    unit: str

    @property
    def higher_better(self) -> bool:
        return self.unit not in LOWER_BETTER_UNITS


@dataclass(frozen=True)
class Distribution:
    sku: str
    measure: str
    unit: str
    count: int  # figures (GPUs or nodes)
    nodes: int
    median: float
    mad: float  # median absolute deviation
    p10: float
    p90: float
    values: tuple[float, ...]  # every figure, sorted
    node_medians: tuple[float, ...] = ()  # each node's median, sorted: the median, MAD, p10, p90 and percentile's

    def percentile(self, value: float) -> float:
        """Percent of the fleet's nodes (their medians) below this figure (ties count half)."""
        below = bisect_left(self.node_medians, value)
        equal = bisect_right(self.node_medians, value) - below
        return round(100.0 * (below + 0.5 * equal) / len(self.node_medians), 1)


@dataclass(frozen=True)
class Outlier:
    figure: FleetFigure
    median: float
    off_pct: float  # how far on the bad side of the median, in percent
    percentile: float

    def describe(self) -> str:
        f = self.figure
        side = "below" if f.higher_better else "above"
        return (f"{f.subject} {measure_label(f.measure, with_check=False)} {f.value:g} {f.unit} is {self.off_pct:.1f}% {side} the "
                f"fleet median {self.median:g} (percentile {self.percentile:g}, {f.sku})")


def _groups(figures: list[FleetFigure]) -> dict[tuple[str, str], list[tuple[int, FleetFigure]]]:
    """The figures by SKU and measure, each with its place in `figures`."""
    groups: dict[tuple[str, str], list[tuple[int, FleetFigure]]] = {}
    for i, f in enumerate(figures):
        groups.setdefault((f.sku, f.measure), []).append((i, f))
    return groups


def _distribution(sku: str, measure: str, fs: list[tuple[int, FleetFigure]]) -> Distribution:
    """Each node one voice: its own median. Over the GPUs' figures, one node's report of 200 fast GPUs
    set the fleet's median and made every honest node an outlier (2026-11-29 fuzzing); a node's GPUs
    are one machine's, and the fleet is its nodes."""
    by_node: dict[str, list[float]] = {}
    for _, f in fs:
        by_node.setdefault(f.node, []).append(f.value)
    nodes = sorted(statistics.median(v) for v in by_node.values())
    median = statistics.median(nodes)
    mad = statistics.median(abs(v - median) for v in nodes)
    q = statistics.quantiles(nodes, n=10, method="inclusive") if len(nodes) >= 2 else [nodes[0]] * 9
    return Distribution(sku, measure, fs[0][1].unit, len(fs), len(by_node), median, mad, q[0], q[-1],
                        tuple(sorted(f.value for _, f in fs)), tuple(nodes))


def distributions(figures: list[FleetFigure]) -> dict[tuple[str, str], Distribution]:
    return {key: _distribution(*key, fs) for key, fs in _groups(figures).items()}


def _off_pct(value: float, higher_better: bool, median: float) -> float:
    """How far a figure is on the bad side of its median, in percent (negative: the good side)."""
    return (median - value) / median * 100 if higher_better else (value - median) / median * 100


def outliers(figures: list[FleetFigure], outlier_pct: float = DEFAULT_OUTLIER_PCT,
             min_fleet: int = DEFAULT_MIN_FLEET) -> tuple[list[Outlier], dict[tuple[str, str], Distribution]]:
    """Every figure more than outlier_pct on the bad side of its SKU's and measure's median, where
    that fleet has at least min_fleet nodes; worst first (ties in the figures' order)."""
    groups = _groups(figures)
    dists = {key: _distribution(*key, fs) for key, fs in groups.items()}
    found: list[tuple[float, int, Outlier]] = []
    for key, fs in groups.items():
        d = dists[key]
        if d.nodes < min_fleet or d.median <= 0:
            continue
        # The sorted values say at once whether this fleet has an outlier at all: a fleet's archive
        # holds tens of thousands of figures and very few outliers, so most groups are passed over
        # without looking at each figure.
        higher_better = d.unit not in LOWER_BETTER_UNITS
        if max(_off_pct(d.values[0], higher_better, d.median), _off_pct(d.values[-1], higher_better, d.median)) <= outlier_pct:
            continue
        for i, f in fs:
            off = _off_pct(f.value, higher_better, d.median)
            if off > outlier_pct:
                found.append((-round(off, 2), i, Outlier(f, d.median, round(off, 2), d.percentile(f.value))))
    found.sort(key=lambda x: (x[0], x[1]))
    return [o for _, _, o in found], dists


def judge_run(own: list[FleetFigure], fleet: list[FleetFigure], outlier_pct: float = DEFAULT_OUTLIER_PCT,
              min_fleet: int = DEFAULT_MIN_FLEET) -> list[Any]:
    """This run's figures against the fleet's (other nodes' newest reports): a warning per GPU or
    node with figures more than outlier_pct on the bad side of the fleet median, with percentiles.
    Nothing when no SKU and measure of this run has a fleet of min_fleet nodes."""
    from nodeqc.core.model import CheckResult, Value, Verdict

    dists = distributions(fleet)
    judged, found = 0, {}
    for f in own:
        d = dists.get((f.sku, f.measure))
        if d is None or d.nodes < min_fleet or d.median <= 0:
            continue
        judged += 1
        off = _off_pct(f.value, f.higher_better, d.median)
        if off > outlier_pct:
            found.setdefault(f.subject, []).append(Outlier(f, d.median, round(off, 2), d.percentile(f.value)))
    if not judged:
        return []
    name = "fleet.outlier"
    nodes = max(d.nodes for d in dists.values())
    out = []
    for subject, outs in found.items():
        outs.sort(key=lambda o: -o.off_pct)
        worst = outs[0]
        out.append(CheckResult(
            name, subject, Verdict.WARN, "; ".join(o.describe() for o in outs) + ": it clears the floor but "
            "trails its fleet", code="FLEET_OUTLIER",
            values={"below_median_pct": Value(worst.off_pct, "%"), "percentile": Value(worst.percentile)},
            evidence={"outliers": [{"measure": o.figure.measure, "value": o.figure.value, "median": o.median,
                                    "off_pct": o.off_pct, "percentile": o.percentile} for o in outs],
                      "outlier_pct": outlier_pct},
            key="below_median_pct"))
    if not found:
        out.append(CheckResult(name, "node", Verdict.PASS, f"{judged} figure(s) within {outlier_pct:g}% of their "
                               f"fleet's median (up to {nodes} nodes)", values={"figures": Value(judged)}, key="figures"))
    return out

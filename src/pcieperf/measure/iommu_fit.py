"""Learn a host's IOMMU from its own counters: `pcieperf iommu fit`.

Measured IOTLB misses (and lookups) per second on the NIC's IIO stack, with the forwarding rate
and the port setup they were taken at, bound two platform parameters:

- the IOTLB reach: the model's misses per forwarded packet at each reach of a grid are set
  against the measured ones; the reaches whose prediction is within the tolerance form the
  fitted range (misses per packet are a step in the reach: about 1 while the mbufs in flight
  outgrow it, 0 once they fit, so counters bound the reach from one side);
- the walk throughput: when the rate is below what the setup reaches without IOMMU, the
  walkers are taken to be the bottleneck, so the measured walks per second are what they do
  (walkers = walks/s x busy time per walk); otherwise the walks per second are a lower bound.

Everything else comes from a base platform profile. The result is a profile file for
`--platform FILE`, each fitted number naming the counter file and the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pcieperf.dpdk import forwarding, port
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError, param, require_positive
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import IommuParams, Platform, Traffic, load_platform
from pcieperf.iommu.profiles import DEFAULT_PLATFORM, Param, PlatformProfile, load_platform_profile
from pcieperf.measure.explain import Explanation, port_setup, port_traffic
from pcieperf.measure.stacks import StackCounters
from pcieperf.units import significant

# Reaches tried: powers of two and their 1.5x, 16 to 16 Ki entries.
REACH_GRID = tuple(sorted({int(b * f) for b in (2**k for k in range(4, 15)) for f in (1, 1.5)}))
MATCH = 0.25  # a prediction within 25 % (or 0.02 misses per packet) of the measurement
MATCH_ABS = 0.02
BOUND_SHARE = 0.9  # below 90 % of the IOMMU-free rate, the walkers are taken as the limit
FIT_PACKETS = 50_000


@dataclass(frozen=True)
class Measured:
    """The stack's IOTLB counters, averaged over the file's samples."""

    stack: str
    samples: int
    misses_per_s: float
    misses_per_s_low: float
    misses_per_s_high: float
    lookups_per_s: float | None


def measured_iotlb(counters: StackCounters) -> Measured:
    """Mean IOTLB misses and lookups per second of one stack (lookups = hits + misses where
    the tool counts hits: pcm-iio on Skylake-SP / Cascade Lake)."""
    series = counters.series
    if "iotlb_miss" not in series:
        raise UsageError(
            f"{counters.file}: stack {counters.stack!r} has no IOTLB miss counter; iommu fit "
            "needs pcm-iio (IOTLB Miss) or another source that counts IOTLB misses"
        )
    misses = series["iotlb_miss"].value
    lookups = None
    if "iotlb_lookup" in series:
        lookups = float(np.mean(series["iotlb_lookup"].value))
    elif "iotlb_hit" in series:
        lookups = float(np.mean(series["iotlb_hit"].value + misses))
    return Measured(
        counters.stack,
        int(misses.size),
        float(np.mean(misses)),
        float(np.min(misses)),
        float(np.max(misses)),
        lookups,
    )


@dataclass(frozen=True)
class ReachPoint:
    """The model at one IOTLB reach: misses per forwarded packet, and the state it is in."""

    entries: int
    misses_per_fwd_pkt: float
    state: str


@dataclass(frozen=True)
class Fit:
    """What the counters say about the host's IOMMU, and the profile that follows."""

    measured: Measured
    pps: float
    misses_per_pkt: float
    lookups_per_pkt: float | None
    reach: list[ReachPoint]
    entries: Param
    walkers: Param
    walk_bound: bool
    mpps_no_iommu: float
    profile: PlatformProfile

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return {
            "stack": self.measured.stack,
            "samples": self.measured.samples,
            "pps": self.pps,
            "misses_per_s": self.measured.misses_per_s,
            "misses_per_pkt": self.misses_per_pkt,
            "lookups_per_pkt": self.lookups_per_pkt,
            "mpps_no_iommu": self.mpps_no_iommu,
            "walk_bound": self.walk_bound,
            "iotlb_entries": self.entries.as_dict(),
            "walkers": self.walkers.as_dict(),
            "reach": [vars(p) for p in self.reach],
            "platform": self.profile.as_dict(),
        }


def _matches(predicted: float, measured: float) -> bool:
    return abs(predicted - measured) <= max(MATCH * measured, MATCH_ABS)


def reach_curve(model: Model, setup: port.PortSetup) -> list[ReachPoint]:
    """Misses per forwarded packet over the reach grid (the load state decided per reach)."""
    points = []
    for entries in REACH_GRID:
        platform = replace(
            model.platform, iommu=replace(model.platform.iommu, iotlb_entries=entries)
        )
        r = Model(platform, model.traffic, model.packets).evaluate(setup)
        points.append(ReachPoint(entries, r.iotlb_misses_per_fwd_pkt, r.state))
    return points


def _entries_param(points: list[ReachPoint], measured: float, base: Param, file: str) -> Param:
    """The reach range the points allow: from the smallest to the largest matching reach,
    widened to the neighbouring grid reaches that do not match (the step lies between)."""
    ok = [i for i, p in enumerate(points) if _matches(p.misses_per_fwd_pkt, measured)]
    if not ok:
        shown = ", ".join(f"{p.entries}: {p.misses_per_fwd_pkt:.2f}" for p in points)
        raise UsageError(
            f"{file}: no IOTLB reach gives {measured:.3f} misses per packet for this setup "
            f"(reach: misses per packet = {shown}); check {param('pps')}, {param('rxd')}/"
            f"{param('txd')}, {param('page')} and {param('frame')}"
        )
    first, last = ok[0], ok[-1]
    low = points[first - 1].entries + 1 if first > 0 else points[first].entries
    high = points[last + 1].entries - 1 if last + 1 < len(points) else points[last].entries
    if last + 1 == len(points):
        high = max(high, int(base.high))
    inside = low <= base.value <= high
    value = int(base.value) if inside else round(float(np.sqrt(low * high)))
    return Param(
        float(value),
        float(low),
        float(high),
        "fit",
        f"iommu fit: {file} shows {measured:.3f} IOTLB misses per forwarded packet; the model "
        f"gives that for reaches {low}-{high} entries (value kept from the base profile when "
        "inside, else the geometric middle)",
    )


def _walkers_param(
    walks_per_s: float, bound: bool, iommu_params: IommuParams, base: Param, file: str
) -> Param:
    """Walkers at the base busy time per walk: equal to the measured walks when they bound the
    rate, at least the measured walks otherwise."""
    needed = walks_per_s * iommu_params.walk_busy_ns * 1e-9
    if bound:
        value = max(1, round(needed))
        return Param(
            float(value),
            float(max(1, int(np.floor(needed * 0.9)))),
            float(max(1, int(np.ceil(needed * 1.1)))),
            "fit",
            f"iommu fit: {file}: the rate is below the IOMMU-free rate, so the walkers bound it: "
            f"{walks_per_s / 1e6:.2f} M walks/s x {iommu_params.walk_busy_ns:.0f} ns busy per "
            "walk (+-10 %)",
        )
    low = max(1, int(np.ceil(needed)))
    return Param(
        float(max(base.value, low)),
        float(low),
        float(max(base.high, low)),
        "fit",
        f"iommu fit: {file}: the rate is not walk-bound, so the walkers do at least the "
        f"measured {walks_per_s / 1e6:.2f} M walks/s",
    )


def fit(
    counters: StackCounters,
    *,
    pps: float,
    setup: port.PortSetup,
    traffic: Traffic,
    platform: Platform,
    base: PlatformProfile,
    name: str,
    packets: int | None = FIT_PACKETS,
) -> Fit:
    """Fit the IOTLB reach and walk throughput of the host the counters come from."""
    require_positive(param("pps"), pps)
    measured = measured_iotlb(counters)
    per_pkt = measured.misses_per_s / pps
    model = Model(platform, traffic, packets)
    no_iommu = min(model.no_iommu(setup).mpps, traffic.line_mpps(setup.ports))
    points = reach_curve(model, setup)
    entries = _entries_param(points, per_pkt, base.params["iommu.iotlb_entries"], counters.file)
    bound = per_pkt > MATCH_ABS and pps * 1e-6 < BOUND_SHARE * no_iommu
    walkers = _walkers_param(
        measured.misses_per_s, bound, platform.iommu, base.params["iommu.walkers"], counters.file
    )
    params = dict(base.params)
    params["iommu.iotlb_entries"] = entries
    params["iommu.walkers"] = walkers
    profile = PlatformProfile(
        name, f"{base.title}, fitted to {Path(counters.file).name}", counters.file, params
    )
    return Fit(
        measured,
        pps,
        per_pkt,
        measured.lookups_per_s / pps if measured.lookups_per_s is not None else None,
        points,
        entries,
        walkers,
        bound,
        no_iommu,
        profile,
    )


def fit_explained(
    counters: StackCounters,
    explanation: Explanation,
    cfg: forwarding.ForwardingConfig,
    setup: PortSetup,
    *,
    platform: str | Path = DEFAULT_PLATFORM,
    name: str = "fitted",
    packets: int = FIT_PACKETS,
) -> Fit:
    """`explain --fit-iommu`: the same fit on the stack and forwarding setup an explanation
    used, at the rate its diagnosis settles on (the implied one when it names the rate as the
    cause, else the rate given)."""
    rate = explanation.rate
    pps = rate.implied_pps if explanation.rate_named and rate else explanation.pps
    return fit(
        counters,
        pps=pps,
        setup=port_setup(cfg, setup),
        traffic=port_traffic(cfg),
        platform=load_platform(platform=platform),
        base=load_platform_profile(platform),
        name=name,
        packets=packets,
    )


def fit_text(result: Fit, out: str | None) -> str:
    """The human rendering of an IOMMU fit (`iommu fit`, `explain --fit-iommu`)."""
    e, w = result.entries, result.walkers
    lines = [
        f"{result.measured.stack}: {result.measured.misses_per_s:,.0f} IOTLB misses/s at "
        f"{result.pps:,.0f} packets/s = {significant(result.misses_per_pkt, 3)} per forwarded "
        "packet",
        f"  IOTLB reach   {e.value:g} entries (consistent: {e.low:g}-{e.high:g})",
        f"  walkers       {w.value:g} ({w.low:g}-{w.high:g}; "
        + ("the walks bound the rate)" if result.walk_bound else "a lower bound)"),
    ]
    if out:
        lines.append(f"profile written to {out}; use it with --platform {out}")
    return "\n".join(lines)

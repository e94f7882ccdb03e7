"""Measured PCIe counters against the forwarding model: for each metric the measured and the
predicted rate, their ratio and, for every deviation beyond the tolerance, a one-line diagnosis
from a documented rule set (docs/explain.md). The method is the VTune recipe's ("PCIe Traffic in
DPDK Apps": predict each counter from the forwarding equations and the Rx batch histogram, then
compare), made open and automatic for any counter source `pcieperf.counters` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import inf

import numpy as np
from numpy.typing import NDArray

from pcieperf import dpdk, iommu
from pcieperf.counters import BYTES_PER_S, Samples
from pcieperf.errors import UsageError
from pcieperf.ethernet import FCS_BYTES, Ethernet, parse_mix
from pcieperf.link import Link
from pcieperf.nic import NicProfile

TOLERANCE = 0.15  # the threshold: a metric deviates beyond +-15 % of its prediction
# Counter noise floor: a difference under 0.01 B or 0.001 IOTLB misses per packet is not a
# deviation, so a zero prediction (a PMD's outbound reads) tolerates a management read now and
# then (a link-status poll a second is ~1e-7 B/packet at 10 Mpps), while a doorbell term of
# 0.25 B/packet halved or doubled is still seen.
BYTE_FLOOR_PER_PKT = 0.01
MISS_FLOOR_PER_PKT = 1e-3
# When every deviating metric is off by the same factor (within 10 %) the packet rate, not the
# driver, is what differs.
SAME_FACTOR = 0.10
MISS_METRIC = "iotlb_miss"
# The free-running IIO counters see only directions (counters.FREE_RUNNING_METRIC): their
# prediction is the sum of the model metrics that move data that way.
DIRECTION_METRICS: dict[str, tuple[dpdk.Metric, ...]] = {
    "device_to_host": ("inbound_write", "outbound_read"),
    "host_to_device": ("inbound_read", "outbound_write"),
}
EXPLAINED = (*dpdk.METRICS, *DIRECTION_METRICS, MISS_METRIC)

# The rule set (docs/explain.md): (metric, direction of the deviation) -> diagnosis. Fields:
# ratio, measured_per_pkt, predicted_per_pkt.
RULES: dict[tuple[str, str], str] = {
    ("outbound_read", "above"): (
        "outbound reads present ({measured_per_pkt:.2f} B/packet): the driver reads device "
        "registers (MMIO), so it is not a poll-mode driver; a PMD learns ring positions from "
        "descriptor write-backs and never reads the device"
    ),
    ("outbound_read", "below"): (
        "outbound reads {ratio:.2f}x the prediction: the driver reads device registers less "
        "often than the profile assumes (a poll-mode driver reads none)"
    ),
    ("inbound_write", "above"): (
        "inbound writes {ratio:.2f}x the prediction: descriptor write-backs are not coalesced "
        "(one per packet rather than one per rs_thresh) or the device writes partial cache "
        "lines, each costing a full 64 B line (compare with --tx-wb-full-line)"
    ),
    ("inbound_write", "below"): (
        "inbound writes {ratio:.2f}x the prediction: fewer or smaller packets reach host memory "
        "than --pps/--pkt say (drops before DMA), or write-backs are coalesced beyond rs_thresh"
    ),
    ("inbound_read", "above"): (
        "inbound reads {ratio:.2f}x the prediction: descriptors are fetched one at a time rather "
        "than a cache line at a time, packets are larger than --pkt, or reads are retried"
    ),
    ("inbound_read", "below"): (
        "inbound reads {ratio:.2f}x the prediction: fewer packets are sent than received (Tx "
        "drops) or packets are smaller than --pkt"
    ),
    ("outbound_write", "above"): (
        "outbound writes {ratio:.2f}x the prediction: tail doorbells are written more often than "
        "the batch histogram implies (smaller batches, or rx_free_thresh below the batch)"
    ),
    ("outbound_write", "below"): (
        "outbound writes {ratio:.2f}x the prediction: batches are larger than the histogram says "
        "or doorbells are deferred further (a larger rx_free_thresh)"
    ),
    ("iotlb_miss", "above"): (
        "IOTLB misses {measured_per_pkt:.3f}/packet against {predicted_per_pkt:.3f} predicted: "
        "4 KiB pages with large rings and mbuf pool spread the working set over more pages than "
        "the IOTLB holds; see `pcieperf iommu advise`"
    ),
    ("iotlb_miss", "below"): (
        "IOTLB misses {ratio:.2f}x the prediction: pages are larger than --page or the working "
        "set (rings, pool) is smaller than modelled"
    ),
    ("device_to_host", "above"): (
        "device-to-host data {ratio:.2f}x the prediction: extra inbound writes (uncoalesced "
        "write-backs, partial lines) or outbound reads (a driver reading registers); the "
        "free-running counters cannot tell which"
    ),
    ("device_to_host", "below"): (
        "device-to-host data {ratio:.2f}x the prediction: fewer or smaller packets are written "
        "to host memory than --pps/--pkt say"
    ),
    ("host_to_device", "above"): (
        "host-to-device data {ratio:.2f}x the prediction: extra inbound reads (single descriptor "
        "fetches, larger packets) or outbound writes (more doorbells); the free-running "
        "counters cannot tell which"
    ),
    ("host_to_device", "below"): (
        "host-to-device data {ratio:.2f}x the prediction: fewer or smaller packets are sent "
        "than --pps/--pkt say"
    ),
}
RATE_RULE = (
    "every deviating metric is about {ratio:.2f}x its prediction: the packet rate is about "
    "{rate_mpps:.3f} Mpps rather than {pps_mpps:.3f} (or the counters cover other ports too)"
)


@dataclass(frozen=True)
class Series:
    """One metric of the chosen stack over time (summed over parts)."""

    metric: str
    unit: str
    t_s: NDArray[np.float64]
    value: NDArray[np.float64]


@dataclass(frozen=True)
class Verdict:
    """One metric: measured (mean over time), predicted, ratio, and the diagnosis if off."""

    metric: str
    unit: str
    measured: float
    predicted: float
    pps: float
    status: str  # "agrees", "above" or "below"
    diagnosis: str | None

    @property
    def ratio(self) -> float:
        """Measured / predicted (inf for traffic where none is predicted, 1 for none of either)."""
        if self.predicted:
            return self.measured / self.predicted
        return inf if self.measured else 1.0

    def as_dict(self) -> dict[str, object]:
        """JSON form; an infinite ratio is null."""
        return {
            "metric": self.metric,
            "unit": self.unit,
            "measured": self.measured,
            "predicted": self.predicted,
            "ratio": None if self.ratio == inf else self.ratio,
            "measured_per_pkt": self.measured / self.pps,
            "predicted_per_pkt": self.predicted / self.pps,
            "status": self.status,
            "diagnosis": self.diagnosis,
        }


@dataclass(frozen=True)
class Explanation:
    """A counter file explained against the forwarding model."""

    file: str
    source: str
    stack: str
    pps: float
    pkt: int
    mean_batch: float
    verdicts: list[Verdict]
    series: dict[str, Series]

    @property
    def agreement(self) -> bool:
        """True when no metric deviates beyond the tolerance."""
        return all(v.status == "agrees" for v in self.verdicts)

    @property
    def deviating(self) -> list[str]:
        """Names of the metrics that deviate."""
        return [v.metric for v in self.verdicts if v.status != "agrees"]


def _stack_key(socket: int | None, stack: str) -> str:
    return stack if socket is None else f"socket {socket}: {stack}"


@dataclass(frozen=True)
class StackIndex:
    """Each sample's stack as a small integer, and the stacks' names: one pass over the file's
    samples, then numpy."""

    names: list[str]
    ids: NDArray[np.int64]

    @classmethod
    def of(cls, samples: Samples) -> StackIndex:
        """Number the (socket, stack) pairs in order of appearance."""
        seen: dict[tuple[int | None, str], int] = {}
        pairs = zip(samples.socket, samples.stack, strict=True)
        ids = np.fromiter(
            (seen.setdefault(pair, len(seen)) for pair in pairs), dtype=np.int64, count=len(samples)
        )
        return cls([_stack_key(*pair) for pair in seen], ids)


def choose_stack(samples: Samples, wanted: str | None, index: StackIndex | None = None) -> str:
    """The stack to explain: the one matching `wanted`, else the only one carrying traffic."""
    index = index or StackIndex.of(samples)
    moving = (np.asarray(samples.value) != 0) & (np.asarray(samples.unit) == BYTES_PER_S)
    busy = sorted(index.names[i] for i in np.unique(index.ids[moving]))
    known = sorted(index.names)
    if wanted is not None:
        matches = [k for k in known if wanted in k]
        if len(matches) > 1:
            matches = [k for k in matches if k in busy] or matches
        if len(matches) != 1:
            raise UsageError(
                f"--stack {wanted!r} matches {len(matches)} of the file's stacks; choose one of: "
                + "; ".join(known)
            )
        return matches[0]
    if len(busy) != 1:
        raise UsageError(
            f"{samples.file} has traffic on {len(busy)} stacks; choose one with --stack: "
            + "; ".join(busy or known)
        )
    return busy[0]


def measured_series(
    samples: Samples, stack: str, index: StackIndex | None = None
) -> dict[str, Series]:
    """Per explained metric, the stack's value at each time, summed over its parts."""
    index = index or StackIndex.of(samples)
    in_stack = index.ids == index.names.index(stack)
    metric = np.asarray(samples.metric)[in_stack]
    t_s = np.asarray(samples.t_s, dtype=np.float64)[in_stack]
    value = np.asarray(samples.value, dtype=np.float64)[in_stack]
    unit = np.asarray(samples.unit)[in_stack]
    series = {}
    for name in EXPLAINED:
        keep = metric == name
        if keep.any():
            times, at = np.unique(t_s[keep], return_inverse=True)
            sums = np.bincount(at, weights=value[keep], minlength=times.size)
            series[name] = Series(name, str(unit[keep][0]), times, sums)
    if not series:
        raise UsageError(
            f"{samples.file}: stack {stack!r} has none of the metrics explain compares "
            f"({', '.join(EXPLAINED)})"
        )
    return series


@dataclass(frozen=True)
class IommuSetup:
    """What decides the IOTLB miss prediction: page size and ring sizes (testpmd's rings)."""

    page: str = "2m"  # DPDK's EAL maps mbufs and rings on hugepages by default
    rxd: int = 1024
    txd: int = 1024


def misses_per_packet(cfg: dpdk.ForwardingConfig, setup: IommuSetup) -> float:
    """IOTLB misses per forwarded packet from the IOMMU model's address stream."""
    port = iommu.PortSetup(
        page=setup.page,
        rxd=setup.rxd,
        txd=setup.txd,
        rx_desc_bytes=cfg.rx_desc_bytes,
        tx_desc_bytes=cfg.tx_desc_bytes,
        rx_free_thresh=cfg.rx_free_thresh,
        rs_thresh=cfg.rs_thresh,
    )
    traffic = iommu.Traffic(parse_mix(str(cfg.pkt_bytes + FCS_BYTES)), Ethernet(40))
    return iommu.count_misses(port, traffic, iommu.load_platform().iommu).misses_per_pkt


def predict(
    cfg: dpdk.ForwardingConfig,
    link: Link,
    pps: float,
    profile: NicProfile | None = None,
    misses_pkt: float | None = None,
) -> dict[str, float]:
    """Predicted rate of every explained metric: bytes/s, and IOTLB misses/s if given."""
    est = dpdk.estimate(cfg, link, pps, profile)
    rates: dict[str, float] = {m: float(est.metric_gbps(m)) * 1e9 / 8 for m in dpdk.METRICS}
    for name, parts in DIRECTION_METRICS.items():
        rates[name] = sum(rates[m] for m in parts)
    if misses_pkt is not None:
        rates[MISS_METRIC] = misses_pkt * pps
    return rates


def _status(measured: float, predicted: float, floor: float) -> str:
    diff = measured - predicted
    if abs(diff) <= TOLERANCE * predicted or abs(diff) <= floor:
        return "agrees"
    return "above" if diff > 0 else "below"


def judge(series: dict[str, Series], predicted: dict[str, float], pps: float) -> list[Verdict]:
    """A verdict per measured metric, with the rule set's diagnosis for each deviation."""
    verdicts = []
    for name, s in series.items():
        floor = (MISS_FLOOR_PER_PKT if name == MISS_METRIC else BYTE_FLOOR_PER_PKT) * pps
        measured = float(s.value.mean())
        status = _status(measured, predicted[name], floor)
        verdicts.append(Verdict(name, s.unit, measured, predicted[name], pps, status, None))
    return _diagnose(verdicts, pps)


def _diagnose(verdicts: list[Verdict], pps: float) -> list[Verdict]:
    """Fill in diagnoses: the rate rule when all deviations share one factor, else per metric."""
    rate = _rate_diagnosis(verdicts, pps)
    return [
        v if v.status == "agrees" else replace(v, diagnosis=rate or _rule_diagnosis(v))
        for v in verdicts
    ]


def _rate_diagnosis(verdicts: list[Verdict], pps: float) -> str | None:
    """The rate rule's text when every predicted byte metric is off by one factor, else None."""
    off = [v for v in verdicts if v.status != "agrees"]
    ratios = [v.ratio for v in off]
    byte_metrics = [v for v in verdicts if v.unit == BYTES_PER_S and v.predicted]
    if (
        len(off) < 2
        or inf in ratios
        or max(ratios) > min(ratios) * (1 + SAME_FACTOR)
        or any(v not in off for v in byte_metrics)
    ):
        return None
    mean = float(np.mean(ratios))
    return RATE_RULE.format(ratio=mean, rate_mpps=mean * pps / 1e6, pps_mpps=pps / 1e6)


def _rule_diagnosis(v: Verdict) -> str:
    """The rule set's text for one deviating metric."""
    return RULES[(v.metric, v.status)].format(
        ratio=v.ratio, measured_per_pkt=v.measured / v.pps, predicted_per_pkt=v.predicted / v.pps
    )


def explain(
    samples: Samples,
    cfg: dpdk.ForwardingConfig,
    link: Link,
    pps: float,
    *,
    profile: NicProfile | None = None,
    stack: str | None = None,
    iommu_setup: IommuSetup | None = None,
) -> Explanation:
    """Explain one counter file's stack against forwarding at `pps` with `cfg`."""
    if not pps > 0:
        raise UsageError(f"packet rate {pps!r} is not allowed; explain needs a rate > 0")
    index = StackIndex.of(samples)
    chosen = choose_stack(samples, stack, index)
    series = measured_series(samples, chosen, index)
    misses = misses_per_packet(cfg, iommu_setup or IommuSetup()) if MISS_METRIC in series else None
    predicted = predict(cfg, link, pps, profile, misses)
    return Explanation(
        samples.file,
        samples.source,
        chosen,
        pps,
        cfg.pkt_bytes,
        cfg.batch,
        judge(series, predicted, pps),
        series,
    )

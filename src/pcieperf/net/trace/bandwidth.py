"""The PCIe bandwidth a trace needs: per-window Gb/s from a per-packet cost, and the Rx
batches a polling driver would see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._numpy import np
from pcieperf.errors import UsageError, require_positive
from pcieperf.net.trace.statistics import Windows, window_sums

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Demand:
    """PCIe bandwidth that replaying a trace needs, per time window, against the link; the
    last window covers `last_covered_ns` (up to the last packet: `Windows`)."""

    window_ns: int
    start_ns: int
    up_gbps: NDArray[np.float64]
    down_gbps: NDArray[np.float64]
    capacity_gbps: float
    last_covered_ns: int
    span_ns: int  # first to last packet: 0 has no rate (no mean, no peak), as in trace stats

    def summary(self) -> dict:
        """Mean (over the capture's duration) and peak (over whole windows) per direction, how
        often a whole window exceeds the link, and a shorter last window's rates apart (the
        rule of `Windows`, as `trace stats` and `trace demand` apply it)."""
        up, down = self.rates(self.up_gbps), self.rates(self.down_gbps)
        whole = slice(0, up.full if self.span_ns else 0)
        over = (self.up_gbps[whole] > self.capacity_gbps) | (
            self.down_gbps[whole] > self.capacity_gbps
        )
        return {
            "window_ns": self.window_ns,
            "windows": int(self.up_gbps.size),
            "full_windows": up.full,
            "capacity_gbps": self.capacity_gbps,
            "mean_up_gbps": up.mean,
            "mean_down_gbps": down.mean,
            "peak_up_gbps": up.peak,
            "peak_down_gbps": down.peak,
            "windows_over_capacity": int(over.sum()),
            "fits": bool(not over.any()),
            "tail_ns": up.tail_ns,
            "tail_up_gbps": up.tail,
            "tail_down_gbps": down.tail,
        }

    def rates(self, gbps: NDArray[np.float64]) -> Rates:
        """What a series of per-window rates of this demand's windows says (`Rates`)."""
        return Rates.of(gbps, self.window_ns, self.last_covered_ns, self.span_ns)


@dataclass(frozen=True)
class Rates:
    """Per-window rates summed up by the rule of `Windows`: the mean over the time covered,
    the peak over whole windows (None: none is whole), a shorter last window's rate apart; a
    capture without duration has neither mean nor peak."""

    mean: float | None
    peak: float | None
    full: int
    tail_ns: int
    tail: float | None

    @classmethod
    def of(
        cls, gbps: NDArray[np.float64], window_ns: int, last_covered_ns: int, span_ns: int
    ) -> Rates:
        """The rates of windows of `window_ns`, the last covering `last_covered_ns`, over a
        capture of `span_ns`."""
        partial = bool(gbps.size) and last_covered_ns < window_ns
        covered = np.full(gbps.size, float(window_ns))
        if gbps.size:
            covered[-1] = last_covered_ns
        whole = gbps[: gbps.size - int(partial)]
        timed = gbps.size and span_ns
        return cls(
            mean=float((gbps * covered).sum() / covered.sum()) if timed else None,
            peak=float(whole.max()) if whole.size and span_ns else None,
            full=int(whole.size),
            tail_ns=last_covered_ns if partial else 0,
            tail=float(gbps[-1]) if partial else None,
        )


def demand(
    ts_ns: NDArray[np.int64],
    up_bytes: NDArray[np.float64],
    down_bytes: NDArray[np.float64],
    window_ns: int,
    capacity_bytes_per_s: float,
) -> Demand:
    """Per-window bandwidth from per-packet PCIe wire bytes up and down."""
    if ts_ns.size == 0:
        raise UsageError("the trace has no packets; nothing to replay")
    return Demand(
        window_ns=int(window_ns),
        start_ns=int(ts_ns.min()),
        up_gbps=window_gbps(ts_ns, up_bytes, window_ns),
        down_gbps=window_gbps(ts_ns, down_bytes, window_ns),
        capacity_gbps=capacity_bytes_per_s * 8 / 1e9,
        last_covered_ns=Windows.of(ts_ns, window_ns).last_covered_ns,
        span_ns=int(ts_ns.max() - ts_ns.min()),
    )


def window_gbps(
    ts_ns: NDArray[np.int64], byte_counts: NDArray[np.float64], window_ns: int
) -> NDArray[np.float64]:
    """Gb/s per window of `window_ns` for bytes attributed to each packet; the last window is
    divided by the time it covers (see `Windows`: a peak leaves it out, `Demand.summary`)."""
    require_positive("window", window_ns)
    sums = window_sums(ts_ns, byte_counts, window_ns)
    if sums.size == 0:
        return sums
    covered = Windows.of(ts_ns, window_ns).covered_ns(np.arange(sums.size))
    return sums * 8 / covered


def poll_batches(ts_ns: NDArray[np.int64], poll_ns: int, burst: int = 32) -> dict[int, float]:
    """Rx batch histogram {batch: rx_burst calls} of a PMD that polls every `poll_ns` and takes
    up to `burst` packets per call: packets that arrive within one poll period share a call."""
    require_positive("poll period", poll_ns)
    slot = (ts_ns - ts_ns.min()) // poll_ns
    _, per_slot = np.unique(slot, return_counts=True)
    full, rest = np.divmod(per_slot, burst)
    hist = {burst: float(full.sum())} if full.sum() else {}
    sizes, calls = np.unique(rest[rest > 0], return_counts=True)
    hist.update({int(s): float(c) for s, c in zip(sizes, calls, strict=True)})
    return hist

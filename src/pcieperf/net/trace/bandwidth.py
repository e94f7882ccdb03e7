"""The PCIe bandwidth a trace needs: per-window Gb/s from a per-packet cost, and the Rx
batches a polling driver would see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf.errors import UsageError, require_positive
from pcieperf.net.trace.files import np
from pcieperf.net.trace.statistics import Windows, window_sums

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Demand:
    """PCIe bandwidth that replaying a trace needs, per time window, against the link."""

    window_ns: int
    start_ns: int
    up_gbps: NDArray[np.float64]
    down_gbps: NDArray[np.float64]
    capacity_gbps: float

    def summary(self) -> dict:
        """Mean and peak per direction, and how often a window exceeds the link."""
        over = (self.up_gbps > self.capacity_gbps) | (self.down_gbps > self.capacity_gbps)
        return {
            "window_ns": self.window_ns,
            "windows": int(self.up_gbps.size),
            "capacity_gbps": self.capacity_gbps,
            "mean_up_gbps": float(self.up_gbps.mean()) if self.up_gbps.size else 0.0,
            "mean_down_gbps": float(self.down_gbps.mean()) if self.down_gbps.size else 0.0,
            "peak_up_gbps": float(self.up_gbps.max(initial=0)),
            "peak_down_gbps": float(self.down_gbps.max(initial=0)),
            "windows_over_capacity": int(over.sum()),
            "fits": bool(not over.any()),
        }


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
    )


def window_gbps(
    ts_ns: NDArray[np.int64], byte_counts: NDArray[np.float64], window_ns: int
) -> NDArray[np.float64]:
    """Gb/s per window of `window_ns` for bytes attributed to each packet; the last window is
    divided by the time it covers (see `Windows`), so a trace does not seem to fade at its end."""
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

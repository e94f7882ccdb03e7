"""The PCIe bandwidth a trace needs: per-window Gb/s from a per-packet cost, and the Rx
batches a polling driver would see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._native import core
from pcieperf._numpy import np
from pcieperf.errors import require_positive

if TYPE_CHECKING:
    from numpy.typing import NDArray


MAX_WINDOWS = 10_000_000  # a dense series longer than this is a mistake (wrong window or ts)


@dataclass(frozen=True)
class Rates:
    """One per-packet quantity per window by the Rust core's rule of rate windows
    (trace/rate_windows.rs): each window's Gb/s (the last over the time it covers), the mean
    over the capture's duration, the peak over whole windows (None: none is whole) and a
    shorter last window's rate apart; a capture without duration has neither mean nor peak."""

    gbps: NDArray[np.float64]
    mean: float | None
    peak: float | None
    tail: float | None


@dataclass(frozen=True)
class Windows:
    """Per-window rates of several per-packet byte counts over the same windows of `window_ns`
    from the first packet; the last covers `last_covered_ns`, up to the last packet."""

    window_ns: int
    count: int
    full: int
    last_covered_ns: int
    series: tuple[Rates, ...]

    @property
    def tail_ns(self) -> int:
        """Time the last window covers where it is shorter than a window, else 0."""
        return self.last_covered_ns if self.count > self.full else 0


def window_rates(
    ts_ns: NDArray[np.int64], per_packet_bytes: Sequence[NDArray[np.float64]], window_ns: int
) -> Windows:
    """Gb/s per window of `window_ns` of each series of bytes attributed to each packet."""
    require_positive("window", window_ns)
    found = core().trace_windows(
        np.ascontiguousarray(ts_ns, dtype=np.int64),
        [np.ascontiguousarray(b, dtype=np.float64) for b in per_packet_bytes],
        int(window_ns),
        MAX_WINDOWS,
    )
    return Windows(
        window_ns=int(window_ns),
        count=found["windows"],
        full=found["full_windows"],
        last_covered_ns=found["last_covered_ns"],
        series=tuple(
            Rates(s["gbps"], s["mean_gbps"], s["peak_gbps"], s["tail_gbps"])
            for s in found["series"]
        ),
    )


@dataclass(frozen=True)
class Demand:
    """PCIe bandwidth that replaying a trace needs, per time window, against the link."""

    windows: Windows  # the up and down series, in that order
    capacity_gbps: float

    @property
    def window_ns(self) -> int:
        """The windows' length."""
        return self.windows.window_ns

    @property
    def up_gbps(self) -> NDArray[np.float64]:
        """Device-to-host Gb/s per window."""
        return self.windows.series[0].gbps

    @property
    def down_gbps(self) -> NDArray[np.float64]:
        """Host-to-device Gb/s per window."""
        return self.windows.series[1].gbps

    def summary(self) -> dict:
        """Mean and peak per direction, how often a whole window exceeds the link, and a
        shorter last window's rates apart (the rule of rate windows, as `trace stats` and
        `trace demand` apply it)."""
        up, down = self.windows.series[:2]
        whole = slice(0, self.windows.full if up.mean is not None else 0)
        over = (up.gbps[whole] > self.capacity_gbps) | (down.gbps[whole] > self.capacity_gbps)
        return {
            "window_ns": self.window_ns,
            "windows": self.windows.count,
            "full_windows": self.windows.full,
            "capacity_gbps": self.capacity_gbps,
            "mean_up_gbps": up.mean,
            "mean_down_gbps": down.mean,
            "peak_up_gbps": up.peak,
            "peak_down_gbps": down.peak,
            "windows_over_capacity": int(over.sum()),
            "fits": bool(not over.any()),
            "tail_ns": self.windows.tail_ns,
            "tail_up_gbps": up.tail,
            "tail_down_gbps": down.tail,
        }


def demand(
    ts_ns: NDArray[np.int64],
    up_bytes: NDArray[np.float64],
    down_bytes: NDArray[np.float64],
    window_ns: int,
    capacity_bytes_per_s: float,
    *more_bytes: NDArray[np.float64],
) -> Demand:
    """Per-window bandwidth from per-packet PCIe wire bytes up and down (and `more_bytes`,
    further per-packet series over the same windows, after them in `windows.series`)."""
    return Demand(
        window_rates(ts_ns, (up_bytes, down_bytes, *more_bytes), window_ns),
        capacity_gbps=capacity_bytes_per_s * 8 / 1e9,
    )


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

"""The PCIe bandwidth a trace needs: per-window Gb/s of what its packets cost, as the Rust
core's passes over a capture count them (`timeline`), against the link."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._numpy import np

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

    @classmethod
    def of(cls, found: dict, window_ns: int) -> Windows:
        """The windows of `window_ns` as the core's passes give them (`TraceTimeline.windows`)."""
        return cls(
            window_ns=window_ns,
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
    frame_bytes: int  # of all packets: the trace's mean frame is frame_bytes / packets

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

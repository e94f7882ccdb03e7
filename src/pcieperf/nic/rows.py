"""The rows of a NIC result: each one frame size or a mix of sizes (`Rows` as arrays, `FewRow`
as Python scalars for a command line's few), and what an Ethernet port gives each row
(`LineRates`), whatever the link."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from pcieperf._numpy import np
from pcieperf._values import as_float, frozen, once
from pcieperf.net.ethernet import Ethernet, check_frame_sizes
from pcieperf.nic.bounds import ETHERNET, KEEPS_UP

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from pcieperf.nic.profile import Int


class Rows:
    """The rows of a result and the distinct frame sizes (`sizes`, ascending) they are made
    of. A row is one fixed size, or a mix: a sparse weight list where entry k gives row
    `mix_of[k]` a share `weight[k]` of size `size_of[k]`. `mix_of` is None when each row is one
    size (entry k is row k, weight 1), and `size_of` is None too when row k is `sizes[k]`.
    This module's classes are plain: a dataclass costs every `nic` command ~1 ms of start-up."""

    def __init__(
        self,
        sizes: Int,
        size_of: Int | None = None,
        mix_of: Int | None = None,
        weight: NDArray[np.float64] | None = None,
        names: tuple[str, ...] | None = None,
    ) -> None:
        self.sizes = sizes
        self.size_of = size_of
        self.mix_of = mix_of
        self.weight = weight
        self.names = names
        self.lines: dict[Ethernet, LineRates] = {}

    @once
    def label(self) -> list[str]:
        """Each row's name: the mix's, or its frame size."""
        if self.names is not None:
            return list(self.names)
        frames = self.sizes if self.size_of is None else self.sizes[self.size_of]
        return [str(f) for f in frames.tolist()]

    def __len__(self) -> int:
        """Number of rows."""
        if self.names is not None:
            return len(self.names)
        return (self.sizes if self.size_of is None else self.size_of).size

    def per_row(self, per_size: ArrayLike) -> NDArray[np.float64]:
        """Mean per packet of each row, for a quantity given per distinct size (where each row
        is one size with weight 1 this is a gather, which is what the weighted sum gives)."""
        values = np.asarray(per_size, dtype=np.float64)
        if self.mix_of is None:
            return values if self.size_of is None else values[self.size_of]
        weighted = values[self.size_of] * self.weight
        return np.bincount(self.mix_of, weights=weighted, minlength=len(self))

    def mean_of(self, per_size: Callable[[Int], Int]) -> NDArray[np.float64]:
        """`per_row` of `per_size(sizes)`, taken as float64."""
        return self.per_row(as_float(per_size(self.sizes)))

    def line(self, eth: Ethernet) -> LineRates:
        """What `eth` gives each row, whatever the link (computed once per port)."""
        found = self.lines.get(eth)
        if found is None:
            found = self.lines[eth] = LineRates.of(self, eth)
        return found


class LineRates:
    """What an Ethernet port gives each row, whatever the link (read-only, shared): line-rate
    packets per second, mean frame bytes and gigabits per packet, line rate in Gb/s, and the
    packet rate from which PCIe keeps up with the line."""

    def __init__(
        self,
        line_pps: NDArray[np.float64],
        mean_frame_bytes: NDArray[np.float64],
        frame_gbit: NDArray[np.float64],
        line_rate_gbps: NDArray[np.float64],
        keeps_up_pps: NDArray[np.float64],
    ) -> None:
        self.line_pps = line_pps
        self.mean_frame_bytes = mean_frame_bytes
        self.frame_gbit = frame_gbit
        self.line_rate_gbps = line_rate_gbps
        self.keeps_up_pps = keeps_up_pps

    @classmethod
    def of(cls, rows: Rows, eth: Ethernet) -> LineRates:
        """Line-rate packet rate of each row (one over the mean wire time per packet) and what
        follows from it."""
        mean_wire = rows.mean_of(eth.wire_bytes)
        line_pps = eth.rate_gbps * 1e9 / (8 * mean_wire)
        mean_frame = rows.mean_of(as_float)
        gbit = mean_frame * 8 / 1e9
        arrays = (line_pps, mean_frame, gbit, line_pps * gbit, line_pps / (1 + KEEPS_UP))
        return cls(*(frozen(a) for a in arrays))

    @once
    def all_ethernet(self) -> NDArray[np.uint8]:
        """`bottleneck_code` of a link that keeps up at every row."""
        return frozen(np.full(self.line_pps.shape, ETHERNET, np.uint8))


class FewRow:
    """One row of a command line's few: a frame size, or a mix of sizes with their packet
    shares, evaluated on Python scalars before numpy is loaded (`evaluate_few`). What `Rows`
    gives one of its rows, bit for bit: a size's values as they are, a mix's summed from 0.0
    in its order, as numpy's `bincount` adds them."""

    __slots__ = ("label", "sizes", "weights")

    def __init__(self, label: str, sizes: list[int], weights: tuple[float, ...] | None) -> None:
        self.label = label
        self.sizes = sizes
        self.weights = weights

    def mean_of(self, per_size: Callable[[int], float | int]) -> float:
        """Mean per packet of `per_size(size)` over the row's sizes, as a float."""
        if self.weights is None:
            return as_float(per_size(self.sizes[0]))
        total = 0.0
        for size, weight in zip(self.sizes, self.weights, strict=True):
            total += as_float(per_size(size)) * weight
        return total

    def line(self, eth: Ethernet) -> LineRates:
        """What `eth` gives this row."""
        return LineRates.of(self, eth)  # type: ignore[arg-type] # duck-typed: mean_of


class _RecentRows:
    """`Rows` of the last few fixed-size lists, so that a sweep over links and profiles checks
    and sorts its sizes once (and each port's line rates are computed once)."""

    ENTRIES = 4

    def __init__(self) -> None:
        self._entries: list[tuple[Int, Rows]] = []
        self._lock = threading.Lock()

    def rows(self, frames: ArrayLike) -> Rows:
        """One row per frame size of `frames`, checked (a usage error names a bad size)."""
        given = np.asarray(frames)
        if given.ndim == 1 and given.dtype.kind in "iu":
            with self._lock:
                for checked, rows in self._entries:
                    if np.array_equal(checked, given):
                        return rows
        rows = fixed_rows(given)
        checked = rows.sizes if rows.size_of is None else rows.sizes[rows.size_of]
        with self._lock:
            self._entries = [(checked, rows), *self._entries[: self.ENTRIES - 1]]
        return rows


def fixed_rows(frames: ArrayLike) -> Rows:
    """One row per frame size (checked: a usage error names a bad size), for `evaluate_sizes`
    to reuse over many links and profiles."""
    frames = frozen(check_frame_sizes(frames))
    if frames.size and np.all(frames[1:] > frames[:-1]):  # ascending and distinct already
        return Rows(frames)
    sizes, size_of = np.unique(frames, return_inverse=True)
    return Rows(frozen(sizes), frozen(size_of))


_RECENT_ROWS = _RecentRows()


def recent_rows(frames: ArrayLike) -> Rows:
    """`fixed_rows(frames)`, reused while a sweep asks for the same sizes again (its few last
    lists are kept)."""
    return _RECENT_ROWS.rows(frames)

"""The rows of a NIC result: each one frame size or a mix of sizes (`Rows` as arrays, `FewRow`
as Python scalars for a command line's few), and what an Ethernet port gives each row
(`LineRates`), whatever the link."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pcieperf._cache import ArrayKey, cached
from pcieperf._numpy import np
from pcieperf._values import Value, as_float, frozen, once
from pcieperf.errors import UsageError
from pcieperf.net.ethernet import Ethernet, check_frame_sizes
from pcieperf.nic.bounds import ETHERNET, KEEPS_UP

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from pcieperf.net.ethernet import PacketMix
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

    @once
    def key(self) -> ArrayKey:
        """The sizes as a cache key (pcieperf._cache)."""
        return ArrayKey(self.sizes)

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
        if self.mix_of is None or self.weight is None:  # a mix has both
            return values if self.size_of is None else values[self.size_of]
        weighted = values[self.size_of] * self.weight
        return np.bincount(self.mix_of, weights=weighted, minlength=len(self)).astype(np.float64)

    def mean_of(self, per_size: Callable[[Value], Value]) -> NDArray[np.float64]:
        """`per_row` of `per_size(sizes)`, taken as float64."""
        return self.per_row(as_float(per_size(self.sizes)))


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
    def of(cls, rows: Rows | FewRow, eth: Ethernet) -> LineRates:
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
    shares, evaluated on Python scalars before numpy is loaded (`nic.evaluate`). What `Rows`
    gives one of its rows, bit for bit: a size's values as they are, a mix's summed from 0.0
    in its order, as numpy's `bincount` adds them."""

    __slots__ = ("label", "sizes", "weights")

    def __init__(self, label: str, sizes: list[int], weights: tuple[float, ...] | None) -> None:
        self.label = label
        self.sizes = sizes
        self.weights = weights

    def mean_of(self, per_size: Callable[[Value], Value]) -> float:
        """Mean per packet of `per_size(size)` over the row's sizes, as a float."""
        if self.weights is None:
            return as_float(per_size(self.sizes[0]))
        total = 0.0
        for size, weight in zip(self.sizes, self.weights, strict=True):
            total += as_float(per_size(size)) * weight
        return total


def fixed_rows(frames: ArrayLike) -> Rows:
    """One row per frame size (checked: a usage error names a bad size); the same `Rows` for
    the same sizes while they are kept (a sweep's, `_fixed_rows`)."""
    given = np.asarray(frames)
    if given.ndim == 1 and given.dtype.kind in "iu":
        return _fixed_rows(ArrayKey(given))
    return _rows_of(given)


@cached(4)
def _fixed_rows(frames: ArrayKey) -> Rows:
    """`fixed_rows` of a 1-D int array, kept: a sweep over links and profiles checks and
    sorts its sizes once."""
    return _rows_of(frames.own())


def _rows_of(frames: ArrayLike) -> Rows:
    """One row per frame size, checked."""
    checked: Int = frozen(check_frame_sizes(frames))
    if checked.size and np.all(checked[1:] > checked[:-1]):  # ascending and distinct already
        return Rows(checked)
    sizes, size_of = np.unique(checked, return_inverse=True)
    return Rows(frozen(sizes), frozen(size_of))


def mix_rows(mixes: Sequence[PacketMix]) -> Rows:
    """One row per packet mix (a fixed size is a mix of one), at least one."""
    if not mixes:
        raise UsageError("no packet sizes given; pass at least one size or mix")
    sizes, size_of = np.unique(np.concatenate([m.sizes for m in mixes]), return_inverse=True)
    return Rows(
        frozen(sizes),
        size_of,
        mix_of=np.repeat(np.arange(len(mixes)), [m.sizes.size for m in mixes]),
        weight=np.concatenate([m.weights for m in mixes]),
        names=tuple(m.name for m in mixes),
    )


@cached(16)
def line_rates(rows: Rows | FewRow, eth: Ethernet) -> LineRates:
    """What `eth` gives each row of `rows`, whatever the link (kept per rows and port)."""
    return LineRates.of(rows, eth)

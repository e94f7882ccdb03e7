"""The NIC model's results: a priced profile (pcieperf.nic.pricing) against the Ethernet line
rate, per frame size or mix (`evaluate`), what binds (Ethernet, PCIe up or down), and the PCIe
demand of a capture. Each packet is received and transmitted once (a full-duplex port at the
same rate both ways), unless the evaluation is restricted to one path. The profile model
(loading, `[device]`, expressions) is pcieperf.nic.profile; its names are re-exported here.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from pcieperf._native import core
from pcieperf._values import as_float, as_uint8, frozen, is_python, minimum
from pcieperf.errors import UsageError, require_positive
from pcieperf.net.ethernet import Ethernet, PacketMix, check_frame_sizes
from pcieperf.net.wire import MIN_FRAME_BYTES
from pcieperf.pcie.link import Link

if TYPE_CHECKING:  # trace loads the Rust core: imported where a trace is priced
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from pcieperf.net.trace.bandwidth import Demand
    from pcieperf.net.trace.files import Trace
    from pcieperf.nic.profile import Int
else:
    from pcieperf._numpy import np

# The profile model and its pricing, where callers of `nic` have always found them.
from pcieperf.nic.pricing import (
    _TOTALS,
    ETHERNET,
    OpShare,
    PacketCosts,
    _link_facts,
    _once,
    _packet_costs,
    price_operations,
    size_costs,
)
from pcieperf.nic.profile import PATHS, NicProfile

NEAR_LIMIT = 0.01  # a bound within 1 % of the achieved rate is named as a limit too

# ---------------------------------------------------------------------------------------------
# Results


class Binds(enum.Enum):
    """Which bound sets a result's rate: Ethernet at every row, PCIe at every row, or it varies."""

    ETHERNET = "ethernet"
    PCIE = "pcie"
    VARIES = "varies"


BOTTLENECKS = ("ethernet", "pcie_up", "pcie_down")
"""Names of the `bottleneck_code` values."""


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

    @_once
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


KEEPS_UP = 1e-12
"""PCIe within this fraction of line rate keeps up: Ethernet is named the bottleneck."""


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

    @_once
    def all_ethernet(self) -> NDArray[np.uint8]:
        """`bottleneck_code` of a link that keeps up at every row."""
        return frozen(np.full(self.line_pps.shape, ETHERNET, np.uint8))


def _limit_orders() -> tuple[tuple[str, ...], ...]:
    """`limited_by` of every `limited_by_code`: the near bounds (bits 0-2: ethernet, pcie_up,
    pcie_down) in ascending order by value then name (bits 3-5: ethernet <= pcie_up,
    ethernet <= pcie_down, pcie_down <= pcie_up)."""
    names = ("ethernet", "pcie_up", "pcie_down")
    orders = []
    for code in range(64):
        before = {("ethernet", "pcie_up"): code >> 3 & 1, ("ethernet", "pcie_down"): code >> 4 & 1}
        before[("pcie_down", "pcie_up")] = code >> 5 & 1
        near = [n for i, n in enumerate(names) if code >> i & 1]
        rank = {
            n: sum(
                before[(m, n)] if (m, n) in before else 1 - before[(n, m)] for m in near if m != n
            )
            for n in near
        }
        orders.append(tuple(sorted(near, key=lambda n: (rank[n], n))))
    return tuple(orders)


LIMIT_ORDERS = _limit_orders()


class NicResult:
    """What a NIC/driver model achieves on a link and Ethernet port, one row per size or mix.

    Costs are priced once per distinct frame size and averaged per packet over each row's sizes
    (`Rows`), so a mix costs the mean of its packets' costs, never the cost of its mean size, and
    thousands of fixed sizes stay cheap. Per-packet costs and what the port gives are shared by
    every link with the same TLP rules; only the rates are computed per link.
    """

    def __init__(
        self,
        rows: Rows,
        costs: PacketCosts,
        line: LineRates,
        capacity_bytes_per_s: float,
        eth: Ethernet,
        profile: NicProfile,
        link: Link,
        paths: tuple[str, ...],
    ) -> None:
        self.rows = rows
        self.costs = costs
        self.line = line
        self.eth = eth
        self.capacity_bytes_per_s = capacity_bytes_per_s
        self.profile = profile
        self.link = link
        self.paths = paths

    @property
    def label(self) -> list[str]:
        """Each row's name: the mix's, or its frame size."""
        return self.rows.label

    @property
    def sizes(self) -> Int:
        """The distinct frame sizes the rows are made of."""
        return self.rows.sizes

    @_once
    def shares(self) -> list[OpShare]:
        """Per-operation costs at each distinct size (`price_operations`), for a breakdown."""
        return price_operations(self.link, self.profile, self.sizes, self.paths)

    def per_packet(self, per_size: ArrayLike) -> NDArray[np.float64]:
        """Mean per packet of each row, for a quantity given per distinct size."""
        return self.rows.per_row(per_size)

    @property
    def line_pps(self) -> NDArray[np.float64]:
        """Line-rate packet rate of each row: one over the mean wire time per packet."""
        return self.line.line_pps

    @property
    def mean_frame_bytes(self) -> NDArray[np.float64]:
        """Mean frame size of each row."""
        return self.line.mean_frame_bytes

    @property
    def line_rate_gbps(self) -> NDArray[np.float64]:
        """Frame throughput (Gb/s) at Ethernet line rate for this size or mix."""
        return self.line.line_rate_gbps

    @property
    def up_bytes_per_pkt(self) -> NDArray[np.float64]:
        """PCIe wire bytes device to host per packet."""
        return self.costs.up_bytes

    @property
    def down_bytes_per_pkt(self) -> NDArray[np.float64]:
        """PCIe wire bytes host to device per packet."""
        return self.costs.down_bytes

    @property
    def up_tlps_per_pkt(self) -> NDArray[np.float64]:
        """TLPs device to host per packet."""
        return self.costs.up_tlps

    @property
    def down_tlps_per_pkt(self) -> NDArray[np.float64]:
        """TLPs host to device per packet."""
        return self.costs.down_tlps

    @_once
    def pcie_max_pps(self) -> NDArray[np.float64]:
        """Highest packet rate the link sustains: the busier direction binds."""
        return frozen(self.capacity_bytes_per_s * self.costs.per_busiest_byte)

    @_once
    def binds(self) -> Binds:
        """Whether Ethernet binds at every row, PCIe at every row, or it varies: where one
        binds everywhere, the rates are the port's or the link's as they are."""
        pcie, line = self.pcie_max_pps, self.line
        if is_python(pcie) or not pcie.size:  # one row of scalars: the general formulas
            return Binds.VARIES
        if pcie[0] >= line.line_pps[0] and np.all(pcie >= line.line_pps):
            return Binds.ETHERNET  # max_pps = line_pps, and PCIe keeps up (KEEPS_UP)
        if pcie[0] < line.keeps_up_pps[0] and np.all(self.falls_short):
            return Binds.PCIE  # max_pps = pcie_max_pps, below line rate
        return Binds.VARIES

    @_once
    def falls_short(self) -> NDArray[np.bool_]:
        """Where PCIe does not keep up with the line (`KEEPS_UP`)."""
        return self.pcie_max_pps < self.line.keeps_up_pps

    @_once
    def max_pps(self) -> NDArray[np.float64]:
        """Packets per second actually reachable: the lower of PCIe and Ethernet."""
        if self.binds is Binds.ETHERNET:
            return self.line_pps
        if self.binds is Binds.PCIE:
            return self.pcie_max_pps
        return frozen(minimum(self.pcie_max_pps, self.line_pps))

    @_once
    def achievable_gbps(self) -> NDArray[np.float64]:
        """Frame throughput (Gb/s, per direction) at `max_pps`."""
        if self.binds is Binds.ETHERNET:
            return self.line_rate_gbps
        return frozen(self.max_pps * self.line.frame_gbit)

    @_once
    def pcie_up_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used device to host at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[0]
        return frozen(self.max_pps * self.costs.up_gbit)

    @_once
    def pcie_down_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used host to device at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[1]
        return frozen(self.max_pps * self.costs.down_gbit)

    def needed_gbps(self, pps: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """PCIe wire bandwidth (up, down) in Gb/s that `pps` packets per second would need."""
        return pps * self.costs.up_gbit, pps * self.costs.down_gbit

    @_once
    def bottleneck_code(self) -> NDArray[np.uint8]:
        """`bottleneck` as an index into `BOTTLENECKS` (what a sweep can store)."""
        if self.binds is Binds.ETHERNET:
            return self.line.all_ethernet
        if self.binds is Binds.PCIE:
            return self.costs.pcie_side
        return frozen(self.falls_short * self.costs.pcie_side)  # ETHERNET (0) where it keeps up

    @property
    def bottleneck(self) -> NDArray[np.str_] | str:
        """`ethernet`, `pcie_up` or `pcie_down`; Ethernet wins when PCIe keeps up to within
        `KEEPS_UP`, so a link that just keeps up is not blamed."""
        code = self.bottleneck_code
        return BOTTLENECKS[code] if is_python(code) else np.array(BOTTLENECKS)[code]

    @_once
    def limited_by_code(self) -> NDArray[np.uint8]:
        """`limited_by` as an index into `LIMIT_ORDERS`: which bounds are near, and their order."""
        per_up, per_down = self.costs.per_byte
        line = self.line_pps
        up, down = self.capacity_bytes_per_s * per_up, self.capacity_bytes_per_s * per_down
        near = self.max_pps * (1 + NEAR_LIMIT)
        bits = (line <= near, up <= near, down <= near, line <= up, line <= down, down <= up)
        code = 0  # an array from the first bit on, unless the bits are Python bools
        for shift, bit in enumerate(bits):
            code |= as_uint8(bit) << shift
        return code

    @property
    def limited_by(self) -> list[list[str]] | list[str]:
        """Per row, every bound within 1 % of the achieved rate, the tightest first (ties by
        name): what would have to move for the rate to rise (one row of scalars: its list)."""
        code = self.limited_by_code
        if is_python(code):
            return list(LIMIT_ORDERS[code])
        return [list(LIMIT_ORDERS[c]) for c in code.tolist()]


def evaluate(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    mixes: list[PacketMix],
    paths: tuple[str, ...] = PATHS,
) -> NicResult:
    """Price `profile` for each packet mix (a fixed size is a mix of one)."""
    if not mixes:
        raise UsageError("no packet sizes given; pass at least one size or mix")
    sizes, size_of = np.unique(np.concatenate([m.sizes for m in mixes]), return_inverse=True)
    rows = Rows(
        frozen(sizes),
        size_of,
        mix_of=np.repeat(np.arange(len(mixes)), [m.sizes.size for m in mixes]),
        weight=np.concatenate([m.weights for m in mixes]),
        names=tuple(m.name for m in mixes),
    )
    return _evaluate(profile, link, eth, paths, rows)


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


def evaluate_few(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    rows: list[FewRow],
    paths: tuple[str, ...] = PATHS,
) -> list[NicResult]:
    """`evaluate` of a few rows, one NicResult of Python scalars each: every distinct size is
    priced once (`size_costs`), without numpy. The same values as `evaluate` and
    `evaluate_sizes` give (tests/nic/test_nic_scalar.py)."""
    capacity, _ = _link_facts(link)
    by_size = {s: size_costs(profile, link, s, paths) for s in sorted({*_sizes_of(rows)})}
    results = []
    for row in rows:
        costs = PacketCosts(*(row.mean_of(lambda s, f=f: getattr(by_size[s], f)) for f in _TOTALS))
        line = row.line(eth)
        results.append(NicResult(row, costs, line, capacity, eth, profile, link, paths))  # type: ignore[arg-type]
    return results


def _sizes_of(rows: list[FewRow]) -> list[int]:
    """Every frame size of `rows`."""
    return [size for row in rows for size in row.sizes]


def evaluate_sizes(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    frames: ArrayLike | Rows,
    paths: tuple[str, ...] = PATHS,
) -> NicResult:
    """Price `profile` for each fixed frame size, vectorised (no per-size objects); `frames`
    may be `fixed_rows(frames)`, checked once for many evaluations."""
    rows = frames if isinstance(frames, Rows) else _RECENT_ROWS.rows(frames)
    return _evaluate(profile, link, eth, paths, rows)


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


def _evaluate(
    profile: NicProfile, link: Link, eth: Ethernet, paths: tuple[str, ...], rows: Rows
) -> NicResult:
    capacity, key = _link_facts(link)
    costs = _packet_costs(profile, link, key, rows.sizes, paths).per_row(rows)  # checks paths
    return NicResult(rows, costs, rows.line(eth), capacity, eth, profile, link, paths)


def crossover_frame(
    profile: NicProfile, link: Link, eth: Ethernet, frames: NDArray[np.int64]
) -> int | None:
    """Smallest frame size from which the NIC keeps up with line rate at every larger size."""
    ok = evaluate_sizes(profile, link, eth, frames).bottleneck == "ethernet"
    if not ok[-1]:
        return None
    failing = np.flatnonzero(~ok)
    return int(frames[0] if failing.size == 0 else frames[failing[-1] + 1])


def price_packets(
    profile: NicProfile, link: Link, frames: NDArray[np.int64], paths: tuple[str, ...] = PATHS
) -> tuple[list[OpShare], NDArray[np.int64]]:
    """Operation costs for each distinct size in a sequence of frame sizes, and each packet's
    index into those sizes (priced once per size, however many packets share it)."""
    sizes, index = np.unique(frames, return_inverse=True)
    return price_operations(link, profile, sizes, paths), index


def per_packet_wire_bytes(
    shares: list[OpShare], index: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """PCIe wire bytes (up, down) of every packet, from `price_packets`."""
    up = np.sum([s.up_bytes for s in shares], axis=0)
    down = np.sum([s.down_bytes for s in shares], axis=0)
    return up[index], down[index]


def trace_demand(
    profile: NicProfile,
    link: Link,
    trace: Trace,
    window_ns: int,
    paths: tuple[str, ...] = PATHS,
) -> Demand:
    """PCIe bandwidth per time window that this NIC needs to carry the trace's packets at the
    times they were captured (each packet priced at its own size)."""
    up, down = per_packet_wire_bytes(*price_packets(profile, link, trace.frame_bytes(), paths))
    from pcieperf.net.trace.bandwidth import demand

    return demand(trace.ts_ns, up, down, window_ns, link.tlp_bytes_per_s)


# --- PCIe demand of capture archives --------------------------------------------------------

MAX_DEMAND_FRAME = 65_535 + 18
"""Largest frame priced for `trace demand`: a 64 KiB GSO/TSO packet with its Ethernet header
and FCS; a larger frame is an error naming it."""


def demand_cost(
    profile: NicProfile, link: Link, window_ns: int, dma_paths: tuple[str, ...]
) -> object:
    """What each frame size costs the link up and down, priced as `nic --trace` prices a
    packet (`price_packets`), for the workers of `trace demand` (`TraceDemandCost`)."""
    require_positive("window", window_ns)
    frames = np.maximum(np.arange(MAX_DEMAND_FRAME + 1), MIN_FRAME_BYTES)
    up, down = per_packet_wire_bytes(*price_packets(profile, link, frames, dma_paths))
    capacity = link.tlp_bytes_per_s * 8 / 1e9
    return core().TraceDemandCost(window_ns, up.tolist(), down.tolist(), capacity)

"""The NIC model's results: a priced profile (pcieperf.nic.pricing) against the Ethernet line
rate, per frame size or mix (`evaluate`), what binds (Ethernet, PCIe up or down, or the device's
read tags on the host's read latency), and the PCIe demand of a capture. Each packet is received
and transmitted once (a full-duplex port at the same rate both ways), unless the evaluation is
restricted to one path. The profile model (loading, `[device]`, expressions) is
pcieperf.nic.profile.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from pcieperf._native import core
from pcieperf._values import Value, as_int, frozen, is_python, minimum, once, reciprocal
from pcieperf.errors import UsageError, require_positive
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.net.wire import MAX_PRICED_FRAME_BYTES, MIN_FRAME_BYTES
from pcieperf.nic.host import assumed_read_ns
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import TlpRules, link_facts, read_wire_bytes
from pcieperf.pciebench.device import LATENCY_TEST_BYTES

if TYPE_CHECKING:  # trace loads the Rust core: imported where a trace is priced
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from pcieperf.net.trace.bandwidth import Demand
    from pcieperf.net.trace.timeline import Timeline
    from pcieperf.nic.profile import Int
else:
    from pcieperf._numpy import np

from pcieperf.nic.bounds import BOTTLENECKS, NEAR_LIMIT, PAIRS, READ_REQUESTS, limit_order
from pcieperf.nic.pricing import (
    _TOTALS,
    OpShare,
    PacketCosts,
    _packet_costs,
    check_sizes,
    price_operations,
)
from pcieperf.nic.profile import PATHS, NicProfile
from pcieperf.nic.rows import FewRow, LineRates, Rows, fixed_rows, line_rates, mix_rows

# ---------------------------------------------------------------------------------------------
# Results


class Binds(enum.Enum):
    """Which bound sets a result's rate: Ethernet at every row, PCIe at every row, or it varies."""

    ETHERNET = "ethernet"
    PCIE = "pcie"
    VARIES = "varies"


class TagLimit(NamedTuple):
    """What bounds a device's outstanding reads: how many it keeps (`tags`; None: its profile's
    `[device] read_requests`) and how long each holds its tag, the host's read round trip on a
    loaded host (`read_ns`; None: the assumed host's, `nic.host.assumed_read_ns`)."""

    tags: int | None = None
    read_ns: float | None = None


NO_LIMIT_GIVEN = TagLimit()


def check_tags(tags: int | None) -> None:
    """A usage error where a given tag count is below one (None: the profile's)."""
    if tags is not None and tags < 1:
        raise UsageError(f"tags {tags!r} is not allowed; give a whole number >= 1")


class NicResult:
    """What a NIC/driver model achieves on a link and Ethernet port, one row per size or mix:
    each value an array over the rows, or a Python scalar for one `FewRow`.

    Costs are priced once per distinct frame size and averaged per packet over each row's sizes
    (`Rows`), so a mix costs the mean of its packets' costs, never the cost of its mean size, and
    thousands of fixed sizes stay cheap. Per-packet costs and what the port gives are shared by
    every link with the same TLP rules; only the rates are computed per link.
    """

    def __init__(
        self,
        rows: Rows | FewRow,
        costs: PacketCosts,
        line: LineRates,
        capacity_bytes_per_s: float,
        eth: Ethernet,
        profile: NicProfile,
        link: Link,
        paths: tuple[str, ...],
        limit: TagLimit = NO_LIMIT_GIVEN,
    ) -> None:
        self.rows = rows
        self.costs = costs
        self.line = line
        self.eth = eth
        self.capacity_bytes_per_s = capacity_bytes_per_s
        self.profile = profile
        self.link = link
        self.paths = paths
        self.limit = limit

    @property
    def label(self) -> list[str] | str:
        """Each row's name: the mix's, or its frame size (one `FewRow`'s: its name)."""
        return self.rows.label

    @property
    def _arrays(self) -> Rows:
        """The rows, where they are arrays: what per-size values take (a `FewRow` has none)."""
        if not isinstance(self.rows, Rows):
            raise TypeError("the result of a FewRow has no per-size arrays")
        return self.rows

    @property
    def sizes(self) -> Int:
        """The distinct frame sizes the rows are made of."""
        return self._arrays.sizes

    @once
    def shares(self) -> list[OpShare]:
        """Per-operation costs at each distinct size (`price_operations`), for a breakdown."""
        return price_operations(self.link, self.profile, self.sizes, self.paths)

    def per_packet(self, per_size: ArrayLike) -> NDArray[np.float64]:
        """Mean per packet of each row, for a quantity given per distinct size."""
        return self._arrays.per_row(per_size)

    @property
    def line_pps(self) -> Value:
        """Line-rate packet rate of each row: one over the mean wire time per packet."""
        return self.line.line_pps

    @property
    def mean_frame_bytes(self) -> Value:
        """Mean frame size of each row."""
        return self.line.mean_frame_bytes

    @property
    def line_rate_gbps(self) -> Value:
        """Frame throughput (Gb/s) at Ethernet line rate for this size or mix."""
        return self.line.line_rate_gbps

    @property
    def up_bytes_per_pkt(self) -> Value:
        """PCIe wire bytes device to host per packet."""
        return self.costs.up_bytes

    @property
    def down_bytes_per_pkt(self) -> Value:
        """PCIe wire bytes host to device per packet."""
        return self.costs.down_bytes

    @property
    def up_tlps_per_pkt(self) -> Value:
        """TLPs device to host per packet."""
        return self.costs.up_tlps

    @property
    def down_tlps_per_pkt(self) -> Value:
        """TLPs host to device per packet."""
        return self.costs.down_tlps

    @once
    def pcie_max_pps(self) -> Value:
        """Highest packet rate the link sustains: the busier direction binds."""
        return frozen(self.capacity_bytes_per_s * self.costs.per_busiest_byte)

    @property
    def read_ns(self) -> float:
        """The host's read round trip a read request holds its tag for, on a loaded host (the
        limit's, or the assumed host's: `nic.host.assumed_read_ns`)."""
        return assumed_read_ns() if self.limit.read_ns is None else self.limit.read_ns

    @property
    def tags(self) -> float:
        """The read requests the device keeps outstanding (the limit's, or its profile's;
        infinite without a `[device]` table)."""
        device = self.profile.device
        if self.limit.tags is not None:
            return self.limit.tags
        return device.read_requests if device else math.inf

    @once
    def tag_ns(self) -> Value:
        """Tag-nanoseconds a packet's reads hold on this link and host (`PacketCosts.tag_ns`):
        Little's law makes them tags in flight at a rate, and the rate the tags sustain."""
        reference = read_wire_bytes(self.link, LATENCY_TEST_BYTES)
        return self.costs.tag_ns(self.read_ns, reference, self.capacity_bytes_per_s / 1e9)

    @once
    def tag_max_pps(self) -> Value:
        """Packets per second the device's read tags sustain: its tags over the
        tag-nanoseconds a packet's reads hold; infinite without reads or a `[device]` table."""
        return frozen(self.tags * 1e9 * reciprocal(self.tag_ns))

    @once
    def tags_keep_up(self) -> bool:
        """Whether the tags sustain the lower of the link's and the line's rate at every row:
        then they bind nowhere, and the rates are the link's and the line's alone."""
        tags, lower = self.tag_max_pps, minimum(self.pcie_max_pps, self.line_pps)
        return bool(tags >= lower) if is_python(tags) else bool(np.all(tags >= lower))

    @once
    def binds(self) -> Binds:
        """Whether Ethernet binds at every row, PCIe at every row, or it varies (also where the
        tags bind anywhere): where one binds everywhere, the rates are the port's or the link's
        as they are."""
        pcie, line = self.pcie_max_pps, self.line
        if is_python(pcie) or not pcie.size or not self.tags_keep_up:  # the general formulas
            return Binds.VARIES
        if pcie[0] >= line.line_pps[0] and np.all(pcie >= line.line_pps):
            return Binds.ETHERNET  # max_pps = line_pps, and PCIe keeps up (KEEPS_UP)
        if pcie[0] < line.keeps_up_pps[0] and np.all(self.falls_short):
            return Binds.PCIE  # max_pps = pcie_max_pps, below line rate
        return Binds.VARIES

    @once
    def falls_short(self) -> Value:
        """Where PCIe does not keep up with the line (`KEEPS_UP`)."""
        return self.pcie_max_pps < self.line.keeps_up_pps

    @once
    def max_pps(self) -> Value:
        """Packets per second actually reachable: the lowest of PCIe, Ethernet and the tags."""
        if self.binds is Binds.ETHERNET:
            return self.line_pps
        if self.binds is Binds.PCIE:
            return self.pcie_max_pps
        lower = minimum(self.pcie_max_pps, self.line_pps)
        return frozen(lower if self.tags_keep_up else minimum(lower, self.tag_max_pps))

    @once
    def achievable_gbps(self) -> Value:
        """Frame throughput (Gb/s, per direction) at `max_pps`."""
        if self.binds is Binds.ETHERNET:
            return self.line_rate_gbps
        return frozen(self.max_pps * self.line.frame_gbit)

    @once
    def pcie_up_gbps(self) -> Value:
        """PCIe wire bandwidth used device to host at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[0]
        return frozen(self.max_pps * self.costs.up_gbit)

    @once
    def pcie_down_gbps(self) -> Value:
        """PCIe wire bandwidth used host to device at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[1]
        return frozen(self.max_pps * self.costs.down_gbit)

    def needed_gbps(self, pps: float) -> tuple[Value, Value]:
        """PCIe wire bandwidth (up, down) in Gb/s that `pps` packets per second would need."""
        return pps * self.costs.up_gbit, pps * self.costs.down_gbit

    @once
    def bottleneck_code(self) -> Value:
        """`bottleneck` as an index into `BOTTLENECKS` (what a sweep can store)."""
        if self.binds is Binds.ETHERNET:
            return self.line.all_ethernet
        if self.binds is Binds.PCIE:
            return self.costs.pcie_side
        code = self.falls_short * self.costs.pcie_side  # ETHERNET (0) where it keeps up
        if self.tags_keep_up:
            return frozen(code)
        tags = self.tag_max_pps < minimum(self.pcie_max_pps, self.line_pps)
        if is_python(tags):
            return READ_REQUESTS if tags else code
        return frozen(np.where(tags, np.uint8(READ_REQUESTS), code))

    @property
    def bottleneck(self) -> Value:
        """`ethernet`, `pcie_up`, `pcie_down` or `read_requests`; Ethernet wins when PCIe keeps
        up to within `KEEPS_UP`, so a link that just keeps up is not blamed, and the tags only
        where they are below both."""
        code = self.bottleneck_code
        return BOTTLENECKS[code] if is_python(code) else np.array(BOTTLENECKS)[code]

    @once
    def limited_by_code(self) -> Value:
        """`limited_by` as a code of `limit_order`: which bounds are near, and their order."""
        per_up, per_down = self.costs.per_byte
        up, down = self.capacity_bytes_per_s * per_up, self.capacity_bytes_per_s * per_down
        bounds = (self.line_pps, up, down, self.tag_max_pps)  # in BOTTLENECKS order
        near = self.max_pps * (1 + NEAR_LIMIT)
        bits = [b <= near for b in bounds] + [bounds[a] <= bounds[b] for a, b in PAIRS]
        code = 0  # an array from the first bit on, unless the bits are Python bools
        for shift, bit in enumerate(bits):
            code |= as_int(bit) << shift
        return code

    @property
    def limited_by(self) -> list[list[str]] | list[str]:
        """Per row, every bound within 1 % of the achieved rate, the tightest first (ties by
        name): what would have to move for the rate to rise (one row of scalars: its list)."""
        code = self.limited_by_code
        if is_python(code):
            return list(limit_order(code))
        return [list(limit_order(c)) for c in code.tolist()]


def evaluate(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    rows: Rows | FewRow | Sequence[PacketMix],
    paths: tuple[str, ...] = PATHS,
    limit: TagLimit = NO_LIMIT_GIVEN,
) -> NicResult:
    """Price `profile` for each row: `Rows` (arrays: `fixed_rows`, `mix_rows`, or packet mixes
    given as they are) or one `FewRow` (Python numbers: a command line's few, priced before
    numpy is loaded), with the same arithmetic and the same values. `limit`: its tags and the
    host's read latency, where not the profile's and the assumed host's."""
    if not isinstance(rows, Rows | FewRow):
        rows = mix_rows(rows)
    rules, capacity = link_facts(link)
    costs = _row_costs(profile, rules, rows, paths)
    line = line_rates(rows, eth)
    return NicResult(rows, costs, line, capacity, eth, profile, link, paths, limit)


def _row_costs(
    profile: NicProfile, rules: TlpRules, rows: Rows | FewRow, paths: tuple[str, ...]
) -> PacketCosts:
    """The per-packet costs of each row, from those of each of its distinct sizes."""
    if isinstance(rows, Rows):
        return _packet_costs(profile, rules, rows.key, paths).per_row(rows)
    check_sizes(profile, sorted(set(rows.sizes)), paths)

    def per_size(total: str) -> Callable[[Value], Value]:
        """One of `_TOTALS` at one size."""
        return lambda size: getattr(_packet_costs(profile, rules, size, paths), total)

    return PacketCosts(*(rows.mean_of(per_size(f)) for f in _TOTALS))


def crossover_frame(
    profile: NicProfile, link: Link, eth: Ethernet, frames: NDArray[np.int64]
) -> int | None:
    """Smallest frame size from which the NIC keeps up with line rate at every larger size."""
    ok = evaluate(profile, link, eth, fixed_rows(frames)).bottleneck == "ethernet"
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


def frame_costs(
    profile: NicProfile, link: Link, frames: NDArray[np.int64], paths: tuple[str, ...] = PATHS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """PCIe wire bytes (up, down) a packet costs at each frame size of `frames` (one below
    the minimum frame is priced as the minimum): the costs by which a capture is priced."""
    return per_packet_wire_bytes(
        *price_packets(profile, link, np.maximum(frames, MIN_FRAME_BYTES), paths)
    )


def trace_demand(
    profile: NicProfile,
    link: Link,
    timeline: Timeline,
    window_ns: int,
    paths: tuple[str, ...] = PATHS,
) -> Demand:
    """PCIe bandwidth per time window that this NIC needs to carry a capture's packets at the
    times they were captured (each packet priced at its own size), read as it streams."""
    from pcieperf.net.trace.bandwidth import Demand

    up, down = frame_costs(profile, link, timeline.frame_sizes(), paths)
    windows, frame_bytes = timeline.windows((up, down), window_ns)
    return Demand(windows, link.tlp_bytes_per_s * 8 / 1e9, frame_bytes)


def demand_cost(
    profile: NicProfile, link: Link, window_ns: int, dma_paths: tuple[str, ...]
) -> object:
    """What each frame size costs the link up and down, priced as `nic --trace` prices a
    packet (`frame_costs`), for the workers of `trace demand` (`TraceDemandCost`)."""
    require_positive("window", window_ns)
    frames = np.arange(MAX_PRICED_FRAME_BYTES + 1)
    up, down = frame_costs(profile, link, frames, dma_paths)
    capacity = link.tlp_bytes_per_s * 8 / 1e9
    return core().TraceDemandCost(window_ns, up.tolist(), down.tolist(), capacity)

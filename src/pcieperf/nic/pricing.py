"""Pricing a NIC profile: the PCIe TLPs and bytes per direction each operation of a profile
(pcieperf.nic.profile) costs per packet, and their totals per packet, shared by links that
differ only in speed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from pcieperf._cache import ArrayKey, cached
from pcieperf._values import (
    Value,
    as_uint8,
    as_whole,
    frozen,
    is_python,
    is_whole,
    maximum,
    ndim,
    once,
    reciprocal,
)
from pcieperf.errors import ProfileError, UsageError
from pcieperf.net.ethernet import dma_bytes
from pcieperf.nic.bounds import PCIE_DOWN
from pcieperf.nic.profile import (
    BUILTIN_NAMES,
    MAX_OP_BYTES,
    PATHS,
    Initiator,
    NicProfile,
    Operation,
    evaluate_expression,
    expression_names,
)
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import Op, Rules, TlpRules, WireCost, link_facts, range_wire_cost, wire_cost

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from pcieperf.nic.profile import Int
    from pcieperf.nic.rows import LineRates, Rows
else:
    from pcieperf._numpy import np

# ---------------------------------------------------------------------------------------------
# Pricing


def operation_cost(
    link: Link,
    initiator: Initiator,
    size: NDArray[np.int64],
    offset: int = 0,
    addr64: bool | None = None,
) -> tuple[WireCost, bool]:
    """TLP cost of one occurrence, and whether the device initiates it (out = up).

    Address width when `addr64` is None: DMA follows the link setting (host buffers may lie
    anywhere); MMIO targets a non-prefetchable register BAR, which a bridge can only map below
    4 GiB, and requesters must use the 3 DW format below 4 GiB (PCIe Base 6.0 §2.2.4.1,
    §7.5.1.3.8); MSI/MSI-X writes go to 0xFEEx_xxxx (Intel SDM Vol. 3 §11.11.1), also 3 DW.
    """
    kind, addr64, device_side = _initiated(link, initiator, addr64)
    return wire_cost(link, kind, size, offset, addr64=addr64), device_side


def _initiated(link: Rules, initiator: Initiator, addr64: bool | None) -> tuple[Op, bool, bool]:
    """(TLP kind, 64-bit addresses, whether the device initiates) of an operation."""
    device_side = initiator in ("dma_read", "dma_write", "interrupt")
    if addr64 is None:
        addr64 = link.addr64 if initiator in ("dma_read", "dma_write") else False
    kind: Op = "read" if initiator in ("dma_read", "host_mmio_read") else "write"
    return kind, addr64, device_side


class OpShare(NamedTuple):
    """Per-packet cost of one profile operation (arrays over the evaluated sizes). A named
    tuple: a dataclass costs every `nic` command ~1 ms of start-up."""

    path: str
    op: Operation
    per_packet: NDArray[np.float64]
    up_bytes: NDArray[np.float64]
    down_bytes: NDArray[np.float64]
    up_tlps: NDArray[np.float64]
    down_tlps: NDArray[np.float64]
    data_bytes: NDArray[np.float64]
    counted_bytes: NDArray[np.float64]


_SHARE_ARRAYS = OpShare._fields[2:]  # per_packet ... counted_bytes


def price_operations(
    link: Link, profile: NicProfile, frames: NDArray[np.int64], paths: tuple[str, ...] = PATHS
) -> list[OpShare]:
    """Per-packet wire bytes and TLPs of every operation for each frame size."""
    pkt: Value = dma_bytes(frames)  # an array, as `frames` is
    shares = []
    for path, op in profile.operations(paths):
        if _names_packet(op):
            shares.append(_price(link, profile, path, op, frames, pkt))
            continue
        # A doorbell or a descriptor costs the same at every size: priced once and broadcast,
        # bit for bit what pricing every size would give.
        once = _price(link, profile, path, op, frames[:1], pkt[:1])
        arrays = (np.broadcast_to(getattr(once, f), frames.shape) for f in _SHARE_ARRAYS)
        shares.append(OpShare(path, op, *arrays))
    return shares


def _price(
    link: Link,
    profile: NicProfile,
    path: str,
    op: Operation,
    frames: Int,
    pkt: Int,
) -> OpShare:
    """One operation's per-packet cost for each frame size."""
    size = _op_size(profile, path, op, frames, pkt)
    per_packet = _op_rate(profile, path, op, frames, pkt)
    counted = evaluate_expression(op.counted, profile.names, pkt, frames) if op.counted else size
    up, down, up_t, down_t = _op_wire(link, op, size)
    return OpShare(
        path,
        op,
        per_packet,
        up * per_packet,
        down * per_packet,
        up_t * per_packet,
        down_t * per_packet,
        size * per_packet,
        counted * per_packet,
    )


def _op_size(
    profile: NicProfile, path: str, op: Operation, frames: Int | int, pkt: Int | int
) -> Value:
    """Bytes of one occurrence at each size, checked to be whole bytes from 1 to MAX_OP_BYTES
    (at one size: a Python float)."""
    size: Value = evaluate_expression(op.size, profile.names, pkt, frames)
    bad = _first_bad(size, (size >= 1) & (size <= MAX_OP_BYTES) & is_whole(size))
    if bad is not None:
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} size {op.size!r} "
            f"gives {bad} bytes; sizes must be whole bytes from 1 to {MAX_OP_BYTES}"
        )
    return size


def _op_rate(
    profile: NicProfile, path: str, op: Operation, frames: Int | int, pkt: Int | int
) -> Value:
    """Occurrences per packet (1 / every) at each size, `every` checked to be finite and > 0."""
    every: Value = evaluate_expression(op.every, profile.names, pkt, frames)
    bad = _first_bad(every, (every > 0) & (every < math.inf))  # NaN fails both
    if bad is not None:
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} every {op.every!r} gives "
            f"{bad}; it must be a finite number > 0"
        )
    return 1 / every


def _first_bad(values: Value, ok: Value) -> object:
    """The first of `values` where `ok` does not hold, or None where it holds at every one."""
    if is_python(values):
        return None if ok else values
    return None if ok.all() else values[~ok][0]


def _op_wire(link: Rules, op: Operation, size: Value) -> tuple[Value, Value, Value, Value]:
    """Wire bytes up, wire bytes down, TLPs up and TLPs down of one occurrence at each size."""
    kind, addr64, device_side = _initiated(link, op.initiator, op.addr64)
    end = as_whole(size)  # checked by `_op_size`: whole bytes from 1
    if op.offset:
        end += op.offset
    start = op.offset if is_python(end) else np.int64(op.offset)
    cost = range_wire_cost(link, kind, start, end, addr64=addr64)
    if device_side:
        return cost.wire_out, cost.wire_back, cost.tlps_out, cost.tlps_back
    return cost.wire_back, cost.wire_out, cost.tlps_back, cost.tlps_out


def _names_packet(op: Operation) -> bool:
    """Whether any of the operation's expressions names pkt or frame."""
    return any(expression_names(e) & set(BUILTIN_NAMES) for e in (op.size, op.every, op.counted))


# ---------------------------------------------------------------------------------------------
# Totals per packet, shared by links that differ only in speed

Term = Value
"""One operation's share of a per-packet total: a scalar where it is the same at every size
(a Python float on the scalar path)."""
Totals = tuple[Term, ...]
"""One `Term` for each of `_TOTALS`."""
_TOTALS = ("up_bytes", "down_bytes", "up_tlps", "down_tlps", "read_requests", "read_hold_bytes")
"""Per-packet totals: wire bytes and TLPs each way; the device's DMA read requests, each of
which holds a tag; and for the tags' hold time, each request counted with its whole read's
wire bytes both ways (a request holds its tag while its read's TLPs cross the link: the rule of
`latency`, an upper bound where a read takes several requests; `PacketCosts.tag_ns`)."""


def read_hold_bytes(requests: Term, up_bytes: Term, down_bytes: Term) -> Term:
    """The wire bytes a read's requests hold their tags across: each request its whole read's
    bytes both ways (a tag is held while the read's TLPs cross the link; an upper bound where
    a read takes several requests). The rule of `nic`, `latency` and the IOMMU model."""
    return requests * (up_bytes + down_bytes)


def tag_hold_ns(requests: Term, request_ns: float, hold_bytes: Term, bytes_per_ns: float) -> Term:
    """Tag-nanoseconds: each of `requests` holds its tag `request_ns` in the host, plus the
    link time of `hold_bytes` (`read_hold_bytes`); not below 0. Little's law turns it into
    tags in flight (rate x it) and a rate bound (tags / it). One rule for every model: each
    gives its own host latency (`nic` a measured read's, the IOMMU model its platform's)."""
    return maximum(requests * request_ns + hold_bytes / bytes_per_ns, 0.0)


def _ordered_sum(terms: Iterable[Term], start: Term) -> Term:
    """`start + t0 + t1 + ...`, each term broadcast over the sizes, bit for bit in fewer passes:
    a term that is the same at every size is added as a scalar (into a scalar while no array
    has been added), and zeros are skipped (x + 0.0 is x for every x >= 0, and every term is).
    `start` (the sum of earlier terms) is left unchanged."""
    total, owned = start, False
    for term in terms:
        if ndim(term) and term.strides == (0,):  # a broadcast constant of `wire_cost`
            term = term[0]
        if ndim(term) == 0 and term == 0:
            continue
        if owned:
            total += term
        else:
            total = total + term
            owned = ndim(total) > 0
    return total


class PacketCosts:
    """PCIe wire bytes and TLPs per packet, each direction, and the device's read requests and
    what they hold their tags for (`_TOTALS`), per size or mix (read-only arrays:
    shared by every link with the same `tlp.TlpRules`; Python floats for one `FewRow`). A
    plain class, as `_PlannedOp` is."""

    def __init__(
        self,
        up_bytes: Value,
        down_bytes: Value,
        up_tlps: Value,
        down_tlps: Value,
        read_requests: Value,
        read_hold_bytes: Value,
    ) -> None:
        self.up_bytes = up_bytes
        self.down_bytes = down_bytes
        self.up_tlps = up_tlps
        self.down_tlps = down_tlps
        self.read_requests = read_requests
        self.read_hold_bytes = read_hold_bytes

    @once
    def per_busiest_byte(self) -> Value:
        """1 / the busier direction's bytes, which bind the packet rate: a link's packet rate
        is its byte rate times this."""
        return frozen(1 / maximum(self.up_bytes, self.down_bytes))

    @once
    def per_byte(self) -> tuple[Value, Value]:
        """(1 / bytes up, 1 / bytes down); infinite where no byte goes that way (no bound)."""
        return frozen(reciprocal(self.up_bytes)), frozen(reciprocal(self.down_bytes))

    @once
    def up_gbit(self) -> Value:
        """Gigabits up per packet (bytes * 8 / 1e9), what a packet rate is multiplied by."""
        return frozen(self.up_bytes * 8 / 1e9)

    @once
    def down_gbit(self) -> Value:
        """Gigabits down per packet."""
        return frozen(self.down_bytes * 8 / 1e9)

    @once
    def pcie_side(self) -> Value:
        """`bottleneck_code` where PCIe binds: pcie_up, or pcie_down when more goes down."""
        return frozen(PCIE_DOWN - as_uint8(self.up_bytes >= self.down_bytes))

    def tag_ns(self, read_ns: float, reference_read_bytes: int, bytes_per_ns: float) -> Term:
        """Tag-nanoseconds per packet: each read request holds a tag for its read's round
        trip, the host's read latency `read_ns` (measured with a read of
        `reference_read_bytes` on the wire) plus the link time of its read's wire bytes beyond
        the reference's (`read_hold_bytes`). Little's law makes it tags in flight (rate x
        tag_ns) and a rate bound (tags / tag_ns). Not below 0, whatever `read_ns` is."""
        reference_ns = reference_read_bytes / bytes_per_ns
        return tag_hold_ns(
            self.read_requests, read_ns - reference_ns, self.read_hold_bytes, bytes_per_ns
        )

    def gbps_at(self, line: LineRates) -> tuple[Value, Value]:
        """PCIe Gb/s (up, down) at `line`'s packet rates: the rates of every link that keeps
        up with that port at every row (kept per costs and port)."""
        return _gbps_at(self, line)

    def per_row(self, rows: Rows) -> PacketCosts:
        """The costs of each row of `rows`, from the costs of each of its distinct sizes."""
        if rows.size_of is None and rows.mix_of is None:
            return self
        return PacketCosts(*(frozen(rows.per_row(getattr(self, f))) for f in _TOTALS))


@cached(16)
def _gbps_at(costs: PacketCosts, line: LineRates) -> tuple[Value, Value]:
    """`PacketCosts.gbps_at`, read-only."""
    return frozen(line.line_pps * costs.up_gbit), frozen(line.line_pps * costs.down_gbit)


class _PlannedOp:
    """One operation at some sizes, all that pricing it needs besides the link: bytes per
    occurrence and occurrences per packet (arrays of one value where the expression names no
    packet). Internal classes here are plain: a dataclass costs ~1 ms of every start-up."""

    __slots__ = ("op", "per_packet", "size")

    def __init__(self, op: Operation, size: Value, per_packet: Value) -> None:
        self.op = op
        self.size = size
        self.per_packet = per_packet

    def terms(self, link: Rules) -> Totals:
        """The `_TOTALS` per packet on `link`, each `_price`'s value bit for bit: a scalar
        where it is the same at every size, and for an operation once per packet the integer
        counts themselves (n * 1.0 is n)."""
        wire = _op_wire(link, self.op, self.size)
        if self.op.initiator != "dma_read":
            return (*self._per_packet(wire), 0.0, 0.0)
        up, down, requests, _ = wire
        return self._per_packet((*wire, requests, read_hold_bytes(requests, up, down)))

    def _per_packet(self, per_occurrence: tuple[Term, ...]) -> tuple[Term, ...]:
        """Values per occurrence as values per packet (x occurrences per packet)."""
        arrays = ndim(self.size) and self.size.size > 1 and self.per_packet.size == 1
        if arrays and self.per_packet[0] == 1:
            return per_occurrence
        terms = tuple(w * self.per_packet for w in per_occurrence)
        return tuple(t[0] for t in terms) if ndim(terms[0]) and terms[0].size == 1 else terms


class _Failure(NamedTuple):
    """Why an operation cannot be priced at a size: the profile error, and whether its size
    (0) or its frequency (1) gives it."""

    stage: int
    error: ProfileError


def _plan_op(
    profile: NicProfile, path: str, op: Operation, frames: Int | int, pkt: Int | int
) -> _PlannedOp | _Failure:
    """`op`'s size and frequency at `frames`, each evaluated once where it names no packet, or
    why it cannot be priced."""

    def at(expr: str, values: Int | int) -> Int | int:
        """All `values` where `expr` names the packet, else the first (one int: itself)."""
        if isinstance(values, int) or expression_names(expr) & set(BUILTIN_NAMES):
            return values
        return values[:1]

    try:
        size = _op_size(profile, path, op, at(op.size, frames), at(op.size, pkt))
    except ProfileError as exc:
        return _Failure(0, exc)
    try:
        per_packet = _op_rate(profile, path, op, at(op.every, frames), at(op.every, pkt))
    except ProfileError as exc:
        return _Failure(1, exc)
    return _PlannedOp(op, size, per_packet)


Sizes = ArrayKey | int
"""Frame sizes as a cache key: a `Rows`' read-only sizes (ascending and distinct), or one
Python int (a command line's few sizes are priced one at a time)."""


def _values_of(sizes: Sizes) -> Int | int:
    """The sizes a `Sizes` stands for (read-only)."""
    return sizes if isinstance(sizes, int) else sizes.own()


@cached(32)
def _plan(profile: NicProfile, sizes: Sizes) -> tuple[tuple[str, _PlannedOp | _Failure], ...]:
    """A profile's operations at some sizes, planned once for every link: (path, planned
    operation or why it cannot be priced) in profile order."""
    frames = _values_of(sizes)
    pkt = dma_bytes(frames)
    return tuple((p, _plan_op(profile, p, op, frames, pkt)) for p, op in profile.operations())


def check_sizes(profile: NicProfile, sizes: Iterable[Sizes], paths: tuple[str, ...]) -> None:
    """Raise what keeps `profile`'s operations on `paths` from being priced at `sizes` (in
    ascending order: one `Rows`' sizes, or a few ints): the first operation, in the order
    they are summed, that fails at some size, and the first failure of its size expression
    over the sizes, else of its frequency; the same error whichever way the sizes come."""
    _check_operations(profile, paths)
    plans = [_plan(profile, s) for s in sizes]
    for path in paths:
        for index, (where, _) in enumerate(plans[0]):
            failed = [f for p in plans if isinstance(f := p[index][1], _Failure)]
            if where == path and failed:
                raise min(failed, key=lambda f: f.stage).error  # the first of the first stage


@cached(32)
def _terms(profile: NicProfile, sizes: Sizes, rules: TlpRules, index: int) -> Totals:
    """The `_TOTALS` per packet of operation `index` of `profile` at `sizes` (read-only),
    checked by `check_sizes`."""
    planned = _plan(profile, sizes)[index][1]
    assert isinstance(planned, _PlannedOp), "priced before `check_sizes`"
    found = planned.terms(rules)
    for term in found:
        if ndim(term):
            term.flags.writeable = False
    return found


@cached(16)
def _sums(profile: NicProfile, sizes: Sizes, rules: TlpRules, paths: tuple[str, ...]) -> Totals:
    """The sums of `_TOTALS` over `paths`' operations, continuing those of all paths but the
    last (rx+tx goes on from rx alone: the same additions in the same order)."""
    n = len(_TOTALS)
    start = _sums(profile, sizes, rules, paths[:-1]) if len(paths) > 1 else (0.0,) * n
    plan = _plan(profile, sizes)
    terms = [_terms(profile, sizes, rules, i) for i, (q, _) in enumerate(plan) if q == paths[-1]]
    sums = tuple(_ordered_sum((t[k] for t in terms), start[k]) for k in range(n))
    for total in sums:
        if ndim(total):
            total.flags.writeable = False
    return sums


def packet_costs(
    profile: NicProfile, link: Link, sizes: Sizes, paths: tuple[str, ...] = PATHS
) -> PacketCosts:
    """`profile`'s per-packet totals over `paths` at each of `sizes` on `link`, checked
    (`check_sizes`). Kept for links that differ only in speed (generation, lanes, ACK/FC
    intervals): TLP counts and bytes depend on `tlp.TlpRules` alone, so only the rates are
    computed per link."""
    return _packet_costs(profile, link_facts(link)[0], sizes, paths)


@cached(16)
def _packet_costs(
    profile: NicProfile, rules: TlpRules, sizes: Sizes, paths: tuple[str, ...]
) -> PacketCosts:
    """`packet_costs` on a link with these rules: arrays over the sizes, constants broadcast
    (one Python number each at one int)."""
    check_sizes(profile, [sizes], paths)
    sums = _sums(profile, sizes, rules, paths)
    frames = _values_of(sizes)
    if not isinstance(frames, int):
        sums = tuple(np.full(frames.size, s) if ndim(s) == 0 else s for s in sums)
    return PacketCosts(*(frozen(a) for a in sums))


def _check_operations(profile: NicProfile, paths: tuple[str, ...]) -> None:
    """A usage error where `profile` has no operation on `paths`."""
    if not profile.operations(paths):
        raise UsageError(
            f"profile {profile.name!r} has no operations on the paths {', '.join(paths)}; "
            f"it has {', '.join(p for p in PATHS if getattr(profile, p))}"
        )

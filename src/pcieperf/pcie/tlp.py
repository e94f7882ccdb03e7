"""The PCIe cost of one memory write or read, vectorised over transfer sizes and start offsets.

A transfer is split at naturally aligned boundaries (see `rust/core/src/tlp.rs`): memory writes at
multiples of MPS, read requests at multiples of MRRS, completions at multiples of the RCB or of
MPS (the completer's policy). All limits are powers of two no larger than 4 KiB, so no TLP
crosses a 4 KiB boundary (PCIe Base Spec 6.0 §2.2.7) and every TLP but the first is aligned.
Counts therefore have a closed form: the number of `cut`-sized blocks the range touches.

Directions are named from the initiator: `out` carries its requests, `back` the completions.

The closed forms are written once and evaluate either numpy arrays (many sizes: a sweep) or
one Python int per size (a command line's few sizes, `dma_rows` before numpy is in use):
operators serve both, and the few other operations they need (pcieperf._values) take
either. A Python int never overflows where an int64 would, so only values below
`_SCALAR_LIMIT` take the scalar path, and its results equal the vectorised ones bit for bit.
`dma` thus starts without numpy (issue 15: start-up under 120 ms).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, cast

from pcieperf import _numpy
from pcieperf._cache import ArrayKey, cached
from pcieperf._values import Value, as_float, as_int, broadcast, maximum, zeros_like
from pcieperf.errors import UsageError, require_choice
from pcieperf.pcie.link import Link

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    Int = NDArray[np.int64]
else:
    from pcieperf._numpy import np

Op = Literal["read", "write", "rw"]
OPS: tuple[Op, ...] = ("read", "write", "rw")

COMPLETION_HEADER_BYTES = 12  # §2.2.9.1: completion header is 3 DW
OHC_BYTES = 4  # §2.2.1.2: Flit Mode Orthogonal Header Content, 1 DW each
DW_BYTES = 4  # §2.2.1: TLP payloads are whole double words, byte enables mark the used bytes
SCALAR_SIZES = 256
"""Most sizes `dma_rows` evaluates one Python int at a time (~10 us each, where importing numpy
takes 85-120 ms); more go to numpy at once, and so does every call once numpy is in use (the
vectorised path is then faster at any count)."""
_SCALAR_LIMIT = 1 << 62  # sizes and offsets below this stay far from int64 overflow
MIN_SIZE, MIN_OFFSET = 1, 0  # a transfer moves a byte at least, from byte 0 on


class TransferCost(NamedTuple):
    """TLP counts and byte breakdown of operations, per direction (arrays of equal shape).
    This module's records are named tuples: a dataclass costs `dma` ~1 ms of start-up each."""

    data_out: Int
    data_back: Int
    tlps_out: Int
    tlps_back: Int
    header_out: Int
    header_back: Int
    framing_out: Int
    framing_back: Int
    padding_out: Int
    padding_back: Int

    @property
    def wire_out(self) -> Int:
        """Bytes on the link towards the target: data + headers + framing + DW padding."""
        return self.data_out + self.header_out + self.framing_out + self.padding_out

    @property
    def wire_back(self) -> Int:
        """Bytes on the link back towards the initiator."""
        return self.data_back + self.header_back + self.framing_back + self.padding_back

    def __add__(self, other: TransferCost) -> TransferCost:  # type: ignore[override] # elementwise
        """Cost of doing both operations."""
        return TransferCost(*(mine + theirs for mine, theirs in zip(self, other, strict=True)))


def _as_int_array(name: str, values: ArrayLike, minimum: int) -> Int:
    """Validate and convert sizes/offsets to int64, naming the first bad value."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.floor(arr))):
        raise UsageError(f"{name} must be whole bytes, got {arr[~(arr == np.floor(arr))][:1]}")
    arr = arr.astype(np.int64, copy=False)
    bad = arr < minimum
    if np.any(bad):
        raise _too_small(name, int(arr[bad].flat[0]), minimum)
    return arr


def _too_small(name: str, value: int, minimum: int) -> UsageError:
    """The error for a size or offset below `minimum`."""
    return UsageError(f"{name} {value} is not allowed; use {minimum} or more")


def _scalar_sizes(sizes: ArrayLike, offsets: ArrayLike) -> list[int] | None:
    """`sizes` as a list of Python ints, checked as `_operands` checks them, where they are a
    few (`SCALAR_SIZES`) ints below `_SCALAR_LIMIT` and `offsets` one such int; else None (the
    values go to numpy, which validates and reports them itself)."""
    if not isinstance(sizes, list | tuple) or not 0 < len(sizes) <= SCALAR_SIZES:
        return None
    values = [*sizes, offsets]
    if not all(type(v) is int and abs(v) < _SCALAR_LIMIT for v in values):
        return None
    ints = cast(list[int], values)  # checked: each an int
    checks = (*(("size", s, MIN_SIZE) for s in ints[:-1]), ("offset", ints[-1], MIN_OFFSET))
    for name, value, minimum in checks:
        if value < minimum:
            raise _too_small(name, value, minimum)
    return ints[:-1]


def blocks_touched(start: Value, end: Value, cut: int) -> Value:
    """Number of aligned `cut`-byte blocks that the byte range [start, end) touches; `cut` is a
    power of two (every PCIe size limit is, §7.5.3.4), so the divisions are shifts."""
    shift = cut.bit_length() - 1
    blocks = end + (cut - 1)
    blocks >>= shift
    blocks -= start >> shift
    return blocks


def _operands(sizes: ArrayLike, offsets: ArrayLike) -> tuple[Int, Int, Int]:
    """Validated (start, size, end): `size` and `end` have the shape of both broadcast, `start`
    keeps its own (one offset for many sizes stays a scalar, computed on once)."""
    size = _as_int_array("size", sizes, MIN_SIZE)
    start = _as_int_array("offset", offsets, MIN_OFFSET)
    size = np.broadcast_to(size, np.broadcast_shapes(start.shape, size.shape))
    return start, size, start + size


def _dw_padding(start: Value, end: Value) -> Value:
    """Bytes added to round the range out to whole double words at both ends."""
    return DW_BYTES * blocks_touched(start, end, DW_BYTES) - (end - start)


def write_cost(
    link: Link, sizes: ArrayLike, offsets: ArrayLike = 0, *, addr64: bool | None = None
) -> TransferCost:
    """Posted memory writes (MWr) of `sizes` bytes starting at address offset `offsets`."""
    start, size, end = _operands(sizes, offsets)
    tlps = blocks_touched(start, end, link.mps)
    header = tlps * _request_header(link, addr64) + _request_ohc(link, start, end, tlps)
    zero = zeros_like(size)
    return TransferCost(
        data_out=size,
        data_back=zero,
        tlps_out=tlps,
        tlps_back=zero,
        header_out=header,
        header_back=zero,
        framing_out=tlps * link.tlp_overhead_bytes,
        framing_back=zero,
        padding_out=_dw_padding(start, end),
        padding_back=zero,
    )


def read_cost(
    link: Link, sizes: ArrayLike, offsets: ArrayLike = 0, *, addr64: bool | None = None
) -> TransferCost:
    """Non-posted memory reads: MRd requests out, completions with data (CplD) back."""
    start, size, end = _operands(sizes, offsets)
    requests = blocks_touched(start, end, link.mrrs)
    completions = blocks_touched(start, end, completion_cut(link))
    zero = zeros_like(size)
    return TransferCost(
        data_out=zero,
        data_back=size,
        tlps_out=requests,
        tlps_back=completions,
        header_out=requests * _request_header(link, addr64)
        + _request_ohc(link, start, end, requests),
        header_back=completions * COMPLETION_HEADER_BYTES + _completion_ohc(link, start, end),
        framing_out=requests * link.tlp_overhead_bytes,
        framing_back=completions * link.tlp_overhead_bytes,
        padding_out=zero,
        padding_back=_dw_padding(start, end),
    )


def completion_cut(link: Rules) -> int:
    """Granularity at which the completer cuts read data into CplD TLPs.

    `rcb`: one completion per RCB-aligned block (seen on Intel root complexes, 64 B);
    `mps`: completions as large as MPS allows, ending on MPS-aligned addresses. Either way a
    completion never spans a request boundary, which falls on a multiple of MRRS.
    """
    policy_cut = link.rcb if link.completion_policy == "rcb" else link.mps
    return min(policy_cut, link.mrrs)


def _request_ohc(link: Rules, start: Value, end: Value, tlps: Value) -> Value:
    """Flit Mode: +1 DW OHC-A1 on each request whose byte enables are not the implied full
    ones, i.e. the TLPs holding an unaligned first or last byte (§2.2.5.2)."""
    if not link.flit_mode:
        return zeros_like(tlps)
    head, tail = start % DW_BYTES != 0, end % DW_BYTES != 0
    partial = as_int(head) + tail - (head & tail & (tlps == 1))
    return OHC_BYTES * partial


def _completion_ohc(link: Rules, start: Value, end: Value) -> Value:
    """Flit Mode: +1 DW OHC-A5 on the completion whose Lower Address[1:0] is not 00b (§2.2.9.2);
    shaped like `end`."""
    if not link.flit_mode:
        return zeros_like(end)
    return broadcast(OHC_BYTES * (start % DW_BYTES != 0), end)


def _request_header(link: Rules, addr64: bool | None) -> int:
    wide = link.addr64 if addr64 is None else addr64
    return 16 if wide else 12  # §2.2.4.1: 4 DW header for 64-bit, 3 DW for 32-bit addresses


def device_dma_cost(link: Link, op: Op, sizes: ArrayLike, offsets: ArrayLike = 0) -> TransferCost:
    """Cost of a device-initiated DMA `read`, `write` or simultaneous `rw` of each size."""
    require_choice("operation", op, OPS)
    if op == "write":
        return write_cost(link, sizes, offsets)
    if op == "read":
        return read_cost(link, sizes, offsets)
    return write_cost(link, sizes, offsets) + read_cost(link, sizes, offsets)


def transfers_per_second(link: Link, cost: TransferCost) -> NDArray[np.float64]:
    """Highest rate at which the link carries the operation: the busier direction binds."""
    capacity = link.tlp_bytes_per_s
    busiest = np.maximum(cost.wire_out, cost.wire_back)
    return capacity / busiest


def effective_gbps(
    link: Link, op: Op, sizes: ArrayLike, offsets: ArrayLike = 0
) -> NDArray[np.float64]:
    """Data bandwidth (Gb/s) of a stream of DMAs; for `rw`, of each direction's data."""
    require_choice("operation", op, OPS)
    rules, rate = link_facts(link)
    return _dma_columns(rate, _priced_arrays(rules, op, sizes, offsets))[0]


class WireCost(NamedTuple):
    """TLPs and wire bytes per direction of operations (arrays of equal shape): `TransferCost`
    summed, which is all that rates need."""

    tlps_out: Int
    tlps_back: Int
    wire_out: Int
    wire_back: Int


def wire_cost(
    link: Link, op: Op, sizes: ArrayLike, offsets: ArrayLike = 0, *, addr64: bool | None = None
) -> WireCost:
    """`write_cost`, `read_cost` or both (`rw`) summed per direction, as closed forms evaluated
    in place over the sizes: the per-TLP bytes are computed once per call, every cut is a
    shift, and no breakdown array is made (a model sweep spends its time here; tests check
    that it equals the breakdown exactly)."""
    require_choice("operation", op, OPS)
    start, _, end = _operands(sizes, offsets)
    return range_wire_cost(link, op, start, end, addr64=addr64)


def range_wire_cost(
    link: Rules, op: Op, start: Value, end: Value, *, addr64: bool | None = None
) -> WireCost:
    """`wire_cost` of the byte ranges [start, end) that the caller has checked (whole bytes,
    start >= 0, end > start): what a model that prices many operations calls. Arrays, or one
    Python int each (`_scalar_sizes`)."""
    dw_rounded = blocks_touched(start, end, DW_BYTES)
    dw_rounded <<= 2  # data + DW padding: the range rounded out to whole DWs
    zero = broadcast(0, end)
    tlps_out, wire_out, tlps_back, wire_back = zero, zero, zero, zero
    if op != "read":  # MWr: header and data out
        tlps_out, wire_out = _requests(link, start, end, link.mps, addr64)
        wire_out += dw_rounded
    if op != "write":  # MRd out, CplD back with the data
        tlps, wire = _requests(link, start, end, link.mrrs, addr64)
        tlps += tlps_out
        wire += wire_out
        tlps_out, wire_out = tlps, wire
        tlps_back = blocks_touched(start, end, completion_cut(link))
        wire_back = tlps_back * (COMPLETION_HEADER_BYTES + link.tlp_overhead_bytes)
        wire_back += dw_rounded
        if link.flit_mode:
            wire_back += _completion_ohc(link, start, end)
    return WireCost(tlps_out, tlps_back, wire_out, wire_back)


def read_wire_bytes(link: Link, size: int) -> int:
    """Wire bytes both ways of one read of `size` bytes from an aligned address: its requests
    out and its completions back (what a read's round trip adds in link time)."""
    cost = range_wire_cost(link, "read", 0, size)
    return int(cost.wire_out + cost.wire_back)  # Python ints: as they are


def _requests(
    link: Rules, start: Value, end: Value, cut: int, addr64: bool | None
) -> tuple[Value, Value]:
    """Request TLPs (MWr at MPS, MRd at MRRS) of each range and their bytes besides data."""
    tlps = blocks_touched(start, end, cut)
    wire = tlps * (_request_header(link, addr64) + link.tlp_overhead_bytes)
    if link.flit_mode:
        wire += _request_ohc(link, start, end, tlps)
    return tlps, wire


class TlpRules(NamedTuple):
    """What the closed forms read of a link (a `Link` derives some anew at every access): links
    with equal rules differ only in speed, so their TLPs and bytes are equal and only their
    rates differ. A cache key (pcieperf._cache)."""

    addr64: bool
    completion_policy: str
    flit_mode: bool
    mps: int
    mrrs: int
    rcb: int
    tlp_overhead_bytes: int


Rules = Link | TlpRules
"""What the closed forms price with: a link, or its rules read once."""


@cached(256)
def link_facts(link: Link) -> tuple[TlpRules, float]:
    """`link`'s `TlpRules` and TLP bytes per second, derived once per link (a sweep asks for
    them at every point)."""
    rules = TlpRules(*(getattr(link, name) for name in TlpRules._fields))
    return rules, link.tlp_bytes_per_s


class _Priced(NamedTuple):
    """A `wire_cost` and what a link's rate is divided and multiplied by: the busier
    direction's bytes and the data bits of each size (exact as floats)."""

    cost: WireCost
    busiest: NDArray[np.float64]
    bits: NDArray[np.float64]


def _priced(rules: TlpRules, op: Op, start: Value, size: Value, end: Value) -> _Priced:
    """The `_Priced` of the checked byte ranges [start, end) of `size` bytes (arrays, or one
    Python int each)."""
    cost = range_wire_cost(rules, op, start, end)
    busiest = cost.wire_out if op == "write" else maximum(cost.wire_out, cost.wire_back)
    return _Priced(cost, as_float(busiest), as_float(size) * 8)


MAX_KEPT_SIZES = 1 << 14
"""Most sizes whose prices are kept (`_priced_sizes`): a sweep's, not a trace's millions."""


def _priced_arrays(rules: TlpRules, op: Op, sizes: ArrayLike, offsets: ArrayLike) -> _Priced:
    """`_priced` of `sizes` and `offsets` as given, checked and converted to arrays; kept for
    links with the same rules where the sizes are a sweep's (`_priced_sizes`)."""
    size = np.asarray(sizes)
    kept = size.ndim == 1 and size.size <= MAX_KEPT_SIZES and size.dtype.kind in "iu"
    if kept and isinstance(offsets, int | np.integer):
        return _priced_sizes(rules, op, int(offsets), ArrayKey(size))
    return _priced(rules, op, *_operands(size, offsets))


@cached(64)
def _priced_sizes(rules: TlpRules, op: Op, offset: int, sizes: ArrayKey) -> _Priced:
    """`_priced` of `sizes` from `offset`, read-only: shared by every link with these rules."""
    result = _priced(rules, op, *_operands(sizes.own(), offset))
    for array in (result.busiest, result.bits, *result.cost):
        array.flags.writeable = False
    return result


class DmaRows(NamedTuple):
    """What `dma` reports for each size of a device DMA: TLPs and wire bytes per direction
    (up = device to host: writes and read requests) and the data bandwidth (arrays, or lists
    of Python numbers for a command line's few sizes)."""

    effective_gbps: NDArray[np.float64] | list[float]
    tlps_up: Int | list[int]
    tlps_down: Int | list[int]
    bytes_up: Int | list[int]
    bytes_down: Int | list[int]


def dma_rows(link: Link, op: Op, sizes: ArrayLike, offsets: ArrayLike = 0) -> DmaRows:
    """`device_dma_cost` per direction and `effective_gbps`, from `wire_cost`'s closed forms
    (one pass): over arrays, or one Python int at a time where numpy is not in use yet and
    the sizes are a few ints, the offset one (`_scalar_sizes`: then lists); the same values
    either way."""
    require_choice("operation", op, OPS)
    rules, rate = link_facts(link)
    few = None if _numpy.in_use() else _scalar_sizes(sizes, offsets)
    if few is None:
        return DmaRows(*_dma_columns(rate, _priced_arrays(rules, op, sizes, offsets)))
    start = cast(int, offsets)  # checked by `_scalar_sizes`
    rows = (_dma_columns(rate, _priced(rules, op, start, s, start + s)) for s in few)
    return DmaRows(*map(list, zip(*rows, strict=True)))


def _dma_columns(tlp_bytes_per_s: float, priced: _Priced) -> tuple:
    """`DmaRows`' fields (arrays, or one value each) of a `_Priced` on a link of this rate."""
    # (size * 8) * (transfers per second) / 1e9, bit for bit as before: products commute.
    gbps = tlp_bytes_per_s / priced.busiest
    gbps *= priced.bits
    gbps /= 1e9
    cost = priced.cost
    return gbps, cost.tlps_out, cost.tlps_back, cost.wire_out, cost.wire_back


class TlpList(NamedTuple):
    """Every TLP of one operation, in issue order (parallel arrays)."""

    kind: list[str]
    direction: list[str]
    addr: NDArray[np.uint64]
    data_bytes: NDArray[np.int64]
    wire_bytes: NDArray[np.int64]


def list_device_tlps(link: Link, op: Op, size: int, offset: int = 0) -> TlpList:
    """Enumerate the TLPs of one device DMA, walking the transfer in the Rust core.

    This is an independent path to the closed forms above (tests check that they agree), and
    shows a user exactly how a transfer is cut.
    """
    require_choice("operation", op, OPS)
    parts: list[TlpList] = []
    request = _request_header(link, None) + link.tlp_overhead_bytes
    if op in ("write", "rw"):
        parts.append(_pieces(link, "MWr", "up", offset, size, link.mps, request))
    if op in ("read", "rw"):
        parts.append(_pieces(link, "MRd", "up", offset, size, link.mrrs, request))
        cpl_header = COMPLETION_HEADER_BYTES + link.tlp_overhead_bytes
        parts.append(_pieces(link, "CplD", "down", offset, size, completion_cut(link), cpl_header))
    return TlpList(
        kind=[k for p in parts for k in p.kind],
        direction=[d for p in parts for d in p.direction],
        addr=np.concatenate([p.addr for p in parts]),
        data_bytes=np.concatenate([p.data_bytes for p in parts]),
        wire_bytes=np.concatenate([p.wire_bytes for p in parts]),
    )


def _pieces(
    link: Link, kind: str, direction: str, offset: int, size: int, cut: int, per_tlp_bytes: int
) -> TlpList:
    """Split one range at `cut` in the Rust core and price each piece on its own."""
    from pcieperf._native import core

    size_arr = _as_int_array("size", [size], 1).astype(np.uint64)
    start_arr = _as_int_array("offset", [offset], 0).astype(np.uint64)
    _, addr, length = core().split_aligned(start_arr, size_arr, cut)
    start = addr.astype(np.int64)
    end = start + length.astype(np.int64)
    unaligned_start, unaligned_end = start % DW_BYTES != 0, end % DW_BYTES != 0
    if kind == "MRd":
        data, payload = np.zeros_like(start), np.zeros_like(start)
    else:
        data = end - start
        payload = DW_BYTES * blocks_touched(start, end, DW_BYTES)
    if not link.flit_mode:
        ohc = np.zeros_like(start)
    elif kind == "CplD":
        ohc = OHC_BYTES * unaligned_start
    else:
        ohc = OHC_BYTES * (unaligned_start | unaligned_end)
    return TlpList(
        kind=[kind] * len(addr),
        direction=[direction] * len(addr),
        addr=addr,
        data_bytes=data,
        wire_bytes=payload + per_tlp_bytes + ohc,
    )

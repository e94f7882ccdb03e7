"""Device/driver interaction models as data: NIC profiles and the engine that prices them.

A profile (TOML) lists, for the receive path and the transmit path, every PCIe operation with
its initiator, its size and how often it happens. Sizes and frequencies are products and
quotients of numbers and names: the profile's `[params]`, the facts of its `[device]` table, `pkt`
(bytes DMA'd for the packet: frame minus FCS) and `frame` (frame size incl. FCS). Each packet is
received and transmitted once (a full-duplex port at the same rate both ways), unless the
evaluation is restricted to one path.

`[device]` describes the NIC's DMA side once, for every command that prices or simulates the
profile (`nic`, `dpdk-fwd`, `iommu`): outstanding read requests, queues, descriptor fetch and
write-back batching. Each fact is cited in its `source` or, where no datasheet gives it, listed
in `[device.assumed]` with the range it may take.
"""

from __future__ import annotations

import enum
import functools
import re
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf._native import core
from pcieperf.errors import ProfileError, UsageError, require_choice, require_positive
from pcieperf.net.ethernet import Ethernet, PacketMix, check_frame_sizes, dma_bytes
from pcieperf.net.wire import MIN_FRAME_BYTES
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import Op, WireCost, price_key, range_wire_cost, wire_cost

if TYPE_CHECKING:  # trace loads the Rust core: imported where a trace is priced
    from pcieperf.net.trace import Demand, Trace

Initiator = Literal["host_mmio_write", "host_mmio_read", "dma_read", "dma_write", "interrupt"]
INITIATORS: tuple[Initiator, ...] = (
    "host_mmio_write",
    "host_mmio_read",
    "dma_read",
    "dma_write",
    "interrupt",
)
PATHS = ("rx", "tx")
BUILTIN_NAMES = ("pkt", "frame")
CACHE_LINE_BYTES = 64  # x86 cache line: the unit in which the root complex moves data
Bottleneck = Literal["ethernet", "pcie_up", "pcie_down"]
MAX_OP_BYTES = 1 << 32  # 4 GiB per operation: larger sizes are typos
NEAR_LIMIT = 0.01  # a bound within 1 % of the achieved rate is named as a limit too

PROFILES = Path(__file__).with_name("profiles")
"""The built-in profiles: files beside this module (pcieperf, with its compiled core, is never
imported from a zip), read without importlib.resources, whose imports (zipfile, tempfile,
shutil) cost `nic` 5-25 ms of start-up here (python -X importtime)."""
_PROFILE_KEYS = {"name", "description", "source", "notes", "params", "device", "rx", "tx"}
DEVICE_FACTS = ("read_requests", "queues", "rx_fetch_bytes", "tx_fetch_bytes", "rx_wb_batch")
_DEVICE_KEYS = {"name", "source", "notes", "assumed", *DEVICE_FACTS}
_OP_KEYS = {"what", "initiator", "size", "every", "counted", "offset", "addr64", "source"}
_OP_REQUIRED = ("what", "initiator", "size", "every")

Int = NDArray[np.int64]
T = TypeVar("T")


@dataclass(frozen=True)
class Operation:
    """One PCIe interaction: who starts it, how many bytes, once every how many packets.

    `counted` is what host-side uncore counters see per occurrence when it differs from
    `size`, e.g. `cl(pkt)` because the root complex moves whole 64-byte cache lines.
    """

    what: str
    initiator: Initiator
    size: str
    every: str
    counted: str = ""
    offset: int = 0
    addr64: bool | None = None
    source: str = ""

    @property
    def moves_packet(self) -> bool:
        """Whether it carries the packet itself (its size depends on pkt or frame)."""
        return bool(_tokens(self.size) & set(BUILTIN_NAMES))


@dataclass(frozen=True)
class DeviceFacts:
    """A NIC's DMA side (the profile's `[device]` table), as pricing and simulation need it.

    `read_requests`: non-posted requests (tags) the device keeps outstanding at once; `queues`:
    Rx/Tx queue pairs; `rx_fetch_bytes` / `tx_fetch_bytes`: bytes per descriptor fetch;
    `rx_wb_batch`: Rx completions (descriptor write-backs, CQEs) per DMA write. `assumed` maps
    each fact no datasheet gives to the (low, high) range it may take.
    """

    name: str
    source: str
    read_requests: int
    queues: int
    rx_fetch_bytes: int
    tx_fetch_bytes: int
    rx_wb_batch: int
    notes: str = ""
    assumed: dict[str, tuple[int, int]] = field(default_factory=dict)

    def facts(self) -> dict[str, float]:
        """The numeric facts by name, as operation expressions use them."""
        return {name: float(getattr(self, name)) for name in DEVICE_FACTS}


def check_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The paths, each of them rx or tx (a usage error names any other)."""
    for p in paths:
        require_choice("path", p, PATHS)
    return paths


@dataclass(frozen=True)
class NicProfile:
    """A named NIC/driver model with its provenance."""

    name: str
    description: str
    source: str
    notes: str
    params: dict[str, float]
    rx: tuple[Operation, ...]
    tx: tuple[Operation, ...]
    path: str = ""
    device: DeviceFacts | None = None

    @property
    def names(self) -> dict[str, float]:
        """Every name an operation expression may use besides pkt and frame."""
        return {**self.params, **(self.device.facts() if self.device else {})}

    def operations(self, paths: tuple[str, ...] = PATHS) -> list[tuple[str, Operation]]:
        """(path, operation) pairs of the selected paths, in profile order."""
        check_paths(paths)
        return [(p, op) for p in paths for op in getattr(self, p)]


# ---------------------------------------------------------------------------------------------
# Loading and validation


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped with pcieperf."""
    return sorted(p.stem for p in PROFILES.glob("*.toml"))


def load_profile(name_or_path: str) -> NicProfile:
    """Load a built-in profile by name, or a user profile from a `.toml` path."""
    if name_or_path in builtin_profiles():
        res = PROFILES / f"{name_or_path}.toml"
        return parse_profile(res.read_text(encoding="utf-8"), f"{name_or_path} (built-in)")
    path = Path(name_or_path)
    if path.suffix != ".toml":
        raise UsageError(
            f"unknown profile {name_or_path!r}; use one of {', '.join(builtin_profiles())} "
            "or a path to a .toml profile"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read profile {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    return parse_profile(text, str(path))


def parse_profile(text: str, origin: str) -> NicProfile:
    """Parse and validate profile TOML; every error names `origin`, the table path and key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin}: not valid TOML: {exc}") from None
    _reject_unknown(origin, "", data, _PROFILE_KEYS)
    for key in ("name", "source"):
        if not isinstance(data.get(key), str):
            raise ProfileError(f"{origin}: missing or non-text top-level key {key!r}")
    params = _parse_params(origin, data.get("params", {}))
    device = _parse_device(origin, data["device"]) if "device" in data else None
    names = {**params, **(device.facts() if device else {})}
    for p in PATHS:
        if not isinstance(data.get(p, []), list):
            raise ProfileError(f"{origin}: {p} = {data[p]!r}; expected [[{p}]] operation tables")
    paths = {
        p: tuple(
            _parse_op(origin, f"{p}[{i}]", raw, names) for i, raw in enumerate(data.get(p, []))
        )
        for p in PATHS
    }
    if not paths["rx"] and not paths["tx"]:
        raise ProfileError(f"{origin}: a profile needs at least one [[rx]] or [[tx]] operation")
    return NicProfile(
        name=data["name"],
        description=data.get("description", ""),
        source=data["source"],
        notes=data.get("notes", ""),
        params=params,
        rx=paths["rx"],
        tx=paths["tx"],
        path=origin,
        device=device,
    )


def _reject_unknown(origin: str, where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        at = f" in {where}" if where else ""
        raise ProfileError(
            f"{origin}: unknown key {unknown[0]!r}{at}; allowed: {', '.join(sorted(allowed))}"
        )


def _parse_params(origin: str, raw: object) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise ProfileError(f"{origin}: [params] must be a table of numbers")
    params: dict[str, float] = {}
    for key, value in raw.items():
        if key in BUILTIN_NAMES or key in DEVICE_FACTS or not key.isidentifier():
            raise ProfileError(
                f"{origin}: params.{key} is not a usable name (reserved: "
                f"{', '.join((*BUILTIN_NAMES, *DEVICE_FACTS))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ProfileError(f"{origin}: params.{key} = {value!r}; it must be a number > 0")
        params[key] = float(value)
    return params


def _parse_device(origin: str, raw: object) -> DeviceFacts:
    """The `[device]` table: text name and source, whole-number facts >= 1, and the range of
    each assumed fact (which must hold the value used)."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{origin}: [device] must be a table")
    _reject_unknown(origin, "device", raw, _DEVICE_KEYS)
    for key in ("name", "source", *DEVICE_FACTS):
        if key not in raw:
            raise ProfileError(f"{origin}: [device] is missing {key!r}")
    for key in ("name", "source", "notes"):
        if not isinstance(raw.get(key, ""), str):
            raise ProfileError(f"{origin}: device.{key} must be text")
    for key in DEVICE_FACTS:
        _require_whole(origin, f"device.{key}", raw[key])
    assumed = raw.get("assumed", {})
    if not isinstance(assumed, dict):
        raise ProfileError(f"{origin}: [device.assumed] must be a table of [low, high] ranges")
    _reject_unknown(origin, "device.assumed", assumed, set(DEVICE_FACTS))
    for key, bounds in assumed.items():
        where = f"device.assumed.{key}"
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise ProfileError(f"{origin}: {where} = {bounds!r}; use [low, high]")
        for bound in bounds:
            _require_whole(origin, where, bound)
        if not bounds[0] <= raw[key] <= bounds[1]:
            raise ProfileError(
                f"{origin}: {where} = {bounds!r} does not hold device.{key} = {raw[key]}"
            )
    return DeviceFacts(
        **{k: v for k, v in raw.items() if k != "assumed"},
        assumed={k: (int(lo), int(hi)) for k, (lo, hi) in assumed.items()},
    )


def _require_whole(origin: str, where: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ProfileError(f"{origin}: {where} = {value!r}; it must be a whole number >= 1")


def _parse_op(origin: str, where: str, raw: object, names: dict[str, float]) -> Operation:
    if not isinstance(raw, dict):
        raise ProfileError(f"{origin}: {where} must be a table")
    _reject_unknown(origin, where, raw, _OP_KEYS)
    for key in _OP_REQUIRED:
        if key not in raw:
            raise ProfileError(f"{origin}: {where} is missing {key!r}")
    if raw["initiator"] not in INITIATORS:
        raise ProfileError(
            f"{origin}: {where}.initiator = {raw['initiator']!r}; allowed: {', '.join(INITIATORS)}"
        )
    for key in ("size", "every", "counted"):
        if key in raw:
            _check_expression(origin, f"{where}.{key}", raw[key], names)
    offset = raw.get("offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ProfileError(f"{origin}: {where}.offset = {offset!r}; use a whole number >= 0")
    return Operation(
        what=str(raw["what"]),
        initiator=raw["initiator"],
        size=str(raw["size"]),
        every=str(raw["every"]),
        counted=str(raw.get("counted", "")),
        offset=offset,
        addr64=raw.get("addr64"),
        source=str(raw.get("source", "")),
    )


_OPERATOR = re.compile(r"\s*([*/])\s*")


def _factors(expr: str) -> list[tuple[str, str]]:
    """(operator, factor) pairs of an expression: names and numbers joined by '*' or '/'."""
    parts = _OPERATOR.split(str(expr))
    return list(zip(["*", *parts[1::2]], parts[0::2], strict=True))


def _tokens(expr: str) -> set[str]:
    """The names and numbers an expression multiplies or divides by (cl(x) counts as x)."""
    return {f.strip().removeprefix("cl(").removesuffix(")") for _, f in _factors(expr)}


def _check_expression(origin: str, where: str, expr: object, names: dict[str, float]) -> None:
    if isinstance(expr, bool) or not isinstance(expr, int | float | str):
        raise ProfileError(
            f"{origin}: {where} = {expr!r}; use a number or names joined by '*' or '/'"
        )
    known = {**names, **dict.fromkeys(BUILTIN_NAMES, 1.0)}
    for _, factor in _factors(str(expr)):
        if _factor_value(factor, known) is None:
            raise ProfileError(
                f"{origin}: {where} = {expr!r}: {factor.strip()!r} is neither a positive number, "
                f"a name ({', '.join(known)}) nor cl(name)"
            )


def _factor_value(factor: str, names: dict) -> float | NDArray[np.float64] | None:
    """Value of one factor: a positive number, a name, or cl(x) = x in whole cache lines."""
    token = factor.strip()
    if token.startswith("cl(") and token.endswith(")"):
        inner = _factor_value(token[3:-1], names)
        return (
            None if inner is None else -(-np.asarray(inner) // CACHE_LINE_BYTES) * CACHE_LINE_BYTES
        )
    if token in names:
        return names[token]
    try:
        value = float(token)
    except ValueError:
        return None
    return value if value > 0 else None


def evaluate_expression(
    expr: str, names: dict[str, float], pkt: NDArray[np.int64], frame: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Value of a validated size/frequency expression for each packet size; `names` are the
    profile's (`NicProfile.names`)."""
    known = {**names, "pkt": pkt, "frame": frame}
    value: NDArray[np.float64] = np.ones(pkt.shape)
    with np.errstate(over="ignore", under="ignore"):  # callers refuse what is not finite
        for operator, factor in _factors(expr):
            operand = _factor_value(factor, known)
            value = value * operand if operator == "*" else value / operand
    return value


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


def _initiated(link: Link, initiator: Initiator, addr64: bool | None) -> tuple[Op, bool, bool]:
    """(TLP kind, 64-bit addresses, whether the device initiates) of an operation."""
    device_side = initiator in ("dma_read", "dma_write", "interrupt")
    if addr64 is None:
        addr64 = link.addr64 if initiator in ("dma_read", "dma_write") else False
    kind: Op = "read" if initiator in ("dma_read", "host_mmio_read") else "write"
    return kind, addr64, device_side


@dataclass(frozen=True)
class OpShare:
    """Per-packet cost of one profile operation (arrays over the evaluated sizes)."""

    path: str
    op: Operation
    per_packet: NDArray[np.float64]
    up_bytes: NDArray[np.float64]
    down_bytes: NDArray[np.float64]
    up_tlps: NDArray[np.float64]
    down_tlps: NDArray[np.float64]
    data_bytes: NDArray[np.float64]
    counted_bytes: NDArray[np.float64]


_SHARE_ARRAYS = tuple(OpShare.__dataclass_fields__)[2:]  # per_packet ... counted_bytes


def price_operations(
    link: Link, profile: NicProfile, frames: NDArray[np.int64], paths: tuple[str, ...] = PATHS
) -> list[OpShare]:
    """Per-packet wire bytes and TLPs of every operation for each frame size."""
    pkt = dma_bytes(frames)
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
    frames: NDArray[np.int64],
    pkt: NDArray[np.int64],
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
    profile: NicProfile, path: str, op: Operation, frames: Int, pkt: Int
) -> NDArray[np.float64]:
    """Bytes of one occurrence at each size, checked to be whole bytes from 1 to MAX_OP_BYTES."""
    size = evaluate_expression(op.size, profile.names, pkt, frames)
    bad = (size != np.round(size)) | (size < 1) | ~np.isfinite(size) | (size > MAX_OP_BYTES)
    if np.any(bad):
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} size {op.size!r} "
            f"gives {size[bad][0]} bytes; sizes must be whole bytes from 1 to {MAX_OP_BYTES}"
        )
    return size


def _op_rate(
    profile: NicProfile, path: str, op: Operation, frames: Int, pkt: Int
) -> NDArray[np.float64]:
    """Occurrences per packet (1 / every) at each size, `every` checked to be finite and > 0."""
    every = evaluate_expression(op.every, profile.names, pkt, frames)
    if not np.all(np.isfinite(every) & (every > 0)):
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} every {op.every!r} gives "
            f"{every[~(np.isfinite(every) & (every > 0))][0]}; it must be a finite number > 0"
        )
    return 1 / every


def _op_wire(link: Link, op: Operation, size: NDArray[np.float64]) -> tuple[Int, Int, Int, Int]:
    """Wire bytes up, wire bytes down, TLPs up and TLPs down of one occurrence at each size."""
    kind, addr64, device_side = _initiated(link, op.initiator, op.addr64)
    end = size.astype(np.int64)  # checked by `_op_size`: whole bytes from 1
    if op.offset:
        end += op.offset
    cost = range_wire_cost(link, kind, np.int64(op.offset), end, addr64=addr64)
    if device_side:
        return cost.wire_out, cost.wire_back, cost.tlps_out, cost.tlps_back
    return cost.wire_back, cost.wire_out, cost.tlps_back, cost.tlps_out


def _names_packet(op: Operation) -> bool:
    """Whether any of the operation's expressions names pkt or frame."""
    return any(_tokens(e) & set(BUILTIN_NAMES) for e in (op.size, op.every, op.counted))


# ---------------------------------------------------------------------------------------------
# Totals per packet, shared by links that differ only in speed

Term = np.float64 | NDArray[np.float64] | Int
"""One operation's share of a per-packet total: a scalar where it is the same at every size."""
_TOTALS = ("up_bytes", "down_bytes", "up_tlps", "down_tlps")


def _ordered_sum(terms: Iterable[Term], start: Term) -> Term:
    """`start + t0 + t1 + ...`, each term broadcast over the sizes, bit for bit in fewer passes:
    a term that is the same at every size is added as a scalar (into a scalar while no array
    has been added), and zeros are skipped (x + 0.0 is x for every x >= 0, and every term is).
    `start` (the sum of earlier terms) is left unchanged."""
    total, owned = start, False
    for term in terms:
        if np.ndim(term) and term.strides == (0,):  # a broadcast constant of `wire_cost`
            term = term[0]
        if np.ndim(term) == 0 and term == 0:
            continue
        if owned:
            total += term
        else:
            total = total + term
            owned = np.ndim(total) > 0
    return total


class _once(Generic[T]):  # noqa: N801 (named as the decorator it is used as)
    """A property computed on first use and kept: `functools.cached_property` without its lock
    (Python 3.11 takes one per first use, which costs more than a result's arrays)."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func, self.__doc__ = func, func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> T:
        if obj is None:  # looked up on the class
            return self
        value = obj.__dict__[self.name] = self.func(obj)  # found there from now on
        return value


def _frozen(array: NDArray) -> NDArray:
    """`array`, made read-only: it is shared by every result that reuses it."""
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class PacketCosts:
    """PCIe wire bytes and TLPs per packet, each direction, per size or mix (read-only arrays:
    shared by every link with the same TLP rules, `tlp.price_key`)."""

    up_bytes: NDArray[np.float64]
    down_bytes: NDArray[np.float64]
    up_tlps: NDArray[np.float64]
    down_tlps: NDArray[np.float64]
    at_line: dict[LineRates, tuple[NDArray, NDArray]] = field(default_factory=dict, repr=False)

    @_once
    def per_busiest_byte(self) -> NDArray[np.float64]:
        """1 / the busier direction's bytes, which bind the packet rate: a link's packet rate
        is its byte rate times this."""
        return _frozen(1 / np.maximum(self.up_bytes, self.down_bytes))

    @_once
    def per_byte(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(1 / bytes up, 1 / bytes down); infinite where no byte goes that way (no bound)."""
        with np.errstate(divide="ignore"):
            return _frozen(1 / self.up_bytes), _frozen(1 / self.down_bytes)

    @_once
    def up_gbit(self) -> NDArray[np.float64]:
        """Gigabits up per packet (bytes * 8 / 1e9), what a packet rate is multiplied by."""
        return _frozen(self.up_bytes * 8 / 1e9)

    @_once
    def down_gbit(self) -> NDArray[np.float64]:
        """Gigabits down per packet."""
        return _frozen(self.down_bytes * 8 / 1e9)

    @_once
    def pcie_side(self) -> NDArray[np.uint8]:
        """`bottleneck_code` where PCIe binds: pcie_up, or pcie_down when more goes down."""
        return _frozen(PCIE_DOWN - (self.up_bytes >= self.down_bytes))

    def gbps_at(self, line: LineRates) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """PCIe Gb/s (up, down) at `line`'s packet rates: the rates of every link that keeps
        up with that port at every row (computed once per port)."""
        found = self.at_line.get(line)
        if found is None:
            up, down = line.line_pps * self.up_gbit, line.line_pps * self.down_gbit
            found = self.at_line[line] = (_frozen(up), _frozen(down))
        return found

    def per_row(self, rows: Rows) -> PacketCosts:
        """The costs of each row of `rows`, from the costs of each of its distinct sizes."""
        if rows.size_of is None and rows.mix_of is None:
            return self
        return PacketCosts(*(_frozen(rows.per_row(getattr(self, f))) for f in _TOTALS))


class _Recent(Generic[T]):
    """The last few results of an expensive computation by key, each confirmed by `valid`
    (what it was computed from is equal) before reuse. Bounded; results are shared, so they are
    read-only. Sweeps may price on several threads (Dask workers), hence the lock."""

    def __init__(self, entries: int) -> None:
        self._size = entries
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, valid: Callable[[T], bool], compute: Callable[[], T]) -> T:
        """The kept result for `key` if `valid`, else `compute()` (and kept)."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None and valid(found):
                self._entries.move_to_end(key)
                return found
        found = compute()
        with self._lock:
            self._entries[key] = found
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return found


class _PlannedOp:
    """One operation at some sizes, all that pricing it needs besides the link: bytes per
    occurrence and occurrences per packet (arrays of one value where the expression names no
    packet). Internal classes here are plain: a dataclass costs ~1 ms of every start-up."""

    __slots__ = ("op", "per_packet", "size")

    def __init__(
        self, op: Operation, size: NDArray[np.float64], per_packet: NDArray[np.float64]
    ) -> None:
        self.op, self.size, self.per_packet = op, size, per_packet

    def terms(self, link: Link) -> tuple[Term, Term, Term, Term]:
        """(up bytes, down bytes, up TLPs, down TLPs) per packet on `link`, each `_price`'s
        value bit for bit: a scalar where it is the same at every size, and for an operation
        once per packet the integer counts themselves (n * 1.0 is n)."""
        wire = _op_wire(link, self.op, self.size)
        if self.size.size > 1 and self.per_packet.size == 1 and self.per_packet[0] == 1:
            return wire
        terms = tuple(w * self.per_packet for w in wire)
        return tuple(t[0] for t in terms) if terms[0].size == 1 else terms


def _plan_op(
    profile: NicProfile, path: str, op: Operation, frames: Int, pkt: Int
) -> _PlannedOp | ProfileError:
    """`op`'s size and frequency at `frames`, each evaluated once where it names no packet, or
    the error the first of them gives."""

    def at(expr: str) -> slice:
        return slice(None) if _tokens(expr) & set(BUILTIN_NAMES) else slice(1)

    try:
        size = _op_size(profile, path, op, frames[at(op.size)], pkt[at(op.size)])
        per_packet = _op_rate(profile, path, op, frames[at(op.every)], pkt[at(op.every)])
    except ProfileError as exc:
        return exc
    return _PlannedOp(op, size, per_packet)


class _Plan:
    """A profile's operations at some sizes (a `Rows`' read-only sizes, kept as they are),
    planned once for every link: (path, planned operation or its error) in profile order."""

    __slots__ = ("ops", "profile", "sizes")

    def __init__(
        self,
        profile: NicProfile,
        sizes: Int,
        ops: tuple[tuple[str, _PlannedOp | ProfileError], ...],
    ) -> None:
        self.profile, self.sizes, self.ops = profile, sizes, ops

    def matches(self, profile: NicProfile, sizes: Int) -> bool:
        """Whether this plan is for `profile` at `sizes`."""
        same_profile = self.profile is profile or self.profile == profile
        return same_profile and (self.sizes is sizes or np.array_equal(self.sizes, sizes))


def _plan(profile: NicProfile, sizes: Int) -> _Plan:
    pkt = dma_bytes(sizes)
    ops = tuple((p, _plan_op(profile, p, op, sizes, pkt)) for p, op in profile.operations())
    return _Plan(profile, sizes, ops)


class _LinkTerms:
    """A plan's operation terms on one set of TLP rules (`tlp.price_key`), priced as they are
    first needed, and the per-packet totals of each choice of paths asked for so far."""

    __slots__ = ("link", "plan", "sums", "terms", "totals")

    def __init__(self, plan: _Plan, link: Link) -> None:
        self.plan, self.link = plan, link
        self.terms: dict[int, tuple[Term, Term, Term, Term]] = {}
        self.sums: dict[tuple[str, ...], tuple[Term, Term, Term, Term]] = {}
        self.totals: dict[tuple[str, ...], PacketCosts] = {}

    def costs(self, paths: tuple[str, ...]) -> PacketCosts:
        """Per-packet totals of the operations of `paths`, in `NicProfile.operations` order
        (the first profile error among them is raised)."""
        found = self.totals.get(paths)
        if found is None:
            n = self.plan.sizes.size
            sums = (np.full(n, s) if np.ndim(s) == 0 else s for s in self._sums(paths))
            found = self.totals[paths] = PacketCosts(*(_frozen(a) for a in sums))
        return found

    def _sums(self, paths: tuple[str, ...]) -> tuple[Term, Term, Term, Term]:
        """The four sums over `paths`' operations, continuing those of all paths but the last
        (rx+tx goes on from rx alone: the same additions in the same order)."""
        found = self.sums.get(paths)
        if found is None:
            start = self._sums(paths[:-1]) if len(paths) > 1 else (np.float64(0),) * 4
            ops = self.plan.ops
            terms = [self._terms(i) for i, (q, _) in enumerate(ops) if q == paths[-1]]
            sums = tuple(_ordered_sum((t[k] for t in terms), start[k]) for k in range(4))
            for total in sums:
                if np.ndim(total):
                    total.flags.writeable = False
            found = self.sums[paths] = sums
        return found

    def _terms(self, index: int) -> tuple[Term, Term, Term, Term]:
        found = self.terms.get(index)
        if found is None:
            planned = self.plan.ops[index][1]
            if isinstance(planned, ProfileError):
                raise planned
            found = self.terms[index] = planned.terms(self.link)
            for term in found:
                if isinstance(term, np.ndarray):
                    term.flags.writeable = False
        return found


_RECENT_PLANS: _Recent[_Plan] = _Recent(8)
_RECENT_TERMS: _Recent[_LinkTerms] = _Recent(8)


def packet_costs(
    profile: NicProfile, link: Link, sizes: Int, paths: tuple[str, ...] = PATHS
) -> PacketCosts:
    """`profile`'s per-packet totals over `paths` at each of `sizes` (read-only, ascending and
    distinct: a `Rows`' sizes) on `link`. Reused while a sweep prices the same profile and sizes
    on links that differ only in speed (generation, lanes, ACK/FC intervals): TLP counts and
    bytes depend on `tlp.price_key` alone, so only the rates are computed per link."""
    return _packet_costs(profile, link, _link_facts(link)[1], sizes, paths)


def _packet_costs(
    profile: NicProfile,
    link: Link,
    key: tuple[int | bool, ...],
    sizes: Int,
    paths: tuple[str, ...],
) -> PacketCosts:
    """`packet_costs`, given `link`'s price key."""
    global _LAST_COSTS
    (last_profile, last_sizes, last_key, last_paths), last = _LAST_COSTS
    if last_sizes is sizes and last_profile is profile and (last_key, last_paths) == (key, paths):
        return last  # a sweep over links asks for the same costs again and again
    if not profile.operations(paths):
        raise UsageError(
            f"profile {profile.name!r} has no operations on the paths {', '.join(paths)}; "
            f"it has {', '.join(p for p in PATHS if getattr(profile, p))}"
        )
    where = (profile.name, profile.path, sizes.shape)
    plan = _RECENT_PLANS.get(
        where, lambda p: p.matches(profile, sizes), lambda: _plan(profile, sizes)
    )
    terms = _RECENT_TERMS.get(
        (*where, key), lambda t: t.plan is plan, lambda: _LinkTerms(plan, link)
    )
    found = terms.costs(paths)
    if plan.sizes is sizes and not sizes.flags.writeable:  # this very array, which cannot change
        _LAST_COSTS = ((profile, sizes, key, paths), found)
    return found


_LAST_COSTS: tuple[tuple, PacketCosts | None] = ((None, None, None, None), None)


# ---------------------------------------------------------------------------------------------
# Results

ETHERNET, PCIE_UP, PCIE_DOWN = np.uint8(0), np.uint8(1), np.uint8(2)


class Binds(enum.Enum):
    """Which bound sets a result's rate: Ethernet at every row, PCIe at every row, or it varies."""

    ETHERNET = "ethernet"
    PCIE = "pcie"
    VARIES = "varies"


BOTTLENECKS = np.array(["ethernet", "pcie_up", "pcie_down"])
"""Names of the `bottleneck_code` values."""


@dataclass(frozen=True, eq=False)
class Rows:
    """The rows of a result and the distinct frame sizes (`sizes`, ascending) they are made
    of. A row is one fixed size, or a mix: a sparse weight list where entry k gives row
    `mix_of[k]` a share `weight[k]` of size `size_of[k]`. `mix_of` is None when each row is one
    size (entry k is row k, weight 1), and `size_of` is None too when row k is `sizes[k]`."""

    sizes: Int
    size_of: Int | None = None
    mix_of: Int | None = None
    weight: NDArray[np.float64] | None = None
    names: tuple[str, ...] | None = None
    lines: dict[Ethernet, LineRates] = field(default_factory=dict, repr=False)

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

    def line(self, eth: Ethernet) -> LineRates:
        """What `eth` gives each row, whatever the link (computed once per port)."""
        found = self.lines.get(eth)
        if found is None:
            found = self.lines[eth] = LineRates.of(self, eth)
        return found


KEEPS_UP = 1e-12
"""PCIe within this fraction of line rate keeps up: Ethernet is named the bottleneck."""


@dataclass(frozen=True, eq=False)
class LineRates:
    """What an Ethernet port gives each row, whatever the link (read-only, shared): line-rate
    packets per second, mean frame bytes and gigabits per packet, line rate in Gb/s, and the
    packet rate from which PCIe keeps up with the line."""

    line_pps: NDArray[np.float64]
    mean_frame_bytes: NDArray[np.float64]
    frame_gbit: NDArray[np.float64]
    line_rate_gbps: NDArray[np.float64]
    keeps_up_pps: NDArray[np.float64]

    @classmethod
    def of(cls, rows: Rows, eth: Ethernet) -> LineRates:
        """Line-rate packet rate of each row (one over the mean wire time per packet) and what
        follows from it."""
        mean_wire = rows.per_row(eth.wire_bytes(rows.sizes).astype(np.float64))
        line_pps = eth.rate_gbps * 1e9 / (8 * mean_wire)
        mean_frame = rows.per_row(rows.sizes.astype(np.float64))
        gbit = mean_frame * 8 / 1e9
        arrays = (line_pps, mean_frame, gbit, line_pps * gbit, line_pps / (1 + KEEPS_UP))
        return cls(*(_frozen(a) for a in arrays))

    @_once
    def all_ethernet(self) -> NDArray[np.uint8]:
        """`bottleneck_code` of a link that keeps up at every row."""
        return _frozen(np.full(self.line_pps.shape, ETHERNET))


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


@functools.lru_cache(maxsize=256)
def _link_facts(link: Link) -> tuple[float, tuple[int | bool, ...]]:
    """`link.tlp_bytes_per_s` and `tlp.price_key(link)`, computed once per link (a sweep asks
    for them per profile and paths)."""
    return link.tlp_bytes_per_s, price_key(link)


@dataclass(frozen=True, eq=False)
class NicResult:
    """What a NIC/driver model achieves on a link and Ethernet port, one row per size or mix.

    Costs are priced once per distinct frame size and averaged per packet over each row's sizes
    (`Rows`), so a mix costs the mean of its packets' costs, never the cost of its mean size, and
    thousands of fixed sizes stay cheap. Per-packet costs and what the port gives are shared by
    every link with the same TLP rules; only the rates are computed per link.
    """

    rows: Rows
    costs: PacketCosts
    line: LineRates
    capacity_bytes_per_s: float
    eth: Ethernet
    profile: NicProfile = field(repr=False)
    link: Link
    paths: tuple[str, ...]

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
        return _frozen(self.capacity_bytes_per_s * self.costs.per_busiest_byte)

    @_once
    def binds(self) -> Binds:
        """Whether Ethernet binds at every row, PCIe at every row, or it varies: where one
        binds everywhere, the rates are the port's or the link's as they are."""
        pcie, line = self.pcie_max_pps, self.line
        if not pcie.size:
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
        return _frozen(np.minimum(self.pcie_max_pps, self.line_pps))

    @_once
    def achievable_gbps(self) -> NDArray[np.float64]:
        """Frame throughput (Gb/s, per direction) at `max_pps`."""
        if self.binds is Binds.ETHERNET:
            return self.line_rate_gbps
        return _frozen(self.max_pps * self.line.frame_gbit)

    @_once
    def pcie_up_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used device to host at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[0]
        return _frozen(self.max_pps * self.costs.up_gbit)

    @_once
    def pcie_down_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used host to device at `max_pps`, in Gb/s."""
        if self.binds is Binds.ETHERNET:
            return self.costs.gbps_at(self.line)[1]
        return _frozen(self.max_pps * self.costs.down_gbit)

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
        return _frozen(self.falls_short * self.costs.pcie_side)  # ETHERNET (0) where it keeps up

    @property
    def bottleneck(self) -> NDArray[np.str_]:
        """`ethernet`, `pcie_up` or `pcie_down`; Ethernet wins when PCIe keeps up to within
        `KEEPS_UP`, so a link that just keeps up is not blamed."""
        return BOTTLENECKS[self.bottleneck_code]

    @_once
    def limited_by_code(self) -> NDArray[np.uint8]:
        """`limited_by` as an index into `LIMIT_ORDERS`: which bounds are near, and their order."""
        per_up, per_down = self.costs.per_byte
        line = self.line_pps
        up, down = self.capacity_bytes_per_s * per_up, self.capacity_bytes_per_s * per_down
        near = self.max_pps * (1 + NEAR_LIMIT)
        bits = (line <= near, up <= near, down <= near, line <= up, line <= down, down <= up)
        code = np.zeros(line.shape, np.uint8)
        for shift, bit in enumerate(bits):
            code |= bit.view(np.uint8) << shift
        return code

    @property
    def limited_by(self) -> list[list[str]]:
        """Per row, every bound within 1 % of the achieved rate, the tightest first (ties by
        name): what would have to move for the rate to rise."""
        return [list(LIMIT_ORDERS[c]) for c in self.limited_by_code.tolist()]


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
        _frozen(sizes),
        size_of,
        mix_of=np.repeat(np.arange(len(mixes)), [m.sizes.size for m in mixes]),
        weight=np.concatenate([m.weights for m in mixes]),
        names=tuple(m.name for m in mixes),
    )
    return _evaluate(profile, link, eth, paths, rows)


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
    frames = _frozen(check_frame_sizes(frames))
    if frames.size and np.all(frames[1:] > frames[:-1]):  # ascending and distinct already
        return Rows(frames)
    sizes, size_of = np.unique(frames, return_inverse=True)
    return Rows(_frozen(sizes), _frozen(size_of))


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
    from pcieperf.net.trace import demand

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

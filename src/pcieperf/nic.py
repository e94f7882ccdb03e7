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

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf.errors import ProfileError, UsageError, require_choice
from pcieperf.ethernet import Ethernet, PacketMix, check_frame_sizes, dma_bytes
from pcieperf.link import Link
from pcieperf.tlp import WireCost, wire_cost
from pcieperf.trace import Demand, Trace, demand

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

_PROFILE_KEYS = {"name", "description", "source", "notes", "params", "device", "rx", "tx"}
DEVICE_FACTS = ("read_requests", "queues", "rx_fetch_bytes", "tx_fetch_bytes", "rx_wb_batch")
_DEVICE_KEYS = {"name", "source", "notes", "assumed", *DEVICE_FACTS}
_OP_KEYS = {"what", "initiator", "size", "every", "counted", "offset", "addr64", "source"}
_OP_REQUIRED = ("what", "initiator", "size", "every")


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
    folder = resources.files("pcieperf") / "profiles"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_profile(name_or_path: str) -> NicProfile:
    """Load a built-in profile by name, or a user profile from a `.toml` path."""
    if name_or_path in builtin_profiles():
        res = resources.files("pcieperf") / "profiles" / f"{name_or_path}.toml"
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
    device_side = initiator in ("dma_read", "dma_write", "interrupt")
    if addr64 is None:
        addr64 = link.addr64 if initiator in ("dma_read", "dma_write") else False
    kind = "read" if initiator in ("dma_read", "host_mmio_read") else "write"
    return wire_cost(link, kind, size, offset, addr64=addr64), device_side


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
    names = profile.names
    size = evaluate_expression(op.size, names, pkt, frames)
    bad = (size != np.round(size)) | (size < 1) | ~np.isfinite(size) | (size > MAX_OP_BYTES)
    if np.any(bad):
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} size {op.size!r} "
            f"gives {size[bad][0]} bytes; sizes must be whole bytes from 1 to {MAX_OP_BYTES}"
        )
    every = evaluate_expression(op.every, names, pkt, frames)
    if not np.all(np.isfinite(every) & (every > 0)):
        raise ProfileError(
            f"{profile.path}: {path} op {op.what!r} every {op.every!r} gives "
            f"{every[~(np.isfinite(every) & (every > 0))][0]}; it must be a finite number > 0"
        )
    per_packet = 1 / every
    counted = evaluate_expression(op.counted, names, pkt, frames) if op.counted else size
    cost, device_side = operation_cost(
        link, op.initiator, size.astype(np.int64), op.offset, op.addr64
    )
    up, down = (cost.wire_out, cost.wire_back) if device_side else (cost.wire_back, cost.wire_out)
    up_t, down_t = (
        (cost.tlps_out, cost.tlps_back) if device_side else (cost.tlps_back, cost.tlps_out)
    )
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


def _names_packet(op: Operation) -> bool:
    """Whether any of the operation's expressions names pkt or frame."""
    return any(_tokens(e) & set(BUILTIN_NAMES) for e in (op.size, op.every, op.counted))


@dataclass(frozen=True)
class NicResult:
    """What a NIC/driver model achieves on a link and Ethernet port, one row per mix.

    Costs are priced once per distinct frame size (`sizes`) and averaged per packet through a
    sparse weight list (entry k: mix `mix_of[k]` has a share `weight[k]` of size
    `size_of[k]`), so a mix costs the mean of its packets' costs, never the cost of its mean
    size, and thousands of fixed sizes stay cheap.
    """

    label: list[str]
    sizes: NDArray[np.int64]
    mix_of: NDArray[np.int64]
    size_of: NDArray[np.int64]
    weight: NDArray[np.float64]
    shares: list[OpShare] = field(repr=False)
    capacity_bytes_per_s: float
    eth: Ethernet

    def per_packet(self, per_size: NDArray[np.float64]) -> NDArray[np.float64]:
        """Mean per packet of each mix, for a quantity given per distinct size."""
        values = np.asarray(per_size, dtype=np.float64)[self.size_of] * self.weight
        return np.bincount(self.mix_of, weights=values, minlength=len(self.label))

    @cached_property
    def line_pps(self) -> NDArray[np.float64]:
        """Line-rate packet rate of each mix: one over the mean wire time per packet."""
        mean_wire = self.per_packet(self.eth.wire_bytes(self.sizes).astype(np.float64))
        return self.eth.rate_gbps * 1e9 / (8 * mean_wire)

    @cached_property
    def mean_frame_bytes(self) -> NDArray[np.float64]:
        """Mean frame size of each mix."""
        return self.per_packet(self.sizes.astype(np.float64))

    @cached_property
    def up_bytes_per_pkt(self) -> NDArray[np.float64]:
        """PCIe wire bytes device to host per packet."""
        return self.per_packet(sum(s.up_bytes for s in self.shares))

    @cached_property
    def down_bytes_per_pkt(self) -> NDArray[np.float64]:
        """PCIe wire bytes host to device per packet."""
        return self.per_packet(sum(s.down_bytes for s in self.shares))

    @cached_property
    def up_tlps_per_pkt(self) -> NDArray[np.float64]:
        """TLPs device to host per packet."""
        return self.per_packet(sum(s.up_tlps for s in self.shares))

    @cached_property
    def down_tlps_per_pkt(self) -> NDArray[np.float64]:
        """TLPs host to device per packet."""
        return self.per_packet(sum(s.down_tlps for s in self.shares))

    @cached_property
    def pcie_max_pps(self) -> NDArray[np.float64]:
        """Highest packet rate the link sustains: the busier direction binds."""
        busiest = np.maximum(self.up_bytes_per_pkt, self.down_bytes_per_pkt)
        return self.capacity_bytes_per_s / busiest

    @cached_property
    def max_pps(self) -> NDArray[np.float64]:
        """Packets per second actually reachable: the lower of PCIe and Ethernet."""
        return np.minimum(self.pcie_max_pps, self.line_pps)

    @property
    def achievable_gbps(self) -> NDArray[np.float64]:
        """Frame throughput (Gb/s, per direction) at `max_pps`."""
        return self.max_pps * self.mean_frame_bytes * 8 / 1e9

    @property
    def line_rate_gbps(self) -> NDArray[np.float64]:
        """Frame throughput (Gb/s) at Ethernet line rate for this size or mix."""
        return self.line_pps * self.mean_frame_bytes * 8 / 1e9

    @property
    def pcie_up_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used device to host at `max_pps`, in Gb/s."""
        return self.max_pps * self.up_bytes_per_pkt * 8 / 1e9

    @property
    def pcie_down_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth used host to device at `max_pps`, in Gb/s."""
        return self.max_pps * self.down_bytes_per_pkt * 8 / 1e9

    def needed_gbps(self, pps: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """PCIe wire bandwidth (up, down) in Gb/s that `pps` packets per second would need."""
        return pps * self.up_bytes_per_pkt * 8 / 1e9, pps * self.down_bytes_per_pkt * 8 / 1e9

    @property
    def bottleneck(self) -> NDArray[np.str_]:
        """`ethernet`, `pcie_up` or `pcie_down`; Ethernet wins ties, so a link that just
        keeps up is not blamed."""
        up, down = self.up_bytes_per_pkt, self.down_bytes_per_pkt
        pcie_side = np.where(up >= down, "pcie_up", "pcie_down")
        return np.where(self.line_pps <= self.pcie_max_pps * (1 + 1e-12), "ethernet", pcie_side)

    @property
    def limited_by(self) -> list[list[str]]:
        """Per row, every bound within 1 % of the achieved rate, the tightest first: what would
        have to move for the rate to rise."""
        bounds = {
            "ethernet": self.line_pps,
            "pcie_up": self.capacity_bytes_per_s / self.up_bytes_per_pkt,
            "pcie_down": self.capacity_bytes_per_s / self.down_bytes_per_pkt,
        }
        rows = []
        for i, rate in enumerate(self.max_pps):
            near = [
                (float(b[i]), name) for name, b in bounds.items() if b[i] <= rate * (1 + NEAR_LIMIT)
            ]
            rows.append([name for _, name in sorted(near)])
        return rows


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
    return _evaluate(
        profile,
        link,
        eth,
        paths,
        label=[m.name for m in mixes],
        mix_of=np.repeat(np.arange(len(mixes)), [m.sizes.size for m in mixes]),
        frames=np.concatenate([m.sizes for m in mixes]),
        weight=np.concatenate([m.weights for m in mixes]),
    )


def evaluate_sizes(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    frames: ArrayLike,
    paths: tuple[str, ...] = PATHS,
) -> NicResult:
    """Price `profile` for each fixed frame size, vectorised (no per-size objects)."""
    sizes = check_frame_sizes(frames)
    return _evaluate(
        profile,
        link,
        eth,
        paths,
        label=[str(f) for f in sizes.tolist()],
        mix_of=np.arange(sizes.size),
        frames=sizes,
        weight=np.ones(sizes.size),
    )


def _evaluate(
    profile: NicProfile,
    link: Link,
    eth: Ethernet,
    paths: tuple[str, ...],
    *,
    label: list[str],
    mix_of: NDArray[np.int64],
    frames: NDArray[np.int64],
    weight: NDArray[np.float64],
) -> NicResult:
    sizes, size_of = np.unique(frames, return_inverse=True)
    return NicResult(
        label=label,
        sizes=sizes,
        mix_of=mix_of,
        size_of=size_of,
        weight=weight,
        shares=price_operations(link, profile, sizes, paths),
        capacity_bytes_per_s=link.tlp_bytes_per_s,
        eth=eth,
    )


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
    return demand(trace.ts_ns, up, down, window_ns, link.tlp_bytes_per_s)

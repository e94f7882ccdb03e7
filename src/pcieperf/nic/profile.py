"""NIC profiles as data: loading and validating a profile (TOML), its operations and its
`[device]` facts, and the size/frequency expressions they are written in.

A profile lists, for the receive path and the transmit path, every PCIe operation with its
initiator, its size and how often it happens. Sizes and frequencies are products and quotients
of numbers and names: the profile's `[params]`, the facts of its `[device]` table, `pkt` (bytes
DMA'd for the packet: frame minus FCS) and `frame` (frame size incl. FCS).

`[device]` describes the NIC's DMA side once, for every command that prices or simulates the
profile (`nic`, `dpdk-fwd`, `iommu`): outstanding read requests, queues, descriptor fetch and
write-back batching. Each fact is cited in its `source` or, where no datasheet gives it, listed
in `[device.assumed]` with the range it may take.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pcieperf._config import loads_toml, read_text
from pcieperf._values import is_python, ones_like
from pcieperf.errors import ProfileError, UsageError, is_number, require_choice

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Int = NDArray[np.int64]
else:
    from pcieperf._numpy import np

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

PROFILES = Path(__file__).with_name("profiles")
"""The built-in profiles: files beside this module (pcieperf, with its compiled core, is never
imported from a zip), read without importlib.resources, whose imports (zipfile, tempfile,
shutil) cost `nic` 5-25 ms of start-up here (python -X importtime)."""
DEFAULT_PROFILE = "testpmd-fwd"
"""Every command's NIC where none is given: the XL710 (40 GbE, PCIe 3.0 x8) as testpmd forwards
with it, the NIC of the VTune recipe and the 4 KiB-page talk, matching the default link and port."""
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
        return bool(expression_names(self.size) & set(BUILTIN_NAMES))


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

    def __hash__(self) -> int:
        """By name and file (its `params` dict has no hash): a cache key (pcieperf._cache);
        equal profiles, all fields equal, have the same name and file."""
        return hash((self.name, self.path))

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
        origin = f"{name_or_path} (built-in)"
        return parse_profile(read_text(PROFILES / f"{name_or_path}.toml", origin), origin)
    path = Path(name_or_path)
    if path.suffix != ".toml":
        raise UsageError(
            f"unknown profile {name_or_path!r}; use one of {', '.join(builtin_profiles())} "
            "or a path to a .toml profile"
        )
    return parse_profile(read_text(path, f"profile {path}"), str(path))


def parse_profile(text: str, origin: str) -> NicProfile:
    """Parse and validate profile TOML; every error names `origin`, the table path and key."""
    data = loads_toml(text, origin)
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


def _reject_unknown(origin: str, where: str, table: dict[str, Any], allowed: set[str]) -> None:
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
        if not (is_number(value) and value > 0):
            raise ProfileError(
                f"{origin}: params.{key} = {value!r}; it must be a finite number > 0"
            )
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


def expression_names(expr: str) -> set[str]:
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


def _factor_value(factor: str, names: dict[str, Any]) -> float | NDArray[np.float64] | None:
    """Value of one factor: a positive number, a name, or cl(x) = x in whole cache lines (a
    Python float stays one, as numpy would round it: checking a profile needs no numpy)."""
    token = factor.strip()
    if token.startswith("cl(") and token.endswith(")"):
        inner = _factor_value(token[3:-1], names)
        if inner is None:
            return None
        whole = inner if is_python(inner) else np.asarray(inner)
        return -(-whole // CACHE_LINE_BYTES) * CACHE_LINE_BYTES
    if token in names:
        found: float | NDArray[np.float64] = names[token]  # a parameter, pkt or frame
        return found
    try:
        value = float(token)
    except ValueError:
        return None
    return value if is_number(value) and value > 0 else None


def evaluate_expression(
    expr: str, names: dict[str, float], pkt: Int | int, frame: Int | int
) -> NDArray[np.float64] | float:
    """Value of a validated size/frequency expression for each packet size (arrays), or for
    one (Python ints: a float, the same double); `names` are the profile's
    (`NicProfile.names`). Every operand is > 0, so no division is by zero, and Python's float
    arithmetic overflows to inf without a word, as numpy does here."""
    known = {**names, "pkt": pkt, "frame": frame}
    value = ones_like(pkt)
    quiet = nullcontext() if is_python(pkt) else np.errstate(over="ignore", under="ignore")
    with quiet:  # callers refuse what is not finite
        for operator, factor in _factors(expr):
            operand = _factor_value(factor, known)
            value = value * operand if operator == "*" else value / operand
    result: NDArray[np.float64] | float = value  # a Value: an array, or one Python float
    return result

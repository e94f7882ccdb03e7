"""The device side of pcie-bench runs: the DMA engine's profile (`DeviceProfile`, the `[device]`
table of a calibration and `bench sim --device`), the flat-TOML reader of such profiles
(`from_table`), and what a latency test's read spends outside the host (`outside_host_ns`).
Light (no numpy at import): a host's assumed latency is priced from it on every `nic` command
line (issue 27: the tag bound)."""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf._config import load_toml
from pcieperf._values import Value, maximum
from pcieperf.errors import ProfileError, UsageError, is_number
from pcieperf.pcie.alignment import BURST_BYTES, WORD_BYTES
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import read_wire_bytes

if TYPE_CHECKING:
    from pcieperf.pcie.alignment import TransferShape

LATENCY_TEST_BYTES = 64
"""pcie-bench's latency tests (LAT_DMA_RD and the details and CDF files) move 64 B per
transfer (pcie-bench-methodology.md §2)."""


@dataclass(frozen=True)
class DeviceProfile:
    """The device's DMA engines: tags, per-transaction costs and latency.

    A read costs its engine `read_ns + read_line_ns * lines` and a write `write_ns +
    write_line_ns * lines` (separate engines, so reads and writes overlap); every transaction
    also crosses the shared data path for `datapath_ns + datapath_line_ns * lines`, where
    `lines` counts the transfer's 64 B of data (`alignment.data_lines`). On top of that
    (`times`, docs/bench.md "Device and host offsets"): a read costs `read_request_ns` per read
    request beyond the first and `unaligned_read_ns` when its device buffer needs an extra
    8-byte word; the write engine reads device memory in bursts of `burst_bytes`, each
    `burst_ns` (plus `burst_base_ns` once), and keeps pace with the slower of its two sides.
    `latency_overhead_ns` is time the latency benchmark adds to each sample (timestamping)
    that bandwidth runs do not see.
    """

    name: str
    source: str
    tags: int
    read_ns: float
    read_line_ns: float
    write_ns: float
    write_line_ns: float
    datapath_ns: float
    datapath_line_ns: float
    fixed_latency_ns: float
    latency_overhead_ns: float = 0.0
    read_request_ns: float = 0.0
    unaligned_read_ns: float = 0.0
    burst_bytes: int = BURST_BYTES
    burst_base_ns: float = 0.0
    burst_ns: float = 0.0
    notes: str = ""

    def __post_init__(self) -> None:
        if self.burst_bytes < WORD_BYTES or self.burst_bytes % WORD_BYTES:
            raise UsageError(
                f"burst_bytes {self.burst_bytes} must be a whole number of {WORD_BYTES}-byte words"
            )

    def costs(self, lines: Value) -> tuple[Value, Value, Value]:
        """Read-engine, write-engine and data-path time of an aligned transfer of `lines`
        64 B lines of data."""
        return (
            self.read_ns + self.read_line_ns * lines,
            self.write_ns + self.write_line_ns * lines,
            self.datapath_ns + self.datapath_line_ns * lines,
        )

    def times(self, shape: TransferShape) -> tuple[Value, Value, Value]:
        """Read-engine, write-engine and data-path time of transfers of this shape."""
        read, write, path = self.costs(shape.data_lines)
        read = (
            read
            + self.read_request_ns * (shape.read_requests - 1)
            + self.unaligned_read_ns * shape.extra_word
        )
        write = maximum(write, self.burst_base_ns + self.burst_ns * shape.bursts)
        return read, write, path


def from_table(cls: type, table: dict[str, Any], origin: str) -> Any:
    """Build a profile dataclass from a flat TOML table, rejecting unknown or missing keys."""
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ProfileError(
            f"{origin}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(known))}"
        )
    missing = [
        n
        for n, f in known.items()
        if f.default is MISSING and f.default_factory is MISSING and n not in table
    ]
    if missing:
        raise ProfileError(f"{origin}: missing key {missing[0]!r}")
    for name, value in table.items():
        kind = _declared_type(known[name])
        if not _type_ok(kind, value):
            raise ProfileError(f"{origin}: {name} = {value!r}; expected {_TYPE_WORDS[kind]}")
    try:
        return cls(**table)
    except UsageError as exc:
        raise ProfileError(f"{origin}: {exc}") from None


_TYPE_WORDS = {
    "int": "a whole number >= 0",
    "float": "a finite number >= 0",
    "str": "text",
    "bool": "true or false",
    "list[str]": "a list of text",
    "list[float]": "a list of finite numbers >= 0",
}


def _declared_type(field: Field[Any]) -> str:
    """A profile field's type as written: text, as the profile classes' modules postpone
    their annotations (PEP 563)."""
    assert isinstance(field.type, str), "profile classes postpone their annotations"
    return field.type


def _type_ok(kind: str, value: object) -> bool:
    """Whether a TOML value fits a profile field's declared type."""
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "list[float]":
        return isinstance(value, list) and all(_type_ok("float", v) for v in value)
    return is_number(value, 0) and (kind == "float" or isinstance(value, int))


def load_device(path: Path) -> DeviceProfile:
    """A device profile from TOML."""
    return from_table(DeviceProfile, load_toml(path), str(path))


def outside_host_ns(device: DeviceProfile, link: Link) -> float:
    """What a latency-test read spends outside the host: the device's latency, its read
    engine and data path for one line, the benchmark's overhead and the link time."""
    read, _, path = device.costs(1)
    wire_ns = read_wire_bytes(link, LATENCY_TEST_BYTES) / (link.tlp_bytes_per_s / 1e9)
    return device.latency_overhead_ns + device.fixed_latency_ns + read + path + wire_ns

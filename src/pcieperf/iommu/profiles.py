"""Platform IOMMU profiles: what the IOMMU, the LLC's DDIO ways and the polling core of one CPU
platform bring to the DPDK model, as data (src/pcieperf/iommu/platforms/*.toml).

Every parameter is a table with its `value`, the range the evidence leaves open (`low`,
`high`), its `kind` (published, calibration, inference, assumption, fit) and its `source`; a
calibration parameter names the calibration field it is taken from (`from`) instead of a value,
so `e5-v4` is the pcie-bench calibration unchanged. `pcieperf iommu fit` writes profiles of the
same shape from a host's own counters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pcieperf._cache import cached
from pcieperf._config import loads_toml, read_text
from pcieperf.errors import ProfileError, UsageError, is_number
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION, Calibration, load_calibration

PLATFORM_DIR = Path(__file__).parent / "platforms"
DEFAULT_PLATFORM = "e5-v4"
KINDS = ("published", "calibration", "inference", "assumption", "fit")
# Parameters per table; [llc] is optional (no DDIO-style LLC allocation, e.g. AMD EPYC).
SECTIONS: dict[str, tuple[str, ...]] = {
    "iommu": ("iotlb_entries", "walk_ns", "walk_busy_ns", "walkers", "pwc_entries"),
    "llc": ("sets_per_slice", "slices", "ways", "ddio_ways", "dram_extra_ns"),
    "host": ("memory_gib",),
    "core": ("poll_ns", "packet_ns"),
}
OPTIONAL = ("llc",)
INTEGERS = {
    "iommu.iotlb_entries",
    "iommu.walkers",
    "iommu.pwc_entries",
    "llc.sets_per_slice",
    "llc.slices",
    "llc.ways",
    "llc.ddio_ways",
}
PARAM_KEYS = {"value", "from", "low", "high", "kind", "source"}


@dataclass(frozen=True)
class Param:
    """One platform number, the range the evidence leaves open, and where it comes from."""

    value: float
    low: float
    high: float
    kind: str
    source: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return asdict(self)


@dataclass(frozen=True)
class PlatformProfile:
    """A platform's parameters by dotted name (`iommu.iotlb_entries`, ...)."""

    name: str
    title: str
    file: str
    params: dict[str, Param]

    def value(self, key: str) -> float:
        """A parameter's value (int for counts)."""
        v = self.params[key].value
        return int(v) if key in INTEGERS else float(v)

    def count(self, key: str) -> int:
        """A count's value (one of `INTEGERS`)."""
        return int(self.params[key].value)

    @property
    def has_llc(self) -> bool:
        """Whether the platform's LLC takes device writes (DDIO)."""
        return "llc.ddio_ways" in self.params

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return {
            "name": self.name,
            "title": self.title,
            "file": self.file,
            "params": {k: p.as_dict() for k, p in self.params.items()},
        }


def builtin_platforms() -> list[str]:
    """Names of the shipped profiles, default first."""
    names = sorted(p.stem for p in PLATFORM_DIR.glob("*.toml"))
    return [DEFAULT_PLATFORM, *(n for n in names if n != DEFAULT_PLATFORM)]


def platform_path(name: str | Path) -> Path:
    """A built-in profile's file, or the given path to a TOML file."""
    text = str(name)
    if text in builtin_platforms():
        return PLATFORM_DIR / f"{text}.toml"
    path = Path(text)
    if path.suffix == ".toml":  # a file the user names: read (or refused by the reader)
        return path
    raise UsageError(
        f"platform {text!r} is not allowed; choose one of {', '.join(builtin_platforms())} "
        "or give a profile file (.toml)"
    )


def _calibration_value(ref: str, origin: str, cal: Calibration) -> float:
    """The calibration field `ref` ("reference_host.walk_ns", "host.walkers")."""
    table, _, key = ref.partition(".")
    source = {"reference_host": cal.reference, "host": cal.shared}.get(table)
    if source is None or not hasattr(source, key):
        raise ProfileError(
            f"{origin}: from = {ref!r} names no calibration field; use reference_host.<field> "
            "or host.<field>"
        )
    return float(getattr(source, key))


def parse_param(table: Any, origin: str, calibration: Callable[[], Calibration]) -> Param:
    """One parameter table, checked: known keys, a kind, a source, low <= value <= high."""
    if not isinstance(table, dict):
        raise ProfileError(f"{origin}: expected a table with value/low/high/kind/source")
    unknown = sorted(set(table) - PARAM_KEYS)
    if unknown:
        raise ProfileError(
            f"{origin}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(PARAM_KEYS))}"
        )
    if not isinstance(table.get("source"), str) or not table["source"].strip():
        raise ProfileError(f'{origin}: every number needs a source (source = "...")')
    if table.get("kind") not in KINDS:
        raise ProfileError(
            f"{origin}: kind {table.get('kind')!r} is not allowed; use one of {', '.join(KINDS)}"
        )
    if "from" in table:
        value = _calibration_value(str(table["from"]), origin, calibration())
        low, high = table.get("low", value), table.get("high", value)
    else:
        missing = [k for k in ("value", "low", "high") if k not in table]
        if missing:
            raise ProfileError(f"{origin}: missing key {missing[0]!r}")
        value, low, high = table["value"], table["low"], table["high"]
    numbers = (value, low, high)
    if not all(is_number(n) for n in numbers):
        raise ProfileError(f"{origin}: value, low and high must be finite numbers")
    if not low <= value <= high or low < 0:
        raise ProfileError(
            f"{origin}: needs 0 <= low <= value <= high, got {low} <= {value} <= {high}"
        )
    return Param(float(value), float(low), float(high), table["kind"], table["source"])


def parse_platform(data: dict[str, Any], origin: str, calibration: Path) -> PlatformProfile:
    """A profile from parsed TOML; `origin` names the file in errors. The calibration is read
    once, when a parameter first takes its value `from` it."""
    loaded = partial(load_calibration, calibration)  # read where a parameter is `from` it
    known = {"name", "title", *SECTIONS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ProfileError(f"{origin}: unknown key {unknown[0]!r}; allowed: {', '.join(known)}")
    for key in ("name", "title"):
        if not isinstance(data.get(key), str):
            raise ProfileError(f"{origin}: missing key {key!r} (text)")
    params = {}
    for section, names in SECTIONS.items():
        table = data.get(section)
        if table is None and section in OPTIONAL:
            continue
        if not isinstance(table, dict):
            raise ProfileError(f"{origin}: missing [{section}] table")
        extra = sorted(set(table) - set(names))
        if extra:
            raise ProfileError(
                f"{origin} [{section}]: unknown key {extra[0]!r}; allowed: {', '.join(names)}"
            )
        for name in names:
            if name not in table:
                raise ProfileError(f"{origin} [{section}]: missing [{section}.{name}]")
            params[f"{section}.{name}"] = parse_param(
                table[name], f"{origin} [{section}.{name}]", loaded
            )
    return PlatformProfile(data["name"], data["title"], origin, params)


def load_platform_profile(
    name: str | Path = DEFAULT_PLATFORM, calibration: Path = DEFAULT_CALIBRATION
) -> PlatformProfile:
    """A built-in profile by name, or a profile file (e.g. one `iommu fit` wrote)."""
    path = platform_path(name)
    return _profile(read_text(path, str(path)), str(path), calibration, _stamp(calibration))


@cached(16)
def _profile(text: str, origin: str, calibration: Path, stamp: object) -> PlatformProfile:
    """The profile a file's text gives on a calibration as it stands (`stamp`): an `iommu sim`
    point, a sweep's thousands, load the same one twice (shared: nothing changes a profile)."""
    return parse_platform(loads_toml(text, origin), origin, calibration)


def _stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size (None where there is no such file): a calibration
    edited since is read again."""
    try:
        found = Path(path).stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _toml_text(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_number(key: str, value: float) -> str:
    return str(int(value)) if key in INTEGERS else repr(float(value))


def platform_toml(profile: PlatformProfile) -> str:
    """The profile as a TOML file that `load_platform_profile` reads back."""
    lines = [
        "# Platform IOMMU profile written by pcieperf; use it with --platform FILE.",
        f"name = {_toml_text(profile.name)}",
        f"title = {_toml_text(profile.title)}",
    ]
    for key, p in profile.params.items():
        lines += [
            "",
            f"[{key}]",
            f"value = {_toml_number(key, p.value)}",
            f"low = {_toml_number(key, p.low)}",
            f"high = {_toml_number(key, p.high)}",
            f"kind = {_toml_text(p.kind)}",
            f"source = {_toml_text(p.source)}",
        ]
    return "\n".join(lines) + "\n"

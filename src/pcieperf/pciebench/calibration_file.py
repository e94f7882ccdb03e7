"""The calibration file `bench calibrate` writes and every model reads: the fitted device
profile ([device]), the host parameters the calibration hosts share ([host]), how well it fit
([fit]), the reference host of the DPDK IOMMU model ([reference_host]) and the spread of
measured around fitted bandwidth ([spread])."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf._cache import cached
from pcieperf._config import loads_toml, read_text
from pcieperf.errors import ProfileError
from pcieperf.pciebench.device import DeviceProfile, from_table

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# The calibration shipped with pcieperf: `pcieperf bench calibrate` over the NFP-6000 data set.
DEFAULT_CALIBRATION = Path(__file__).parent / "calibrations" / "nfp6000.toml"


@dataclass(frozen=True)
class SharedHost:
    """Host-side parameters that latency cannot reveal, shared by the calibration hosts."""

    write_line_ns: float
    partial_line_ns: float
    walk_busy_ns: float
    walkers: int
    posted_credits: int
    completion_policy: str
    read_partial_line_ns: float = 0.0
    # CPU generations of the hosts whose IOTLB misses fixed walk_busy_ns (cpu_generation)
    walker_generations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Spread:
    """How far measured bandwidth strays from the fitted model on the calibration's hosts:
    the 2.5th and 97.5th percentile of measured / fitted, per point category (`category`).

    It stands for what one global device fit cannot know of a new host (the per-host spread
    of the device and root-complex parameters), and is the band a prediction interval adds.
    """

    categories: list[str] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)

    def band(self, category: str) -> tuple[float, float]:
        """(low, high) ratio for a category; the widest band for one the fit never saw."""
        if category in self.categories:
            i = self.categories.index(category)
            return self.low[i], self.high[i]
        return (min(self.low, default=1.0), max(self.high, default=1.0))


@dataclass(frozen=True)
class ReferenceHost:
    """Medians over the calibration's steady IOMMU hosts with 4 KiB pages (`-iommu-nosp`), the
    only ones whose IOTLB the latency sweep reveals: the host the DPDK IOMMU model assumes."""

    iotlb_entries: int
    walk_ns: float
    llc_latency_ns: float
    mps: int
    mrrs: int
    hosts: list[str]


@dataclass(frozen=True)
class Calibration:
    """A fitted device profile, the shared host parameters and how well they fit."""

    device: DeviceProfile
    shared: SharedHost
    fit_mape_pct: dict[str, float]
    points: int
    left_out: list[str]  # unsteady hosts the fit did not use
    reference: ReferenceHost | None = None  # None when no steady 4 KiB-page IOMMU host was given
    spread: Spread = field(default_factory=Spread)


@dataclass(frozen=True)
class FitSummary:
    """The [fit] table of a calibration file: how well the fit did, per host."""

    hosts: list[str] = field(default_factory=list)
    mape_pct: list[float] = field(default_factory=list)
    points: int = 0
    left_out: list[str] = field(default_factory=list)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def profile_toml(profile: DataclassInstance, header: str) -> str:
    """A profile dataclass as the flat TOML table `device.from_table` reads back (`bench host`
    writes the host profile `bench sim --host` takes)."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{f.name} = {_toml_value(getattr(profile, f.name))}" for f in fields(profile)]
    return "\n".join(lines) + "\n"


def calibration_toml(calibration: Calibration) -> str:
    """The calibration as TOML: [device] and [host] load as profiles, [fit] says how well."""
    device = {f.name: getattr(calibration.device, f.name) for f in fields(DeviceProfile)}
    shared = {f.name: getattr(calibration.shared, f.name) for f in fields(SharedHost)}
    fit = {
        "hosts": list(calibration.fit_mape_pct),
        "mape_pct": list(calibration.fit_mape_pct.values()),
        "points": calibration.points,
        "left_out": calibration.left_out,
    }
    tables = [("device", device), ("host", shared), ("fit", fit)]
    if calibration.reference is not None:
        tables.append(("reference_host", asdict(calibration.reference)))
    if calibration.spread.categories:
        tables.append(("spread", asdict(calibration.spread)))
    out = ["# Written by `pcieperf bench calibrate`; re-run it to regenerate (docs/bench.md)."]
    for title, table in tables:
        out.append(f"\n[{title}]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
    return "\n".join(out) + "\n"


CALIBRATION_TABLES = ("device", "host", "fit", "reference_host", "spread")


def load_calibration(path: Path) -> Calibration:
    """Read a calibration file written by `calibration_toml` (each text parsed once: an `iommu
    sim` point takes its link and host from it three times)."""
    return _calibration(read_text(path, str(path)), path)


@cached(8)
def _calibration(text: str, path: Path) -> Calibration:
    """The calibration a file's text gives (shared: a Calibration is frozen)."""
    data = loads_toml(text, str(path))
    for table in ("device", "host", "fit"):
        if not isinstance(data.get(table), dict):
            raise ProfileError(f"{path}: missing [{table}] table; is this a calibration file?")
    unknown = sorted(set(data) - set(CALIBRATION_TABLES))
    if unknown:
        raise ProfileError(
            f"{path}: unknown key {unknown[0]!r}; a calibration has the tables "
            f"{', '.join(f'[{t}]' for t in CALIBRATION_TABLES)}"
        )
    fit = from_table(FitSummary, data["fit"], f"{path} [fit]")
    return Calibration(
        device=from_table(DeviceProfile, data["device"], f"{path} [device]"),
        shared=from_table(SharedHost, data["host"], f"{path} [host]"),
        fit_mape_pct=dict(zip(fit.hosts, fit.mape_pct, strict=False)),
        points=fit.points,
        left_out=fit.left_out,
        reference=(
            from_table(ReferenceHost, data["reference_host"], f"{path} [reference_host]")
            if isinstance(data.get("reference_host"), dict)
            else None
        ),
        spread=from_table(Spread, data.get("spread", {}), f"{path} [spread]"),
    )

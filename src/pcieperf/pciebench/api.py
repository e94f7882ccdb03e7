"""The public functions of the pcie-bench methodology (`pp.bench.load/tests/sim/calibrate/
predict/validate`): keyword arguments named as the `bench` and `validate` commands' options,
results that print as the CLI prints them (pcieperf.results)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf import outputs
from pcieperf.errors import require_choice, require_new_file
from pcieperf.pciebench import bench
from pcieperf.pciebench.bench import UNSTEADY_RATIO, Point
from pcieperf.pciebench.calibration_file import (
    DEFAULT_CALIBRATION,
    calibration_toml,
    load_calibration,
)
from pcieperf.pciebench.host import load_run
from pcieperf.results import Column, Report, Table, frame_html
from pcieperf.text import format_table, plural
from pcieperf.units import significant

if TYPE_CHECKING:
    import pandas

    from pcieperf.pciebench.device import DeviceProfile
    from pcieperf.pciebench.sim import HostProfile

__all__ = ["calibrate", "load", "predict", "sim", "tests", "validate"]
Progress = Callable[[list[Any]], Iterable[Any]]
BENCH_DEVICE = "nfp6000"  # the pcie-bench DMA engine: a device of `bench` only, not a NIC
SIM_SIZES = (64, 128, 256, 512, 1024, 2048)  # `bench sim --sizes`


def __dir__() -> list[str]:
    """dir() and tab completion show the API (`__all__`), not the helpers imported here."""
    return list(__all__)


def _each(progress: Progress | None, items: list[Any]) -> Iterable[Any]:
    """`items`, through the caller's progress bar if it gave one."""
    return progress(items) if progress else items


# --- load -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostResults:
    """A host's pcie-bench results: its name, every bandwidth and latency file as one frame
    each (`file` names the file a row comes from; columns as the store names them, units in
    their names), its `sys-*.txt` facts and the files the suite has that it lacks."""

    name: str
    bw: pandas.DataFrame
    lat: pandas.DataFrame
    facts: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def to_frame(self) -> pandas.DataFrame:
        """The bandwidth rows."""
        return self.bw

    def _repr_html_(self) -> str:
        """Jupyter shows the bandwidth rows."""
        return frame_html(self.bw)


def load(directory: str | Path) -> HostResults:
    """A pcie-bench result directory (`bw_*.csv`, `lat_*.csv`, `sys-*.txt`) as DataFrames."""
    import pandas

    parsed = bench.parse_result_dir(Path(directory))

    def frame(kind: str) -> pandas.DataFrame:
        parts = [
            pandas.DataFrame({"file": t.file, **t.columns}) for t in parsed.tables if t.kind == kind
        ]
        return pandas.concat(parts, ignore_index=True) if parts else pandas.DataFrame()

    return HostResults(parsed.info.name, frame("bw"), frame("lat"), parsed.facts, parsed.missing)


# --- bench tests, bench sim -----------------------------------------------------------------


def tests() -> Report:
    """The pcie-bench tests, cache states and access patterns (`pcieperf bench tests`)."""
    out = {
        "tests": [
            {"name": t.name, "kind": t.kind, "path": t.path, "description": t.description}
            for t in bench.TESTS.values()
        ],
        "cache_states": bench.CACHE_STATES,
        "patterns": bench.PATTERNS,
    }
    return Report(out, _tests_text)


def _tests_text() -> str:
    """The tests and the cache states, a table of each."""
    tests = [(t.name, t.kind, t.description) for t in bench.TESTS.values()]
    return "\n\n".join(
        [
            format_table(("test", "kind", "meaning"), tests),
            format_table(("cache", "meaning"), list(bench.CACHE_STATES.items())),
        ]
    )


BW_COLUMNS = (Column("size", "size (B)"), Column("window", "window (B)"), Column("bw_gbps", "Gb/s"))
LAT_COLUMNS = (
    Column("size", "size (B)"),
    Column("window", "window (B)"),
    Column("med_ns", "median (ns)"),
    Column("p999_ns", "p99.9 (ns)"),
)


def bench_device(name: str) -> DeviceProfile:
    """The pcie-bench device: the shipped NFP-6000 calibration's, a `bench calibrate` file's
    (its [device] table), or a device profile file."""
    from pcieperf._config import load_toml
    from pcieperf.pciebench import calibration_file
    from pcieperf.pciebench.device import load_device

    if name == BENCH_DEVICE:
        return calibration_file.load_calibration(DEFAULT_CALIBRATION).device
    path = Path(name)
    if isinstance(load_toml(path).get("device"), dict):  # what `bench calibrate -o` writes
        return calibration_file.load_calibration(path).device
    return load_device(path)


def sim_setup(
    host: str | Path, device: str | Path, test: str
) -> tuple[HostProfile, DeviceProfile, str]:
    """`sim`'s host and device profiles, loaded, and its test's canonical name: what it checks
    before simulating (`sweep` checks every point of a grid so before any work)."""
    return _sim_host(Path(host)), bench_device(str(device)), bench.canonical_test(test)


def check_access(cache: str, pattern: str) -> None:
    """A point's host cache state and access pattern: one of pcie-bench's (`Cache`, `PAT`)."""
    require_choice("cache state", cache, bench.CACHE_STATES)
    require_choice("access pattern", pattern, bench.PATTERNS)


def sim(
    *,
    host: str | Path,
    device: str | Path,
    test: str = "BW_DMA_RD",
    sizes: Iterable[int] = SIM_SIZES,
    windows: Iterable[int] = (8192,),
    cache: str = "HWarm",
    pattern: str = "Rand",
    offset: int = 0,
    dev_offset: int = 0,
    transactions: int = 200_000,
    progress: Progress | None = None,
) -> Table:
    """Simulated pcie-bench points of a host and a device profile (`pcieperf bench sim`), one
    row per (size, window); `host` is a host profile file or the host's pcie-bench folder (as
    `bench predict` reads it); `device` is a profile file or `nfp6000` (the shipped
    calibration's DMA engine)."""
    from pcieperf.pciebench import sim as simulator

    loaded_host, loaded_device, test = sim_setup(host, device, test)
    check_access(cache, pattern)
    grid = [(size, window) for size in sizes for window in windows]
    rows = []
    for size, window in _each(progress, grid):
        point = Point(test, pattern, cache, offset, dev_offset, window, size)
        res = simulator.simulate(point, loaded_host, loaded_device, transactions=transactions)
        rows.append(
            {
                "test": test,
                "size": size,
                "window": window,
                "cache": cache,
                "bw_gbps": res.bw_gbps,
                "trans_per_s": res.trans_per_s,
                "iotlb_misses": res.iotlb_misses,
                **res.latency_ns,
            }
        )
    return Table(rows, LAT_COLUMNS if bench.TESTS[test].kind == "lat" else BW_COLUMNS)


# --- bench calibrate, bench predict ---------------------------------------------------------


def calibrate(
    dirs: Iterable[str | Path],
    *,
    output: str | Path,
    name: str = "calibrated device",
    force: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Fit the device profile and shared host parameters to measured pcie-bench results and
    write the calibration file `output` (`pcieperf bench calibrate`)."""
    from pcieperf.pciebench import calibrate as fitting

    out = Path(output)
    require_new_file(out, force)
    runs = [load_run(Path(d)) for d in _each(progress, list(dirs))]
    result = fitting.fit_device(runs, name=name)
    outputs.write_text(out, calibration_toml(result), force)
    payload = {
        "output": str(out),
        "device": asdict(result.device),
        "host": asdict(result.shared),
        "fit_mape_pct": result.fit_mape_pct,
        "points": result.points,
        "unsteady_hosts_left_out": result.left_out,
    }
    return Report(payload, lambda: _calibration_text(payload))


def _calibration_text(payload: dict[str, Any]) -> str:
    """What `bench calibrate` wrote, and how well it fit each host."""
    rows = [[name, pct] for name, pct in payload["fit_mape_pct"].items()]
    lines = [
        f"wrote {payload['output']} ({payload['points']} points)",
        *(f"  {t}.{k} = {_value(v)}" for t in ("device", "host") for k, v in payload[t].items()),
        format_table(("host", "fit MAPE %"), rows),
    ]
    if payload["unsteady_hosts_left_out"]:
        lines.append(
            "left out (latency p99.9 > 10x median): "
            + ", ".join(payload["unsteady_hosts_left_out"])
        )
    return "\n".join(lines)


def _value(value: object) -> object:
    """A fitted parameter for people: a float with 4 significant digits (`units.significant`:
    no 3.3e-36 for what fitted to 0), anything else as it is."""
    return significant(value) if isinstance(value, float) else value


def _sim_host(host: Path) -> HostProfile:
    """A host profile file as it is, or the profile a pcie-bench folder gives on the shipped
    calibration (what `bench host` writes)."""
    from pcieperf.pciebench import sim as simulator

    if host.is_dir():
        return _folder_host(host, DEFAULT_CALIBRATION)[1]
    return simulator.load_host(host)


def _folder_host(host: Path, calibration: Path) -> tuple[str, HostProfile]:
    """The system name and host profile of a host's pcie-bench folder on `calibration`."""
    from pcieperf.pciebench import pin

    run = load_run(host)
    return run.name, pin.prepare(run, load_calibration(calibration)).host


def host(
    *,
    host: str | Path,
    output: str | Path,
    calibration: str | Path = DEFAULT_CALIBRATION,
    force: bool = False,
) -> Report:
    """The host profile a host's pcie-bench directory gives (its latency files and host facts,
    on the calibration's shared parameters), written as the TOML `bench sim --host` reads
    (`pcieperf bench host`): what `bench predict` simulates, as a file."""
    from pcieperf.pciebench.calibration_file import profile_toml

    out = Path(output)
    require_new_file(out, force)
    name, profile = _folder_host(Path(host), Path(calibration))
    header = (
        f"Host profile of {name}, written by `pcieperf bench host` from {host} on "
        f"calibration {calibration}; use it with `pcieperf bench sim --host`."
    )
    outputs.write_text(out, profile_toml(profile, header), force)
    payload = {"system": name, "output": str(out), "host": asdict(profile)}
    made = f"wrote {out}: the host profile of {name} (bench sim --host)"
    return Report(payload, made, confirms=True)


def predict(
    *,
    host: str | Path,
    out: str | Path,
    calibration: str | Path = DEFAULT_CALIBRATION,
    transactions: int = 50_000,
    force: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Predict a host's bandwidth results from its latency files and host facts (`pcieperf
    bench predict`): pcie-bench's bw_*.csv files, their bounds and the provenance of every
    parameter, written to `out`; `host` is the host's pcie-bench directory, whose bw_*.csv
    rows past the IOTLB knee, if any, are weighed and may pin the walker (`pciebench.pin`)."""
    from pcieperf.pciebench import pin
    from pcieperf.pciebench import predict as predicting
    from pcieperf.pciebench.host import steadiness

    run = load_run(Path(host))
    loaded = load_calibration(Path(calibration))
    steady = steadiness(run)
    prepared = pin.prepare(run, loaded, transactions)
    files = predicting.predict_files(
        prepared.host,
        loaded.device,
        Path(out),
        clock_ghz=predicting.card_clock_ghz(run.info.card),
        force=force,
        transactions=transactions,
        progress=progress or (lambda rows: rows),
        alternatives=prepared.alternatives,
        band=prepared.band,
        provenance=prepared.provenance,
    )
    payload = {
        "system": run.name,
        "files": [str(f) for f in files],
        "bounds": str(Path(out) / predicting.BOUNDS_FILE),
        "provenance": prepared.provenance,
        # keyed by parameter, not a list: `provenance` stays the one table of the CSV form
        "pinned": {p.parameter: p.to_json() for p in prepared.pins},
        "iommu_conflicts": list(run.iommu.conflicts),
        "host": asdict(prepared.host),
        "steadiness": steady,
        "steady": steady <= UNSTEADY_RATIO,
    }
    return Report(payload, lambda: _prediction_text(payload, out))


def _prediction_text(payload: dict[str, Any], out: str | Path) -> str:
    """What `bench predict` wrote, the first parameters' provenance, and its warnings."""
    from pcieperf.pciebench.predict import BOUNDS_FILE

    text = f"wrote {plural(len(payload['files']), 'file')}, {BOUNDS_FILE} and provenance to {out}"
    text += "\n" + format_table(
        ("parameter", "value", "source", "why"),
        [[r["parameter"], r["value"], r["source"], r["why"]] for r in payload["provenance"][:7]],
    )
    for name, pinned in payload["pinned"].items():
        used = sum(row["used"] for row in pinned["rows"])
        text += (
            f"\nweighed by the folder's bandwidth rows: {name} = {pinned['value']}"
            f" ({pinned['low']}..{pinned['high']}), {used} of {plural(len(pinned['rows']), 'row')}"
            " past the IOTLB knee used"
            if pinned["used"]
            else f"\nbandwidth rows not used for {name}: {pinned['why']}"
        )
    if payload["iommu_conflicts"]:
        text += "\nnote: the latency sweep overrules " + "; ".join(payload["iommu_conflicts"])
    if not payload["steady"]:
        text += (
            f"\nwarning: latency p99.9 is {payload['steadiness']:.0f}x the median on this host "
            "(millisecond stalls); its measured bandwidth will scatter far around any "
            "prediction"
        )
    return text


# --- validate -------------------------------------------------------------------------------


def validate(
    *,
    measured: str | Path,
    predicted: str | Path,
    worst: int = 10,
    points: str | Path | None = None,
    force: bool = False,
) -> Report:
    """Predicted against measured pcie-bench bandwidth (`pcieperf validate`): MAPE overall, on
    the acceptance set and per file, interval coverage, the `worst` points; with `points`, a
    CSV of every point, its interval and how far beyond it the measurement lies; `source` is
    the matched points (for a plot)."""
    from pcieperf.pciebench import validate as validating
    from pcieperf.results import csv_text

    matched = validating.match(Path(measured), Path(predicted))
    result = validating.summary(matched, worst=worst)
    wrote = ""
    if points is not None:
        outputs.write_text(points, csv_text(validating.point_rows(matched)), force)
        result["points_file"] = str(points)
        wrote = f"\nwrote {points}: every point, its interval and how far beyond it"
    return Report(result, lambda: _validation_text(result) + wrote, source=matched)


WORST_COLUMNS = {  # the worst points' table: key -> header, and the keys a narrow one leaves out
    "file": "file",
    "test": "test",
    "pattern": "pattern",
    "cache": "cache",
    "window_bytes": "window",
    "size_bytes": "size",
    "host_offset": "host off",
    "dev_offset": "dev off",
    "measured_gbps": "measured",
    "predicted_gbps": "predicted",
    "error_pct": "err %",
    "beyond_bound_pct": "beyond bound %",
}
WORST_DROP = ("pattern", "cache", "beyond_bound_pct", "test", "window_bytes")


def _validation_text(result: dict[str, Any]) -> str:
    """MAPE, interval coverage, per-file MAPE and the worst points."""
    interval_keys = ("points", "coverage_pct", "median_relative_width_pct", "outside_points")
    intervals = [
        [name, *(v[k] for k in (*interval_keys, "max_beyond_bound_pct"))]
        for name, v in result["intervals"].items()
        if v is not None
    ]
    return "\n".join(
        [
            f"{result['points']} points, MAPE {result['mape_pct']} % "
            f"({result['mape_without_offset_pct']} % without the offset sweeps); "
            f"acceptance set (size sweep >= 64 B + window sweeps) "
            f"{result['acceptance_points']} points, MAPE {result['acceptance_mape_pct']} %",
            format_table(
                ("points", "n", "coverage %", "median width %", "outside", "max beyond %"),
                intervals,
            )
            if intervals
            else "no bounds.csv: no intervals to score",
            format_table(("file", "MAPE %"), [[f, v] for f, v in result["per_file"].items()]),
            "worst points:",
            format_table(
                list(WORST_COLUMNS.values()),
                [[w[k] for k in WORST_COLUMNS] for w in result["worst"]],
                drop=[list(WORST_COLUMNS).index(k) for k in WORST_DROP],
            ),
        ]
    )

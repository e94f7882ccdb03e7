"""Predict a host's pcie-bench bandwidth results from its latency sweep and host facts.

`pcieperf bench predict` fits what latency tells about the host (`calibrate.host_profile`),
takes the device and the rest from a calibration; this module simulates every row the real
benchmark writes (`bench.bandwidth_plan`) and writes the files in pcie-bench's own CSV format.
Beside them: `bounds.csv` (each row's prediction interval) and `provenance.csv`/`.json` (which
evidence decided each host parameter); neither is a pcie-bench file, so the bw_*.csv stay
byte-compatible.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pcieperf import outputs
from pcieperf.errors import UsageError, param, require_new_folder
from pcieperf.pciebench.bench import BW_COLUMNS, KEY_COLUMNS, Point, bandwidth_plan
from pcieperf.pciebench.device import DeviceProfile
from pcieperf.pciebench.sim import HostProfile, simulate

DEFAULT_CLOCK_GHZ = 1.2  # NFP-6000 timestamp clock; the card name carries it ("nfp6000-1.2GHz")
SIM_TRANSACTIONS = 50_000  # per row: enough for 0.5 % repeatability of the rates
BOUNDS_FILE = "bounds.csv"
BOUNDS_COLUMNS = ("file", *KEY_COLUMNS, "bw_gbps", "bw_low_gbps", "bw_high_gbps")
PROVENANCE_FILES = ("provenance.csv", "provenance.json")
Band = Callable[[Point], tuple[float, float]]  # a row's (low, high) ratio to its prediction


def card_clock_ghz(card: str) -> float:
    """The device clock that `Time(cyc)` counts, from a card name like nfp6000-1.2GHz."""
    match = re.search(r"(\d+(?:\.\d+)?)GHz", card)
    return float(match.group(1)) if match else DEFAULT_CLOCK_GHZ


def _window_text(window: int) -> str:
    """WinSZ as the benchmark prints it: 1.5 MiB comes out of Python as a float."""
    return f"{float(window)}" if window == 3 << 19 else str(window)


def result_row(point: Point, gbps: float, clock_ghz: float) -> list[str]:
    """One CSV row in pcie-bench's format for a bandwidth of `gbps` (Gb/s of one direction)."""
    transactions = point.transactions
    total_bytes = transactions * point.size
    time_ns = total_bytes * 8 / gbps
    return [
        point.test,
        point.pattern,
        point.cache,
        str(point.host_offset),
        str(point.dev_offset),
        _window_text(point.window),
        str(point.size),
        str(round(time_ns * clock_ghz)),
        repr(time_ns),
        str(total_bytes),
        str(transactions),
        repr(gbps),
        repr(transactions / time_ns * 1e9),
    ]


def predict_files(
    host: HostProfile,
    device: DeviceProfile,
    out: Path,
    *,
    clock_ghz: float = DEFAULT_CLOCK_GHZ,
    force: bool = False,
    transactions: int = SIM_TRANSACTIONS,
    progress: Callable[[list[Point]], Iterable[Point]] = iter,
    alternatives: Sequence[HostProfile] = (),
    band: Band | None = None,
    provenance: list[dict] | None = None,
) -> list[Path]:
    """Simulate every bandwidth file of the suite for `host` and write them to `out`.

    With `band`, also `bounds.csv`: each row's interval is the span of `host` and the
    `alternatives` (host profiles the evidence leaves open), widened by the row's `band`.
    With `provenance`, also `provenance.csv`/`.json`. Refuses to overwrite an existing file
    without `force`, before simulating anything; `progress` wraps the rows as they are simulated.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"{param('out')} {out} is a file; give a folder for the predicted bw_*.csv files"
        )
    require_new_folder(out, force=True)  # its parent exists and takes new files
    plan = bandwidth_plan()
    targets = [out / name for name in plan]
    extras = [out / BOUNDS_FILE] * (band is not None) + [
        out / name for name in PROVENANCE_FILES if provenance is not None
    ]
    clash = [p for p in [*targets, *extras] if p.exists()]
    if clash and not force:
        raise UsageError(f"{clash[0]} exists; pass {param('force')} to overwrite predicted files")
    rows = [point for file_rows in plan.values() for point in file_rows]
    rates = [_simulate_all(h, device, rows, transactions, progress) for h in (host, *alternatives)]
    points = iter(rates[0])
    with outputs.folder(out, force) as work:  # published whole, after the last file
        for target, file_rows in zip(targets, plan.values(), strict=True):
            with (work / target.name).open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(BW_COLUMNS)
                writer.writerows(result_row(p, next(points), clock_ghz) for p in file_rows)
        if band is not None:
            write_bounds(work / BOUNDS_FILE, plan, rates, band)
        if provenance is not None:
            write_provenance(work, provenance)
    return targets


def _simulate_all(
    host: HostProfile,
    device: DeviceProfile,
    rows: list[Point],
    transactions: int,
    progress: Callable[[list[Point]], Iterable[Point]],
) -> list[float]:
    return [simulate(p, host, device, transactions=transactions).bw_gbps for p in progress(rows)]


def write_bounds(
    path: Path, plan: dict[str, list[Point]], rates: list[list[float]], band: Band
) -> None:
    """bounds.csv: per row its file, key columns, prediction and [low, high] (Gb/s)."""
    columns = iter(zip(*rates, strict=True))
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(BOUNDS_COLUMNS)
        for name, file_rows in plan.items():
            for p in file_rows:
                values = next(columns)
                low, high = band(p)
                key = result_row(p, values[0], 1.0)[:7]
                # The point prediction always lies inside its own interval.
                bw = (values[0], min(values) * min(low, 1.0), max(values) * max(high, 1.0))
                writer.writerow([name, *key, *map(repr, bw)])


def write_provenance(out: Path, rows: list[dict]) -> None:
    """provenance.csv and provenance.json: parameter, value, source, why."""
    with (out / PROVENANCE_FILES[0]).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    (out / PROVENANCE_FILES[1]).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")

"""Predict a host's pcie-bench bandwidth results from its latency sweep and host facts.

`pcieperf bench predict` fits what latency tells about the host (`calibrate.host_profile`),
takes the device and the rest from a calibration; this module simulates every row the real
benchmark writes (`bench.bandwidth_plan`) and writes the files in pcie-bench's own CSV format.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from pcieperf.bench import BW_COLUMNS, Point, bandwidth_plan
from pcieperf.errors import UsageError
from pcieperf.sim import DeviceProfile, HostProfile, simulate

DEFAULT_CLOCK_GHZ = 1.2  # NFP-6000 timestamp clock; the card name carries it ("nfp6000-1.2GHz")
SIM_TRANSACTIONS = 50_000  # per row: enough for 0.5 % repeatability of the rates


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
) -> list[Path]:
    """Simulate every bandwidth file of the suite for `host` and write them to `out`.

    Refuses to overwrite an existing file without `force`, before simulating anything;
    `progress` wraps the rows as they are simulated (e.g. a progress bar).
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder for the predicted bw_*.csv files")
    plan = bandwidth_plan()
    targets = [out / name for name in plan]
    clash = [p for p in targets if p.exists()]
    if clash and not force:
        raise UsageError(f"{clash[0]} exists; pass --force to overwrite predicted files")
    rows = [point for file_rows in plan.values() for point in file_rows]
    rates = iter(
        [simulate(p, host, device, transactions=transactions).bw_gbps for p in progress(rows)]
    )
    out.mkdir(parents=True, exist_ok=True)
    for target, file_rows in zip(targets, plan.values(), strict=True):
        with target.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(BW_COLUMNS)
            writer.writerows(result_row(p, next(rates), clock_ghz) for p in file_rows)
    return targets

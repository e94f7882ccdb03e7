"""Predict a host's pcie-bench bandwidth results from its latency sweep and host facts.

`pcieperf bench predict` fits what latency tells about the host (`calibrate.host_profile`),
takes the device and the rest from a calibration, simulates every row the real benchmark
writes (`bench.bandwidth_plan`) and writes the files in pcie-bench's own CSV format.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

from pcieperf.bench import BW_COLUMNS, Point, bandwidth_plan
from pcieperf.calibrate import Calibration, HostRun, host_profile
from pcieperf.errors import UsageError
from pcieperf.sim import HostProfile, simulate

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
    run: HostRun,
    calibration: Calibration,
    out: Path,
    force: bool = False,
    transactions: int = SIM_TRANSACTIONS,
    progress: Callable[[int], None] | None = None,
) -> list[Path]:
    """Simulate every bandwidth file of the suite for `run`'s host and write them to `out`."""
    plan = bandwidth_plan()
    targets = check_outputs(out, force)
    host: HostProfile = host_profile(run, calibration)
    clock = card_clock_ghz(run.info.card)
    out.mkdir(parents=True, exist_ok=True)
    for target, rows in zip(targets, plan.values(), strict=True):
        lines = []
        for point in rows:
            result = simulate(point, host, calibration.device, transactions=transactions)
            lines.append(result_row(point, result.bw_gbps, clock))
            if progress:
                progress(1)
        with target.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(BW_COLUMNS)
            writer.writerows(lines)
    return targets


def check_outputs(out: Path, force: bool) -> list[Path]:
    """The files a prediction writes into `out`; refuses to overwrite any without `force`."""
    targets = [out / name for name in bandwidth_plan()]
    clash = [p for p in targets if p.exists()]
    if clash and not force:
        raise UsageError(f"{clash[0]} exists; pass --force to overwrite predicted files")
    return targets


def plan_rows() -> int:
    """How many rows `predict_files` simulates."""
    return sum(len(rows) for rows in bandwidth_plan().values())

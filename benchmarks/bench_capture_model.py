"""Capture model speed (issue 26): frame sizes evaluated per second, the fixed point alone, and
the whole `pcieperf capture model` command.

Evaluates the capture model with its bounds (every corner of the calibration's spread) for the
three designs over every even frame size from 64 to 1518 B (the report's sweep), times the
closed-form fixed point alone over a million rows of random costs, and runs the default
`pcieperf capture model --json` as a user would (a fresh process: start-up, the NIC profile,
the calibration and the eight default sizes). One run per process: benchmarks/run_all.py runs
it several times and takes the medians.
Run: python3 benchmarks/bench_capture_model.py [--calibration FILE] [--json-out F.json]
"""

import argparse
import subprocess
import sys
import time

import numpy as np

from _json_out import write_figures
from pcieperf.capture.calibration import DEFAULT_CALIBRATION, load_calibration
from pcieperf.capture.evaluate import evaluate_capture
from pcieperf.capture.flow import solve
from pcieperf.capture.path import DESIGNS
from pcieperf.capture.setup import CaptureSetup
from pcieperf.net.ethernet import PacketMix

FRAMES = range(64, 1519, 2)
ROWS = 1_000_000


def model_sizes_per_s(calibration: str) -> float:
    """Design x size rows per second, bounds included."""
    cal = load_calibration(calibration)
    mixes = [PacketMix.fixed(f) for f in FRAMES]
    start = time.perf_counter()
    for design in DESIGNS:
        evaluate_capture(cal, CaptureSetup(design=design), mixes)
    return len(DESIGNS) * len(mixes) / (time.perf_counter() - start)


def solve_rows_per_s() -> float:
    """Rows of the fixed point per second (random costs, net_null arrivals)."""
    rng = np.random.default_rng(1)
    fwd, prod, handoff, cons = rng.uniform(5, 500, (4, ROWS))
    start = time.perf_counter()
    solve(fwd, prod, handoff, cons, copies=1.0, lcores=1.0, cores=1.0, arrivals=np.inf)
    return ROWS / (time.perf_counter() - start)


def command_s(calibration: str) -> float:
    """Wall seconds of one `pcieperf capture model --json` process."""
    argv = [sys.executable, "-m", "pcieperf.cli", "capture", "model", "--json"]
    start = time.perf_counter()
    subprocess.run([*argv, "--calibration", calibration], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calibration", default=str(DEFAULT_CALIBRATION), help="calibration file")
    p.add_argument("--json-out", default=None, help="also write the figures here (JSON)")
    args = p.parse_args()
    figures = {
        "capture model sizes_per_s": model_sizes_per_s(args.calibration),
        "capture fixed point rows_per_s": solve_rows_per_s(),
        "pcieperf capture model (whole command) command_s": command_s(args.calibration),
    }
    for name, value in figures.items():
        print(f"{name}: {value:.4g}")
    write_figures(figures)


if __name__ == "__main__":
    main()

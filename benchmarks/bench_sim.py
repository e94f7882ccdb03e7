"""Simulator speed (issue 3): simulated DMA transactions per second on one core.

Runs the Rust simulator on a spread of pcie-bench points (reads, writes, rw; 64..2048 B; windows
8 KiB..64 MiB; IOMMU off and with 4 KiB pages) and prints transactions per second: the
median of --runs runs of the whole spread, with the spread of the runs.
Target (issue 15): >= 5e7 simulated transactions per second on one core.
Run: python3 benchmarks/bench_sim.py [--runs 5] [--json-out F.json]
"""

import time
from dataclasses import replace
from pathlib import Path

from _rates import Rates, finish, parser
from pcieperf._native import core
from pcieperf.pciebench import sim
from pcieperf.pciebench.bench import Point
from pcieperf.pciebench.device import load_device

PROFILES = Path(__file__).resolve().parent.parent / "tests" / "data" / "sim"
DEVICE = load_device(PROFILES / "device.toml")  # the simulator tests' profiles
HOST = sim.load_host(PROFILES / "host.toml")
TRANSACTIONS = 1_000_000
TARGET = 5e7


def one_run() -> tuple[int, float]:
    """Simulates every point once; returns the transactions and the seconds they took."""
    total, elapsed = 0, 0.0
    for iommu in ("off", "nosp"):
        host = replace(HOST, iommu=iommu)
        for test in ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW"):
            for size in (64, 512, 2048):
                for window in (8 << 10, 1 << 20, 64 << 20):
                    point = Point(test, "Rand", "Cold", 0, 0, window, size)
                    params = sim.sim_params(point, host, DEVICE, TRANSACTIONS)
                    start = time.perf_counter()
                    core().simulate(params)
                    elapsed += time.perf_counter() - start
                    total += TRANSACTIONS
    return total, elapsed


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    rates = Rates()
    for _ in range(args.runs):
        total, elapsed = one_run()
        rates.add("simulator transactions/s (one core)", total, elapsed, TARGET)
    finish(rates, args.json_out)


if __name__ == "__main__":
    main()

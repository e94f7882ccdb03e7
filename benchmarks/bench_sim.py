"""Simulator speed (issue 3): simulated DMA transactions per second on one core.

Runs the Rust simulator on a spread of pcie-bench points (reads, writes, rw; 64..2048 B; windows
8 KiB..64 MiB; IOMMU off and with 4 KiB pages) and prints transactions per second.
Target: >= 10 million simulated transactions per second.
Run: python3 benchmarks/bench_sim.py [--json-out F.json]
"""

import time
from dataclasses import replace

from _json_out import write_figures
from pcieperf import sim
from pcieperf._native import core

DEVICE = sim.DeviceProfile(
    name="bench",
    source="benchmark",
    tags=32,
    read_ns=10.0,
    read_line_ns=0.0,
    write_ns=20.0,
    write_line_ns=0.0,
    datapath_ns=0.0,
    datapath_line_ns=0.0,
    fixed_latency_ns=100.0,
)
HOST = sim.HostProfile(
    name="bench",
    source="benchmark",
    mps=256,
    mrrs=512,
    completion_policy="mps",
    addr64=True,
    llc_latency_ns=400.0,
    ddio_latency_ns=380.0,
    dram_latency_ns=480.0,
    remote_extra_ns=80.0,
    llc_bytes=8 << 20,
    ddio_bytes=1 << 20,
    write_line_ns=0.0,
    partial_line_ns=30.0,
    posted_credits=64,
    iotlb_entries=64,
    walk_ns=200.0,
    walk_busy_ns=200.0,
    walkers=4,
)
TRANSACTIONS = 1_000_000


def main():
    total, elapsed = 0, 0.0
    for iommu in ("off", "nosp"):
        host = replace(HOST, iommu=iommu)
        for test in ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW"):
            for size in (64, 512, 2048):
                for window in (8 << 10, 1 << 20, 64 << 20):
                    point = sim.Point(test, "Rand", "Cold", 0, 0, window, size)
                    params = sim.sim_params(point, host, DEVICE, TRANSACTIONS)
                    start = time.perf_counter()
                    core().simulate(params)
                    elapsed += time.perf_counter() - start
                    total += TRANSACTIONS
    rate = total / elapsed
    print(
        f"simulated {total:,} transactions in {elapsed:.2f} s = {rate / 1e6:.1f} M/s "
        f"(target >= 10 M/s: {'met' if rate >= 10e6 else 'NOT met'})"
    )
    write_figures({"transactions_per_s": rate})


if __name__ == "__main__":
    main()

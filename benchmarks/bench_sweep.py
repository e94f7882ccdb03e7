"""Sweep benchmark of the analytic models (issue 2): prints evaluations per second and peak memory.

DMA model: every transfer size 1..9216 B x every generation x lane width x MPS x operation.
NIC model: every frame size 64..9216 B x every built-in profile.
Target: >= 10 million DMA-size evaluations per second on one core.
Run: python3 benchmarks/bench_sweep.py
"""

import time
import tracemalloc

import numpy as np

from pcieperf import nic, tlp
from pcieperf.ethernet import Ethernet
from pcieperf.link import GENERATIONS, LANE_WIDTHS, Link

MPS_VALUES = (128, 256, 512, 1024, 2048, 4096)


def sweep_dma(sizes):
    evaluations = 0
    for gen in GENERATIONS:
        for lanes in LANE_WIDTHS:
            for mps in MPS_VALUES:
                link = Link(gen=gen, lanes=lanes, mps=mps)
                for op in tlp.OPS:
                    eff = tlp.effective_gbps(link, op, sizes)
                    evaluations += eff.size
    return evaluations


def sweep_nic(frames):
    link, eth = Link(), Ethernet(40)
    evaluations = 0
    for name in nic.builtin_profiles():
        result = nic.evaluate_sizes(nic.load_profile(name), link, eth, frames)
        evaluations += result.achievable_gbps.size
    return evaluations


def timed(label, func, *args):
    """Best of three timed runs, then one run under tracemalloc for the memory peak."""
    elapsed = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        n = func(*args)
        elapsed = min(elapsed, time.perf_counter() - start)
    tracemalloc.start()
    func(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{label}: {n:,} evaluations in {elapsed:.3f} s = {n / elapsed / 1e6:.2f} M/s, "
        f"peak traced memory {peak / 2**20:.1f} MiB"
    )
    return n / elapsed


def main():
    sizes = np.arange(1, 9217)
    frames = np.arange(64, 9217)
    sweep_dma(sizes[:100])  # warm-up (imports, first-call costs)
    rate = timed("DMA model (size x gen x lanes x MPS x op)", sweep_dma, sizes)
    timed("NIC model (frame size x profile)", sweep_nic, frames)
    print(f"target >= 10 M DMA-size evaluations/s: {'met' if rate >= 10e6 else 'NOT met'}")


if __name__ == "__main__":
    main()

"""Analytic model speed (issues 2, 15): size-evaluations per second of a full sweep.

- DMA: every transfer size 1..9216 B x every generation x lane width x MPS x operation, each
  (link, operation) priced as `dma` and `sweep` price it (TLPs and wire bytes per direction
  and the effective Gb/s of every size).
- NIC: every frame size 64..9216 B x every built-in profile x MPS x paths (rx+tx, rx, tx) x
  link (generation x lane width), with every column `sweep` writes (the bottleneck as its
  integer code, where the pcieperf has one; the names are one lookup at output).
Each figure is the median of --runs full sweeps with [min-max] (wall clock; the rate per CPU
second beside it shows what load from other processes took); one more run under tracemalloc
gives the peak memory. `--baseline-src DIR` times an earlier pcieperf (its src folder) the
same way in a second process of the same run, beside this one; its NIC sweep covers one lane
width (x8), as a pcieperf from before issue 15 prices every link anew (its rate does not
depend on how many links share TLP rules) and the full grid would take minutes per run.
Target (issue 15): >= 1e8 size-evaluations per second on one core, DMA and NIC.
Run: python3 benchmarks/bench_sweep.py [--runs 5] [--baseline-src DIR] [--json-out F.json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from pcieperf.net.ethernet import Ethernet
from pcieperf.nic import nic
from pcieperf.nic.profile import builtin_profiles, load_profile
from pcieperf.pcie import tlp
from pcieperf.pcie.link import GENERATIONS, LANE_WIDTHS, Link

try:  # where a sweep's checked sizes come from in this pcieperf, or an earlier (--baseline-src)
    from pcieperf.nic.rows import fixed_rows
except ImportError:
    fixed_rows = getattr(nic, "fixed_rows", None)
# The one NIC entry point, or an earlier pcieperf's fixed-size one (--baseline-src).
evaluate = getattr(nic, "evaluate_sizes", nic.evaluate)

MPS_VALUES = (128, 256, 512, 1024, 2048, 4096)
PATH_CHOICES = (("rx", "tx"), ("rx",), ("tx",))
NIC_COLUMNS = (
    "mean_frame_bytes",
    "max_pps",
    "pcie_max_pps",
    "line_pps",
    "achievable_gbps",
    "line_rate_gbps",
    "pcie_up_gbps",
    "pcie_down_gbps",
    "up_bytes_per_pkt",
    "down_bytes_per_pkt",
    "up_tlps_per_pkt",
    "down_tlps_per_pkt",
)
TARGET = 1e8


def dma_row_columns(link: Link, op: str, sizes: np.ndarray) -> int:
    """What `dma` reports for every size (the calls it makes in this pcieperf, or, in one
    from before issue 15 given as --baseline-src, the calls it made then); returns the count."""
    if hasattr(tlp, "dma_rows"):
        return tlp.dma_rows(link, op, sizes).effective_gbps.size
    tlp.device_dma_cost(link, op, sizes)  # the TLP and byte columns
    return tlp.effective_gbps(link, op, sizes).size


def sweep_dma(sizes: np.ndarray) -> int:
    evaluations = 0
    for gen in GENERATIONS:
        for lanes in LANE_WIDTHS:
            for mps in MPS_VALUES:
                link = Link(gen=gen, lanes=lanes, mps=mps)
                for op in tlp.OPS:
                    evaluations += dma_row_columns(link, op, sizes)
    return evaluations


def sweep_nic(frames: np.ndarray, lanes: tuple[int, ...] = LANE_WIDTHS) -> int:
    """Every profile x MPS x paths x link, each evaluated as `sweep` evaluates a `nic` point
    (sizes checked once where this pcieperf can reuse them); returns the evaluations."""
    eth = Ethernet(40)
    sizes = fixed_rows(frames) if fixed_rows else frames
    code = "bottleneck_code" if hasattr(nic.NicResult, "bottleneck_code") else "bottleneck"
    links = {
        m: [Link(gen=g, lanes=n, mps=m) for g in GENERATIONS for n in lanes] for m in MPS_VALUES
    }
    evaluations = 0
    for name in builtin_profiles():
        profile = load_profile(name)
        for at_mps in links.values():
            for paths in PATH_CHOICES:
                for link in at_mps:
                    result = evaluate(profile, link, eth, sizes, paths)
                    for column in (*NIC_COLUMNS, code):
                        getattr(result, column)
                    evaluations += result.max_pps.size
    return evaluations


def measure(func, arg, runs: int) -> dict:
    """Evaluations per second of `runs` timed calls (median, min, max) and the peak memory."""
    rates, cpu_rates = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        n = func(arg)
        rates.append(n / (time.perf_counter() - start))
        cpu_rates.append(n / max(time.process_time() - cpu, 1e-9))
    tracemalloc.start()
    func(arg)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "evaluations": n,
        "median_per_s": statistics.median(rates),
        "runs_per_s": rates,
        "median_per_cpu_s": statistics.median(cpu_rates),  # what load on other cores hides
        "peak_mib": peak / 2**20,
    }


def measure_all(runs: int, nic_lanes: tuple[int, ...]) -> dict:
    sizes, frames = np.arange(1, 9217), np.arange(64, 9217)
    sweep_dma(sizes[:100])  # warm-up (imports, first-call costs)
    sweep_nic(frames[:100], nic_lanes[:1])
    return {
        "dma": measure(sweep_dma, sizes, runs),
        "nic": measure(lambda f: sweep_nic(f, nic_lanes), frames, runs),
    }


def baseline(src: Path, runs: int) -> dict:
    """The same measurement in a process that imports pcieperf from `src` (NIC: x8 only)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, __file__, "--runs", str(runs), "--json-stdout", "--nic-lanes", "8"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def show(label: str, figures: dict) -> None:
    for model, f in figures.items():
        rates = f["runs_per_s"]
        print(
            f"  {label:<10} {model}: {f['median_per_s'] / 1e6:8.2f} M evaluations/s "
            f"[{min(rates) / 1e6:.2f}-{max(rates) / 1e6:.2f}] over {f['evaluations']:,} "
            f"({f.get('median_per_cpu_s', 0) / 1e6:.1f} M per CPU-second), "
            f"peak traced memory {f['peak_mib']:.1f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="full sweeps per figure (median)")
    parser.add_argument("--baseline-src", default=None, help="an earlier pcieperf's src folder")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    parser.add_argument("--json-stdout", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--nic-lanes", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    lanes = tuple(int(n) for n in args.nic_lanes.split(",")) if args.nic_lanes else LANE_WIDTHS
    if args.json_stdout:  # the baseline's process
        print(json.dumps(measure_all(args.runs, lanes)))
        return
    results = {"pcieperf": measure_all(args.runs, lanes)}
    if args.baseline_src:
        results["baseline"] = baseline(Path(args.baseline_src).resolve(), args.runs)
    print(f"model sweeps (median of {args.runs}, [min-max]):")
    for label, figures in results.items():
        show(label, figures)
    for model, figures in results["pcieperf"].items():
        met = "met" if figures["median_per_s"] >= TARGET else "NOT met"
        print(f"target >= {TARGET:.0e} {model.upper()} size-evaluations/s: {met}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

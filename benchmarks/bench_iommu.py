"""IOMMU model speed (issues 4, 15, 29): simulated packets per second of the DPDK address stream,
and the IOMMU commands as a user times them.

Counts IOTLB misses for --count-packets packets per setup (address stream + IOTLB only, no
timing; once without and once with the platform's DDIO/LLC model), and runs the timed model
(stream + IOTLB + DDIO + device, link and walkers, in the load state it decides) for
--timed-packets packets, on one core. Setups: 4 KiB (DPDK layout and packed), 2 MiB; rxd/txd
128 and 1024; 64 B and IMIX. Each figure is the median of --runs runs, with their spread.
Target (issue 15): >= 40 million simulated packets per second for the address stream + IOTLB.

Then whole processes (issue 29, part 3), --runs each, alternating with the code before the
change when --baseline-src names its src folder (run by this interpreter): `iommu sim`, `iommu
gain` (4 sizes, rxd 1024 -> 128), `iommu advise`, `explain --import` of one stack of an hour of
two-socket pcm-iio samples in a store (benchmarks/bench_counters.py's file) and the 50-point
`iommu sim` sweep of benchmarks/bench_dask_sweep.py in this process, as points per second of
its evaluation (the sweep's own `seconds`). Targets: gain, advise and explain < 0.3 s; >= 100
sweep points/s. Wall and CPU (user + system) seconds are both kept: on a shared machine the
wall clock also counts waiting for a core.
Run: python3 benchmarks/bench_iommu.py [--runs 5] [--baseline-src DIR] [--skip-model]
[--skip-commands] [--json-out F.json]
"""

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

import pcieperf
from _rates import Rates, finish, parser
from bench_counters import write_file
from bench_dask_sweep import SPECS
from bench_startup import wall
from pcieperf._native import core
from pcieperf.dpdk.port import LAYOUTS, PortSetup
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import Traffic, load_platform
from pcieperf.iommu.stream import port_params
from pcieperf.measure import counters
from pcieperf.measure.store import Store
from pcieperf.net.ethernet import Ethernet, parse_mix

TARGET = 40e6
COMMAND_TARGET_S = 0.3  # gain, advise and explain, whole process (issue 29)
SWEEP_TARGET = 100.0  # IOMMU points per second in a sweep (issue 29)
STACK = "socket 0: IIO Stack 3 - PCIe0"  # a stack of bench_counters' file


def setups():
    """Every (setup, traffic) pair the benchmark times."""
    for page, layout, ring, mix in product(("4k", "2m"), LAYOUTS, (128, 1024), ("64", "imix")):
        setup = PortSetup(page=page, layout=layout, rxd=ring, txd=ring)
        yield setup, Traffic(parse_mix(mix), Ethernet(40))


def one_run(rates: Rates, count_packets: int, timed_packets: int) -> None:
    """Times every setup once and records the three figures of this run."""
    platform = load_platform()
    counted = timed = 0
    count_s = ddio_s = timed_s = 0.0
    for setup, traffic in setups():
        params = port_params(setup, traffic, platform.iommu, count_packets)
        start = time.perf_counter()
        out = core().port_misses(params | {"warmup": 0})
        count_s += time.perf_counter() - start
        counted += out["packets"]
        start = time.perf_counter()
        core().port_misses(params | {"warmup": 0, "llc": platform.memory.llc.shape()})
        ddio_s += time.perf_counter() - start
        model = Model(platform, traffic, timed_packets)
        start = time.perf_counter()
        state = model.evaluate(setup).state
        timed_s += time.perf_counter() - start
        # Light: the light count and its timed run; a full ring: the light count, the state's
        # timed run and its count.
        timed += (2 if state == "light" else 3) * timed_packets
    rates.add("address stream + IOTLB packets/s", counted, count_s, TARGET)
    rates.add("address stream + IOTLB + DDIO packets/s", counted, ddio_s)
    rates.add("full model (counts + timed run, incl. warm-up) packets/s", timed, timed_s)


def command_lines(tmp: Path) -> dict[str, list[str]]:
    """The whole processes timed, by name: their arguments after `pcieperf`. The explain case
    reads a store written here once."""
    path = tmp / "pcm-iio.csv"
    write_file(path)
    with Store(tmp / "counters.duckdb") as store:
        store.import_counters(path, lambda sink: counters.parse(path, "pcm-iio", sink=sink))
    spec = tmp / "sweep.toml"
    spec.write_text(SPECS["iommu"])
    explain = ["--import", "1", "--db", str(tmp / "counters.duckdb"), "--stack", STACK]
    return {
        "iommu sim": ["iommu", "sim"],
        "iommu gain": ["iommu", "gain"],
        "iommu advise": ["iommu", "advise"],
        "explain": ["explain", *explain, "--pps", "10e6", "--frame", "68"],
        "sweep": ["sweep", str(spec), "-o", str(tmp / "OUT.parquet"), "--force"],
    }


def sweep_rate(cmd: list[str], env: dict[str, str] | None) -> float:
    """Points per second of a sweep's evaluation, from its --json summary."""
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    summary = json.loads(done.stdout)
    return summary["points"] / summary["seconds"]


def time_commands(runs: int, baseline: Path | None) -> dict[str, dict[str, list[float]]]:
    """Per command: its runs' wall and CPU seconds (a sweep: points per second), and the
    baseline's as `baseline_*`, the two alternating so a load change hits both alike."""
    compileall.compile_dir(Path(pcieperf.__file__).parent, quiet=1)
    sides: dict[str, dict[str, str] | None] = {"": None}
    if baseline is not None:
        compileall.compile_dir(baseline, quiet=1)
        sides["baseline_"] = {**os.environ, "PYTHONPATH": str(baseline)}
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        lines = command_lines(Path(tmp))
        for _ in range(runs):
            for name, args in lines.items():
                got = figures.setdefault(name, {})
                for side, env in sides.items():
                    cmd = [sys.executable, "-m", "pcieperf.cli", *args, "--json", "-q"]
                    if name == "sweep":
                        got.setdefault(f"{side}runs_per_s", []).append(sweep_rate(cmd, env))
                        continue
                    elapsed, cpu = wall(cmd, env)
                    got.setdefault(f"{side}runs_s", []).append(elapsed)
                    got.setdefault(f"{side}cpu_s", []).append(cpu)
    return figures


def report_commands(figures: dict[str, dict[str, list[float]]]) -> None:
    """Each command's median [min-max] against its baseline's and its target."""
    for name, got in figures.items():
        for key, values in got.items():
            unit, scale = ("points/s", 1) if key.endswith("per_s") else ("ms", 1e3)
            spread = f"[{min(values) * scale:.4g}-{max(values) * scale:.4g}]"
            print(f"{name} {key}: {statistics.median(values) * scale:.4g} {unit} {spread}")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--count-packets", type=int, default=5_000_000, help="per setup, counted")
    p.add_argument("--timed-packets", type=int, default=1_000_000, help="per setup, timed")
    p.add_argument("--baseline-src", default=None, help="the src folder of the code before")
    p.add_argument("--skip-model", action="store_true", help="no model packets/s")
    p.add_argument("--skip-commands", action="store_true", help="no whole processes")
    args = p.parse_args()
    rates = Rates()
    for _ in range(0 if args.skip_model else args.runs):
        one_run(rates, args.count_packets, args.timed_packets)
    extra = {}
    if not args.skip_commands:
        baseline = Path(args.baseline_src).resolve() if args.baseline_src else None
        extra["commands"] = time_commands(args.runs, baseline)
        report_commands(extra["commands"])
    finish(rates, args.json_out, extra)


if __name__ == "__main__":
    main()

"""Start-up as a user times it (issue 15 item 4): whole `pcieperf --help`, `link`, `dma` and
`nic` processes, median of --runs runs with the spread, alternating, beside the interpreter's
own floor (`python -c pass`, `python -S`, `python -I`), numpy's (`python -c 'import numpy'`:
what a command that needs the arrays, such as a sweep, cannot go below; `dma` and `nic` with a
command line's sizes run without numpy), the console script's entry cost (the
same command through `python -c` without the generated script) and, with --baseline-src, an
earlier pcieperf (its src folder) in the same run.

The package is byte-compiled first: an editable install, or a machine with
PYTHONDONTWRITEBYTECODE set, would otherwise recompile it in every process.
Target: every pcieperf command below 120 ms (median).
Run: python3 benchmarks/bench_startup.py [--runs 9] [--baseline-src DIR] [--json-out F.json]
"""

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pcieperf

TARGET_S = 0.120
COMMANDS = {
    "--help": ["--help"],
    "link": ["link", "--json"],
    "dma": ["dma", "--json"],
    "nic": ["nic", "--sizes", "64,imix", "--json"],
}
FLOORS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -S -c pass (no site)": [sys.executable, "-S", "-c", "pass"],
    "python -I -c pass (isolated)": [sys.executable, "-I", "-c", "pass"],
    "python -c 'import numpy' (floor of array commands)": [sys.executable, "-c", "import numpy"],
}


def wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds one process takes from start to exit (it must succeed), and the CPU seconds
    (user + system) it used: on a loaded machine the wall clock also counts waiting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def contenders(baseline: Path | None) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """Every process timed: label -> (command line, environment or None for this one's)."""
    script = Path(sys.executable).with_name("pcieperf")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "pcieperf.cli"]
    direct = [sys.executable, "-c", "import sys; from pcieperf.cli import main; main(sys.argv[1:])"]
    runs: dict[str, tuple[list[str], dict[str, str] | None]] = {
        label: (cmd, None) for label, cmd in FLOORS.items()
    }
    old = {**os.environ, "PYTHONPATH": str(baseline)} if baseline else None
    for name, args in COMMANDS.items():
        runs[f"pcieperf {name}"] = ([*entry, *args], None)
        if name == "--help":
            runs["pcieperf --help without the console script"] = ([*direct, *args], None)
        if old is not None:
            runs[f"pcieperf {name} (baseline)"] = (
                [sys.executable, "-m", "pcieperf.cli", *args],
                old,
            )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per process (median)")
    parser.add_argument("--baseline-src", default=None, help="an earlier pcieperf's src folder")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    baseline = Path(args.baseline_src).resolve() if args.baseline_src else None
    compileall.compile_dir(Path(pcieperf.__file__).parent, quiet=1)
    if baseline:
        compileall.compile_dir(baseline, quiet=1)
    runs = contenders(baseline)
    seconds: dict[str, list[float]] = {label: [] for label in runs}
    cpu: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(args.runs):  # alternating, so a load change hits every process alike
        for label, (cmd, env) in runs.items():
            elapsed, used = wall(cmd, env)
            seconds[label].append(elapsed)
            cpu[label].append(used)
    print(f"whole process (median of {args.runs}, [min-max]), load {os.getloadavg()[0]:.2f}:")
    results = {}
    for label, values in seconds.items():
        med = statistics.median(values)
        mark = "" if not label.startswith("pcieperf") else ("  ok" if med < TARGET_S else "  OVER")
        spread = f"[{min(values) * 1e3:.1f}-{max(values) * 1e3:.1f}]"
        cpu_med = statistics.median(cpu[label])
        print(f"  {label:<45} {med * 1e3:7.1f} ms {spread}{mark}  (CPU {cpu_med * 1e3:.1f} ms)")
        results[label] = {"median_s": med, "runs_s": values, "median_cpu_s": cpu_med}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"startup": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

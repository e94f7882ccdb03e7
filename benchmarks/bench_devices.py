"""`pcieperf devices` timed as a user runs it (issue 42): the whole command on this machine's
sysfs beside `lspci -vv` on the same machine, and on a saved 201-device server's text
(../shared/data/lspci/18-...: its six network controllers priced), median of --runs runs with
the spread, alternating so that a load change hits both alike.
Target: `pcieperf devices` below 0.3 s (median).
Run: python3 benchmarks/bench_devices.py [--runs 9] [--json-out F.json]
"""

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pcieperf

TARGET_S = 0.3
ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PCIEPERF_SHARED_DATA") or ROOT.parent / "shared" / "data")
SERVER = SHARED / "lspci" / "18-broadwell-server-whole-p100.txt"


def wall(cmd: list[str]) -> float:
    """Seconds one process takes from start to exit (it must succeed)."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def comparisons() -> dict[str, dict[str, list[str]]]:
    """Each figure's contenders: pcieperf first, then its peer where there is one."""
    script = Path(sys.executable).with_name("pcieperf")
    pcieperf_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "pcieperf.cli"]
    machine = {"pcieperf devices": [*pcieperf_cmd, "devices"]}
    if shutil.which("lspci"):
        machine["lspci -vv"] = ["lspci", "-vv"]
    figures = {"devices, this machine (sysfs)": machine}
    if SERVER.exists():
        text = [*pcieperf_cmd, "devices", "--lspci", str(SERVER)]
        figures["devices --lspci, a 201-device server"] = {"pcieperf devices --lspci": text}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per process (median)")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    compileall.compile_dir(Path(pcieperf.__file__).parent, quiet=1)
    figures = comparisons()
    seconds = {f: {label: [] for label in c} for f, c in figures.items()}
    for _ in range(args.runs):
        for figure, contenders in figures.items():
            for label, cmd in contenders.items():
                seconds[figure][label].append(wall(cmd))
    print(f"whole process (median of {args.runs}, [min-max]), load {os.getloadavg()[0]:.2f}:")
    results: dict[str, dict[str, dict[str, object]]] = {}
    for figure, contenders in seconds.items():
        results[figure] = {}
        for label, values in contenders.items():
            med = statistics.median(values)
            mark = ("  ok" if med < TARGET_S else "  OVER") if "sysfs" in figure else ""
            mark = mark if label.startswith("pcieperf") else ""
            spread = f"[{min(values) * 1e3:.1f}-{max(values) * 1e3:.1f}]"
            print(f"  {figure}: {label:<28} {med * 1e3:7.1f} ms {spread}{mark}")
            results[figure][label] = {"median_s": med, "runs_s": values}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

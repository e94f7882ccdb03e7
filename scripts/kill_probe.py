"""Kill pcieperf outright in the middle of real DPDK runs, under a CPU hog, again and again
(issue 41): how long its DPDK processes outlive it, and whether the next run leaves the machine
as it found it. Needs root, hugepages and Debian's dpdk-dev (as `capture run` does).

    python scripts/kill_probe.py [--times 10] [--json summary.json]

For each of `capture run` (dumpcap into tmpfs) and `dpdk run` (net_null), `--times` rounds:
start the command with a busy loop on every CPU, wait until it captures (a record in its tmpfs
file) or forwards (its testpmd runs), SIGKILL it, and time until no process of its file prefix
is left; after the last round one short run of the same command undoes what the killed ones
left. The summary gives the slowest death and what was still there afterwards (nothing is the
answer wanted). Exits 1 if a process outlived pcieperf by more than 5 s or anything was left.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pcieperf import statedir
from pcieperf.capture import hugepages, leftovers, run
from pcieperf.dpdk import testpmd

DEADLINE_S = 300.0  # for a run to start capturing on a loaded machine
OUTLIVE_LIMIT_S = 5.0  # issue 41: no DPDK process survives its pcieperf by more than this
CLI = [sys.executable, "-m", "pcieperf.cli"]


def dpdk_processes(prefix: str) -> list[str]:
    """The processes whose command line names the file prefix `prefix`."""
    found = subprocess.run(["pgrep", "-f", prefix], capture_output=True, text=True)
    return found.stdout.split()


def started(kind: str, pid: int) -> bool:
    """Whether the run of process `pid` captures (`capture`) or forwards (`dpdk`) by now."""
    if kind == "capture":
        folders = run.TMPFS.glob(f".{leftovers.RUN_PREFIX}{pid}-*")
        return any(f.stat().st_size > 0 for d in folders for f in d.glob("capture.*"))
    return bool(dpdk_processes(f"{testpmd.RUN_PREFIX}{pid}-"))


def prefix_of(kind: str, pid: int) -> str:
    """The EAL file prefix of the run of process `pid`."""
    return f"{leftovers.RUN_PREFIX if kind == 'capture' else testpmd.RUN_PREFIX}{pid}-"


def command(kind: str, seconds: int, scratch: Path) -> list[str]:
    """The CLI command of a round."""
    store = ["--db", str(scratch / f"{kind}.duckdb")]
    if kind == "capture":
        return [*CLI, "capture", "run", "--sink", "tmpfs", "--seconds", str(seconds), *store]
    return [*CLI, "dpdk", "run", "--seconds", str(seconds), *store]


def one_round(kind: str, scratch: Path) -> float:
    """Start, wait until it works, SIGKILL: seconds until its DPDK processes are gone."""
    proc = subprocess.Popen(
        command(kind, 60, scratch), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + DEADLINE_S
    while not started(kind, proc.pid):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise SystemExit(f"{kind} run of process {proc.pid} did not start")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    proc.wait()
    prefix = prefix_of(kind, proc.pid)
    while dpdk_processes(prefix) and time.monotonic() - killed < DEADLINE_S:
        time.sleep(0.01)
    return time.monotonic() - killed


def leftovers_now(kind: str) -> list[str]:
    """What pcieperf's runs of `kind` have left on the machine now."""
    prefix = leftovers.RUN_PREFIX if kind == "capture" else testpmd.RUN_PREFIX
    runtime = [
        str(p)
        for p in testpmd.runtime_dir(prefix).parent.glob(f"{prefix}*")
        if kind == "capture" or not p.name.startswith(leftovers.RUN_PREFIX)
    ]
    state = [str(p) for p in statedir.folder().iterdir() if not p.name.startswith("capture.")]
    shm = [str(p) for p in run.TMPFS.glob(f".{leftovers.RUN_PREFIX}*")]
    mounts = [ln for ln in Path("/proc/mounts").read_text().splitlines() if "pcieperf" in ln]
    return runtime + state + shm + mounts


def probe(kind: str, times: int, scratch: Path) -> dict:
    """`times` killed rounds of `kind`, then one whole run; what it found."""
    pages = (hugepages.POOL / "nr_hugepages").read_text().strip()
    deaths = [one_round(kind, scratch) for _ in range(times)]
    subprocess.run(command(kind, 1, scratch), check=True, capture_output=True)
    pages_after = (hugepages.POOL / "nr_hugepages").read_text().strip()
    return {
        "command": kind,
        "rounds": times,
        "slowest_death_s": max(deaths),
        "deaths_s": deaths,
        "left_after_next_run": leftovers_now(kind),
        "hugepages_before_after": [pages, pages_after],
    }


def main() -> int:
    """Probe both commands under a hog; 1 if anything outlived pcieperf or stayed behind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"kill-probe-{os.getpid()}"
    scratch.mkdir()
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(len(os.sched_getaffinity(0)))
    ]
    try:
        results = [probe(kind, args.times, scratch) for kind in ("capture", "dpdk")]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        subprocess.run(["rm", "-rf", str(scratch)], check=False)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    bad = [
        r
        for r in results
        if r["slowest_death_s"] > OUTLIVE_LIMIT_S
        or r["left_after_next_run"]
        or len(set(r["hugepages_before_after"])) > 1
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

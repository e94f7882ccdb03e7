"""Capture runs (issue 26): what the measuring harness costs, and pcieperf's capture writer beside
dpdk-dumpcap's on the same sink.

One real `pp.capture_run` (dpdk-dumpcap, 64 B frames, 2 s windows) writes its pcapng into a
tmpfs file (/dev/shm). Figures: the whole run's wall time; the CPU time pcieperf's own process
(the harness: imports, its polling loop, the threads reading testpmd and dumpcap, reading the
file back, the store) spent per second of the run, and while dumpcap captured alone, against
the CPU the forwarding lcore and dumpcap received; dumpcap's records per CPU
second into tmpfs; and pcieperf's writer (`pp.convert_capture`, in this process) rewriting that
file's records into tmpfs, records per CPU second. Needs root and Debian's dpdk-dev; skipped
with the reason otherwise.
Run: sudo python3 benchmarks/bench_capture.py [--json-out F.json]
"""

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pcieperf as pp
from _json_out import write_figures

SINK = Path("/dev/shm")


def cpu_s() -> float:
    """CPU seconds of this process so far (all its threads, no children)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    if os.geteuid() != 0 or not shutil.which("dpdk-dumpcap"):
        print("skipped: capture runs need root and Debian's dpdk-dev (dpdk-testpmd, dpdk-dumpcap)")
        sys.exit(0)
    with tempfile.TemporaryDirectory(dir=SINK) as scratch:
        captured, copy = Path(scratch) / "c.pcapng", Path(scratch) / "w.pcapng"
        db = Path(scratch) / "s.duckdb"
        wall, cpu = time.perf_counter(), cpu_s()
        run = pp.capture_run(frame=64, seconds=2, out=captured, db=db).to_json()
        wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
        start = cpu_s()
        pp.convert_capture(captured, copy)
        writer_cpu = cpu_s() - start
    figures = {
        "capture_run_s": wall,
        "harness_cpu_s_per_s": cpu / wall,
        "harness_capturing_cpu_s_per_s": run["harness_cpu_share"],
        "forwarding_cpu_s_per_s": run["fwd_cpu_share"],
        "dumpcap_cpu_s_per_s": run["capture_cpu_share"],
        "dumpcap_records_per_s": 1e9 / run["capture_cpu_ns"],
        "pcieperf_writer_records_per_s": run["file_packets"] / writer_cpu,
    }
    for name, value in figures.items():
        print(f"{name:32s} {value:14.4g}")
    write_figures(figures)


if __name__ == "__main__":
    main()

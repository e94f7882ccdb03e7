"""Sweep scaling on Dask (issue 17 item 4): the same sweeps in-process and with 1, 2 and 4 local
worker processes; prints seconds, points per second and the speed-up over one worker, and the
scheduler's cost per task (docs/scale.md uses these numbers for its 64-worker projection).

On a shared machine the speed-up says as much about the other load as about Dask, so each run
also prints, from Dask's task stream, how many chunks ran at once on average (compute seconds
over wall seconds) and the mean compute seconds of one chunk: N workers that run N chunks at
once, each as fast as one worker alone, scale; chunks that slow down as N grows are sharing
cores with something else.

Three sweeps: `iommu sim` (each point simulated until its rate is steady, docs/iommu.md "Run
length": compute-bound, few tasks), `nic` (582 000 points priced in calls of 1 455 sizes: many
cheap points) and `dma` (248 832 points in calls of 9 216 sizes, two chunks: the cheapest
points, where building the rows costs as much as the model; issue 16 item 2). Every run
writes its Parquet file; the files of all runs are checked to be identical.

Run: python3 benchmarks/bench_dask_sweep.py [--workers 1,2,4] [--only dma|iommu|nic]
[--tasks 2000]
[--json-out F.json]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from distributed import get_task_stream

from _json_out import write_figures
from pcieperf import engine
from pcieperf.sweep.api import checked_plan
from pcieperf.sweep.plan import evaluate_chunk
from pcieperf.sweep.run import finalize, run, write_part

SPECS = {
    "dma": """command = "dma"
[axes]
op = ["read", "write", "rw"]
gen = [3, 4, 5]
mps = [128, 256, 512]
sizes = { from = 1, to = 9216 }
""",
    "iommu": """command = "iommu sim"
chunk = 2
[axes]
page = ["4k", "2m"]
rxd = [128, 256, 512, 1024, 2048]
frame = ["64", "128", "256", "1518", "imix"]
""",
    "nic": """command = "nic"
[options]
profile = "dpdk"
[axes]
gen = [1, 2, 3, 4, 5]
lanes = [1, 2, 4, 8, 16]
mps = [128, 256, 512, 1024]
eth = [10, 25, 40, 100]
sizes = { from = 64, to = 1518 }
""",
}


def make_plan(path):
    return checked_plan(Path(path))


def timed_sweep(plan, scheduler, out):
    """Seconds to start the engine, seconds of the sweep itself, and the compute seconds of
    each chunk (from Dask's task stream)."""
    started = time.perf_counter()
    with engine.connect(engine.parse_scheduler(scheduler)) as client:
        if scheduler:
            client.wait_for_workers(int(scheduler.split(":")[1]), timeout=600)
        ready = time.perf_counter()
        with get_task_stream(client) as stream:
            run(plan, out, client, force=True)
        done = time.perf_counter()
    chunks = [
        sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
        for task in stream.data
        if "run_chunk" in str(task["key"])
    ]
    return ready - started, done - ready, chunks


def noop(_, chunk):
    return chunk


def task_overhead(scheduler, tasks):
    """Seconds per task of map_chunks with a function that does nothing."""
    with engine.connect(engine.parse_scheduler(scheduler)) as client:
        if scheduler:
            client.wait_for_workers(int(scheduler.split(":")[1]), timeout=600)
        list(engine.map_chunks(client, noop, range(50)))  # warm: imports, connections
        start = time.perf_counter()
        list(engine.map_chunks(client, noop, range(tasks)))
        return (time.perf_counter() - start) / tasks


def bench(name, workers, folder):
    path = folder / f"{name}.toml"
    path.write_text(SPECS[name])
    plan = make_plan(path)
    print(f"\n{name}: {plan.points:,} points in {plan.chunks} chunks of {plan.spec.chunk}")
    print(
        f"{'engine':>12} {'start s':>8} {'sweep s':>8} {'points/s':>10} {'speed-up':>9} "
        f"{'at once':>8} {'chunk s':>8}"
    )
    base, first, figures = None, None, {}
    for scheduler in [None, *(f"local:{n}" for n in workers)]:
        out = folder / f"{name}-{scheduler or 'inproc'}.parquet".replace(":", "")
        start_s, sweep_s, chunks = timed_sweep(plan, scheduler, out)
        table = pq.read_table(out)
        first = first or table
        assert table.equals(first), f"{scheduler} differs from in-process"
        if scheduler == f"local:{workers[0]}":
            base = sweep_s
        speedup = f"{base / sweep_s:.2f}x" if base else "-"
        label = scheduler or "in-process"
        print(
            f"{label:>12} {start_s:8.2f} {sweep_s:8.2f} {plan.points / sweep_s:10,.0f} "
            f"{speedup:>9} {sum(chunks) / sweep_s:8.2f} {sum(chunks) / len(chunks):8.3f}"
        )
        figures[f"{name} {label} points_per_s"] = plan.points / sweep_s
    return figures


def driver_costs(folder):
    """What this process spends per chunk whatever the number of workers: writing one part
    of the nic sweep (20 000 rows), and joining the parts into the output."""
    path = folder / "nic.toml"
    path.write_text(SPECS["nic"])
    plan = make_plan(path)
    table = evaluate_chunk(plan, plan.bounds(0))
    parts = folder / "parts"
    parts.mkdir()
    start = time.perf_counter()
    for i in range(plan.chunks):
        write_part(parts, i, table)
    write_s = (time.perf_counter() - start) / plan.chunks
    start = time.perf_counter()
    rows, _ = finalize(plan, parts, folder / "joined.parquet", force=True)
    join_s = time.perf_counter() - start
    print(
        f"\ndriver: {write_s * 1e3:.1f} ms to write a {table.num_rows:,}-row part; joining "
        f"{rows:,} rows of {plan.chunks} parts {join_s:.2f} s ({rows / join_s / 1e6:.2f} M rows/s)"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--only", choices=sorted(SPECS), default=None)
    parser.add_argument("--tasks", type=int, default=2000, help="no-op tasks for the overhead")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    workers = [int(n) for n in args.workers.split(",")]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        figures = {}
        for name in [args.only] if args.only else sorted(SPECS):
            figures |= bench(name, workers, Path(tmp))
        driver_costs(Path(tmp))
    print(
        f"\nscheduler cost per task ({args.tasks} no-op tasks, "
        f"{engine.IN_FLIGHT_PER_THREAD} in flight per thread):"
    )
    for scheduler in (None, "local:1", "local:2"):
        per_task = task_overhead(scheduler, args.tasks)
        print(f"{scheduler or 'in-process':>12} {per_task * 1e3:.2f} ms")
        figures[f"{scheduler or 'in-process'} task_s"] = per_task
    write_figures(figures)


if __name__ == "__main__":
    main()

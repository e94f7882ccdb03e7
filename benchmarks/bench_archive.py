"""Archive statistics on Dask (issue 17 item 4): `archive.archive_stats` over --files captures
of one port (cut from one `trace synth` on/off capture of the --sizes mix, written to
--folder) on 1, 2 and 4 local workers of one thread each, with the files read ahead on a second
thread or not (--read-ahead: `auto` is the engine's choice, `on`, `off`). Every cluster is
started (and warmed up by one untimed run) before any clock runs; the timed runs of all
clusters and modes are interleaved, so that a change in the machine's other load hits all of
them alike. Each run's wall time, the CPU seconds of the workers and of this process (the
driver and the local scheduler) and so the cores kept busy; the result is checked equal on
every run; the driver's CPU is split by thread (the caller's, and dask's event loop, which
runs the local scheduler, the client and the nannies), less what that loop burns while idle
(measured per cluster, per second). Then `archive_merge.merge` (time ranges, pcapng out) on the same
clusters against the single-process `trace.merge`, the output checked byte-identical
(--skip-merge leaves it out).
Also: the cost of one file's partial in this process with and without read-ahead (wall, CPU
of all threads, CPU of the parsing thread), the bytes of a partial as a task returns it, of the
reduce (appending every partial and summarising), and of a no-op task on the cluster; the load
average before and after, since other work shares the machine. The last line is a one-line
summary: the speed-up of 2 workers over 1 per read-ahead mode (medians with their ranges), the
driver's CPU a run, and the load average.

Run: python3 benchmarks/bench_archive.py [--files 64] [--packets 4000000] [--sizes 64]
     [--workers 1,2,4] [--read-ahead auto,off,on] [--runs 3] [--folder /dev/shm]
     [--skip-merge] [--json-out F.json]
"""

import argparse
import itertools
import json
import os
import pickle
import resource
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from pcieperf import engine
from pcieperf._native import core
from pcieperf.net import archive, archive_merge
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.net.trace.files import read
from pcieperf.net.trace.rewrite import merge
from pcieperf.net.trace.statistics import WINDOWS_NS, stats_config
from pcieperf.net.trace.synthesis import synth

PCAP_HEADER, RECORD_HEADER = 24, 16  # draft-ietf-opsawg-pcap §4, §5
MODES = {"auto": None, "on": True, "off": False}  # --read-ahead: archive_stats(read_ahead=...)


def make_archive(folder: Path, files: int, packets: int, sizes: str) -> list[str]:
    """One on/off capture of `packets` packets of the `sizes` mix cut into `files` pcap files."""
    whole = folder / "whole.pcap"
    synth(
        whole,
        eth=Ethernet(40),
        mix=parse_mix(sizes),
        pps=10e6,
        duration_s=packets / 10e6,
        arrival="onoff",
    )
    t = read(whole, offsets=True)
    data = whole.read_bytes()
    starts = [int(o) - RECORD_HEADER for o in t.offset] + [len(data)]
    bounds = [round(k * t.packets / files) for k in range(files + 1)]
    paths = []
    for k in range(files):
        path = folder / f"part-{k:04d}.pcap"
        path.write_bytes(data[:PCAP_HEADER] + data[starts[bounds[k]] : starts[bounds[k + 1]]])
        paths.append(str(path))
    whole.unlink()
    return paths


def reduce(paths: list[str], partials: list, config: dict) -> list:
    """What the driver does with the partials of one port: append in order, summarise."""
    heads = [archive.Head(p, 0, ()) for p in paths]
    fold = archive._Fold([heads], config, None)
    for index, partial in enumerate(partials):
        fold.add(index, partial)
    return [p.summary(config) for p in fold.result()]


def timed(func) -> tuple[float, object]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def cpu_seconds() -> float:
    """User and system CPU seconds of this process, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's Python threads by name, from /proc (ns resolution);
    empty where there is no /proc."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for tid, name in names.items():
        try:
            text = Path(f"/proc/self/task/{tid}/schedstat").read_text()
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + int(text.split()[0]) / 1e9
    return out


def idle_loop_cpu(seconds: float = 2.0) -> float:
    """CPU seconds per second that dask's event loop in this process uses with nothing to run
    (heartbeats, the nannies' memory checks, the system monitor)."""
    before, start = thread_cpu(), time.perf_counter()
    time.sleep(seconds)
    after = thread_cpu()
    return (after.get("IO loop", 0.0) - before.get("IO loop", 0.0)) / (time.perf_counter() - start)


def _noop(_shared: object, chunk: int) -> int:
    return chunk


def partial_costs(paths: list[str], config: dict, origin: int) -> dict:
    """One file's partial in this process, read ahead or not: median wall, CPU of all threads
    and of the calling (parsing) thread over the first 8 files, and cores busy (CPU / wall)."""
    out = {}
    for mode, ahead in (("on", True), ("off", False)):
        walls, cpus, threads = [], [], []
        for path in paths[:8]:
            cpu0, thread0 = cpu_seconds(), time.thread_time()
            wall, _ = timed(
                lambda p=path, a=ahead: core().trace_partial(p, config, origin, read_ahead=a)
            )
            cpus.append(cpu_seconds() - cpu0)
            threads.append(time.thread_time() - thread0)
            walls.append(wall)
        out[mode] = {
            "wall_s": statistics.median(walls),
            "cpu_s": statistics.median(cpus),
            "parser_thread_cpu_s": statistics.median(threads),
            "cores_busy": sum(cpus) / sum(walls),
        }
    return out


def stats_run(
    client, paths: list[str], read_ahead: bool | None, idle_loop: float
) -> tuple[dict, object]:
    """One timed `archive_stats` run: wall, CPU of the workers and of this process, and of this
    process's main thread and event loop (less its idle use over the run's wall time)."""
    workers0, driver0, threads0 = client.run(cpu_seconds), cpu_seconds(), thread_cpu()
    wall, result = timed(lambda: archive.archive_stats(client, paths, read_ahead=read_ahead))
    driver, threads = cpu_seconds() - driver0, thread_cpu()
    workers = sum(client.run(cpu_seconds).values()) - sum(workers0.values())
    main, loop = (threads.get(t, 0.0) - threads0.get(t, 0.0) for t in ("MainThread", "IO loop"))
    return {
        "wall_s": wall,
        "worker_cpu_s": workers,
        "driver_cpu_s": driver,
        "driver_main_cpu_s": main,
        "driver_loop_cpu_s": loop - idle_loop * wall,
    }, result


def summarise_runs(samples: list[dict]) -> dict:
    """Median wall (and range) of a cluster's runs in one mode, their CPU and cores busy."""
    walls = [s["wall_s"] for s in samples]
    worker_cpu = statistics.median(s["worker_cpu_s"] for s in samples)
    driver_cpu = statistics.median(s["driver_cpu_s"] for s in samples)
    return {
        "driver_main_cpu_s": statistics.median(s["driver_main_cpu_s"] for s in samples),
        "driver_loop_busy_cpu_s": statistics.median(s["driver_loop_cpu_s"] for s in samples),
        "wall_s": statistics.median(walls),
        "wall_range_s": [min(walls), max(walls)],
        "worker_cpu_s": worker_cpu,
        "driver_cpu_s": driver_cpu,
        "worker_cores_busy": worker_cpu / statistics.median(walls),
        "cores_busy": (worker_cpu + driver_cpu) / statistics.median(walls),
        "load_1min": [s["load_1min"] for s in samples],
    }


def start_clusters(stack: ExitStack, counts: list[int]) -> dict[int, tuple]:
    """A local cluster of n one-thread workers per count: its client and start-up figures."""
    clusters = {}
    for n in counts:
        t0 = time.perf_counter()
        client = stack.enter_context(engine.connect(engine.parse_scheduler(f"local:{n}")))
        client.wait_for_workers(n)
        started = time.perf_counter() - t0
        threads = sum(client.nthreads().values())
        assert threads == n, f"local:{n} has {threads} worker threads"
        noop = [
            timed(lambda c=client: list(engine.map_chunks(c, _noop, range(200))))[0] / 200
            for _ in range(2)
        ]
        figures = {"start_s": started, "noop_task_s": min(noop), "idle_loop_cpu": idle_loop_cpu()}
        clusters[n] = (client, figures)
    return clusters


def bench_stats(clusters: dict, paths: list[str], modes: list[str], runs: int) -> dict:
    """The timed archive_stats runs, interleaved over clusters and modes, after one untimed
    warm-up run per cluster; every result checked equal to the first."""
    expected = None
    for client, _ in clusters.values():
        result = archive.archive_stats(client, paths)
        expected = expected or result
        assert result == expected, "results differ between clusters"
    samples: dict[tuple[int, str], list[dict]] = {}
    for _, (n, (client, fig)), mode in itertools.product(range(runs), clusters.items(), modes):
        sample, result = stats_run(client, paths, MODES[mode], fig["idle_loop_cpu"])
        assert result == expected, "results differ between runs"
        samples.setdefault((n, mode), []).append(sample | {"load_1min": os.getloadavg()[0]})
    out = {}
    for n, (client, figures) in clusters.items():
        auto = engine.cores_per_thread(client) >= archive.READ_AHEAD_CORES
        modes_out = {mode: summarise_runs(samples[n, mode]) for mode in modes}
        heads = [archive.Head(p, 0, (), os.path.getsize(p)) for p in paths]
        tasks = len(archive.batches(heads, n))
        out[n] = figures | {"auto_read_ahead": auto, "partial_tasks": tasks, "modes": modes_out}
        # The figures run_all.py reads: the mode users get (auto), or the first one measured.
        main_mode = modes_out.get("auto", modes_out[modes[0]])
        out[n] |= {"wall_s": main_mode["wall_s"], "wall_range_s": main_mode["wall_range_s"]}
        print(n, "workers:", json.dumps(out[n]), flush=True)
    return out


def bench_merge(clusters: dict, paths: list[str], folder: Path, runs: int, out: dict) -> None:
    """The merge by time ranges on every cluster against the single-process merge."""
    single = folder / "single.pcapng"
    singles = [timed(lambda: merge(paths, single, force=True))[0] for _ in range(runs)]
    out["merge_single_process_s"] = statistics.median(singles)
    for n, (client, _) in clusters.items():
        merges = []
        for _ in range(runs):
            ranged = folder / "ranged.pcapng"
            merges.append(
                timed(lambda c=client, o=ranged: archive_merge.merge(c, paths, str(o), force=True))[
                    0
                ]
            )
            assert ranged.read_bytes() == single.read_bytes(), "merge differs"
        run = out["runs"][n]
        run["merge_s"] = statistics.median(merges)
        run["merge_range_s"] = [min(merges), max(merges)]
        run["merge_speedup_vs_single"] = out["merge_single_process_s"] / run["merge_s"]


def summary_line(out: dict, modes: list[str]) -> str:
    """Speed-up of 2 workers over 1 per read-ahead mode, from the median runs and from the
    fastest (the least disturbed by other load), with the load average."""
    runs = out["runs"]
    parts = []
    for mode in modes:
        if 1 in runs and 2 in runs:
            one, two = runs[1]["modes"][mode], runs[2]["modes"][mode]
            fast_one, fast_two = one["wall_range_s"][0], two["wall_range_s"][0]
            spread = "{0:.3f} s [{1[0]:.3f}-{1[1]:.3f}]".format
            parts.append(
                f"{mode} {one['wall_s'] / two['wall_s']:.2f}x median "
                f"({spread(one['wall_s'], one['wall_range_s'])} -> "
                f"{spread(two['wall_s'], two['wall_range_s'])}), "
                f"{fast_one / fast_two:.2f}x fastest runs, driver CPU "
                f"{one['driver_cpu_s'] * 1e3:.0f} / {two['driver_cpu_s'] * 1e3:.0f} ms a run"
            )
    load = f"load average before {out['load_before'][0]:.2f}, after {out['load_after'][0]:.2f}"
    speedups = "; ".join(parts) if parts else "needs --workers with 1 and 2"
    return (
        f"SUMMARY archive stats, {out['files']} files x {out['packets'] // out['files']} packets "
        f"in {out['folder']}, {os.cpu_count()} CPUs: speed-up 2 vs 1 workers, read-ahead "
        f"{speedups} [target >= 1.6x]; {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--packets", type=int, default=4_000_000)
    parser.add_argument("--sizes", default="64", help="frame mix (64 keeps the files small)")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--read-ahead", default="auto,off,on", help="modes: auto, on, off")
    parser.add_argument("--runs", type=int, default=3)
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--folder", default=shm, help="where the files are written")
    parser.add_argument("--skip-merge", action="store_true", help="archive stats only")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    modes = args.read_ahead.split(",")
    if not set(modes) <= set(MODES):
        parser.error(f"--read-ahead {args.read_ahead!r}: modes are {', '.join(MODES)}")
    out: dict = {
        "files": args.files,
        "packets": args.packets,
        "sizes": args.sizes,
        "folder": args.folder or tempfile.gettempdir(),
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(dir=args.folder) as d, ExitStack() as stack:
        paths = make_archive(Path(d), args.files, args.packets, args.sizes)
        out["bytes"] = sum(Path(p).stat().st_size for p in paths)
        config = stats_config(40, WINDOWS_NS)
        ((origin, _),) = core().trace_first_records(paths[:1])
        out["partial_per_file"] = partial_costs(paths, config, origin)
        out["partial_s_per_file"] = out["partial_per_file"]["on"]["wall_s"]
        partials = [core().trace_partial(p, config, origin) for p in paths]
        out["partial_bytes_per_file"] = statistics.median(len(pickle.dumps(p)) for p in partials)
        out["reduce_s"], _ = timed(lambda: reduce(paths, partials, config))
        print("in this process:", json.dumps(out), flush=True)
        clusters = start_clusters(stack, [int(w) for w in args.workers.split(",")])
        out["runs"] = bench_stats(clusters, paths, modes, args.runs)
        if not args.skip_merge:
            bench_merge(clusters, paths, Path(d), args.runs, out)
    one = out["runs"].get(1, {}).get("wall_s")
    for run in out["runs"].values():
        run["speedup_vs_1"] = one / run["wall_s"] if one else None
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=2) + "\n")
    print(summary_line(out, modes))


if __name__ == "__main__":
    main()

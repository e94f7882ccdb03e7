"""Archive statistics on Dask (issue 17 item 4): `archive.archive_stats` over --files captures
of one port (cut from one `trace synth` on/off capture of the --sizes mix) on 1, 2 and 4 local
workers, the cluster started before the clock runs (start-up is printed apart); the result is
checked equal on every run. Then `archive.merge` (time ranges, pcapng out) on the same
clusters against the single-process `trace.merge`, the output checked byte-identical. Also:
the cost of one file's partial in this process (the Rust reader), of the reduce (appending
every partial and summarising), and of a no-op task on the cluster; the load average before
and after, since other work shares the machine.

Run: python3 benchmarks/bench_archive.py [--files 64] [--packets 4000000] [--sizes 64]
     [--workers 1,2,4] [--runs 3] [--json-out F.json]
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from pcieperf import archive, engine, trace
from pcieperf._native import core
from pcieperf.ethernet import Ethernet, parse_mix

PCAP_HEADER, RECORD_HEADER = 24, 16  # draft-ietf-opsawg-pcap §4, §5


def make_archive(folder: Path, files: int, packets: int, sizes: str) -> list[str]:
    """One on/off capture of `packets` packets of the `sizes` mix cut into `files` pcap files."""
    whole = folder / "whole.pcap"
    trace.synth(
        whole,
        eth=Ethernet(40),
        mix=parse_mix(sizes),
        pps=10e6,
        duration_s=packets / 10e6,
        arrival="onoff",
    )
    t = trace.read(whole, offsets=True)
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


def _noop(_shared: object, chunk: int) -> int:
    return chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--packets", type=int, default=4_000_000)
    parser.add_argument("--sizes", default="64", help="frame mix (64 keeps the files small)")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    out: dict = {
        "files": args.files,
        "packets": args.packets,
        "sizes": args.sizes,
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        paths = make_archive(Path(d), args.files, args.packets, args.sizes)
        out["bytes"] = sum(Path(p).stat().st_size for p in paths)
        config = trace.stats_config(40, trace.WINDOWS_NS)
        per_file = [timed(lambda p=p: core().trace_partial(p, config, 0))[0] for p in paths[:8]]
        out["partial_s_per_file"] = statistics.median(per_file)
        ((origin, _),) = core().trace_first_records(paths[:1])
        partials = [core().trace_partial(p, config, origin) for p in paths]
        out["reduce_s"], _ = timed(lambda: reduce(paths, partials, config))
        single = Path(d) / "single.pcapng"
        singles = [
            timed(lambda: trace.merge(paths, single, force=True))[0] for _ in range(args.runs)
        ]
        out["merge_single_process_s"] = statistics.median(singles)
        out["runs"] = {}
        expected = None
        for n in [int(w) for w in args.workers.split(",")]:
            t0 = time.perf_counter()
            with engine.connect(engine.parse_scheduler(f"local:{n}")) as client:
                client.wait_for_workers(n)
                started = time.perf_counter() - t0
                noop = [
                    timed(lambda: list(engine.map_chunks(client, _noop, range(200))))[0] / 200
                    for _ in range(2)
                ]
                walls = []
                for _ in range(args.runs):
                    wall, result = timed(lambda client=client: archive.archive_stats(client, paths))
                    expected = expected or result
                    assert result == expected, "results differ between runs"
                    walls.append(wall)
                merges = []
                for _ in range(args.runs):
                    ranged = Path(d) / "ranged.pcapng"
                    merges.append(
                        timed(
                            lambda c=client, o=ranged: archive.merge(c, paths, str(o), force=True)
                        )[0]
                    )
                    assert ranged.read_bytes() == single.read_bytes(), "merge differs"
            out["runs"][n] = {
                "start_s": started,
                "noop_task_s": min(noop),
                "wall_s": statistics.median(walls),
                "wall_range_s": [min(walls), max(walls)],
                "merge_s": statistics.median(merges),
                "merge_range_s": [min(merges), max(merges)],
            }
            print(n, "workers:", out["runs"][n], flush=True)
    one = out["runs"].get(1, {}).get("wall_s")
    for run in out["runs"].values():
        run["speedup_vs_1"] = one / run["wall_s"] if one else None
        run["merge_speedup_vs_single"] = out["merge_single_process_s"] / run["merge_s"]
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

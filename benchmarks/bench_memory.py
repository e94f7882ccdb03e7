"""Peak memory beside the input's size (issue 46 item 4): the commands whose memory grew with
their input, each whole, as a user runs it, median of --runs runs of its peak resident memory
(GNU time's %M, interpreter included) and wall time, beside an earlier pcieperf's
(--baseline-src) where given.

- `nic --trace` and `dpdk-fwd --trace` of a capture of --packets 64-byte frames (`trace synth`,
  10 Mpps constant): target < 64 MiB at any size (they held ~70 B a packet);
- `explain --counters` and `iommu fit --counters` of a pcm-iio file of --counter-mb MB:
  tests/data/counters/pcm-iio-skx.csv's two samples again and again, one a second apart:
  target < 256 MiB for 200 MB (they held 2.2 GB).
Run: python3 benchmarks/bench_memory.py [--packets 10000000] [--counter-mb 200] [--runs 3]
[--baseline-src DIR] [--dir DIR] [--json-out F.json]
"""

import argparse
import datetime as dt
import json
import statistics
import tempfile
from pathlib import Path

from bench_trace import Bench

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "counters" / "pcm-iio-skx.csv"
TRACE_TARGET_MIB, COUNTERS_TARGET_MIB = 64, 256  # issue 46 item 4


def write_counters(path: Path, size_bytes: int) -> int:
    """SAMPLE's two samples (a header before each, four rows) again and again, one a second
    after the one before, until `path` holds `size_bytes`; returns the samples written."""
    lines = SAMPLE.read_text().splitlines()
    header, rows = lines[0], [lines[1:5], lines[6:10]]
    start = dt.datetime(2026, 11, 21, 23, 8, 10, 123000)
    stamp_chars = len("2026-11-21,23:08:10.123")
    written = samples = 0
    with path.open("w") as fh:
        while written < size_bytes:
            t = start + dt.timedelta(seconds=samples)
            stamp = f"{t:%Y-%m-%d},{t:%H:%M:%S}.{t.microsecond // 1000:03d}"
            block = "".join(stamp + row[stamp_chars:] + "\n" for row in rows[samples % 2])
            text = header + "\n" + block
            fh.write(text)
            written += len(text)
            samples += 1
    return samples


def measure(bench: Bench, argv: list[str], target_mib: int, input_bytes: int) -> dict:
    """Peaks and seconds of `pcieperf ARGV` (and of the baseline's) over the runs."""
    got: dict = {"input_bytes": input_bytes, "target_mib": target_mib}
    contenders = {"": False, "baseline_": True} if bench.baseline else {"": False}
    for key, baseline in contenders.items():
        got[f"{key}peak_mib"], got[f"{key}seconds"] = [], []
        for _ in range(bench.runs):
            seconds, peak = bench.once(bench.pcieperf(*argv, baseline=baseline), None)
            got[f"{key}peak_mib"].append(peak)
            got[f"{key}seconds"].append(seconds)
    return got


def report(name: str, got: dict) -> None:
    line = f"{name}: peak {statistics.median(got['peak_mib']):.1f} MiB"
    line += f" (target < {got['target_mib']}), {statistics.median(got['seconds']):.2f} s"
    if "baseline_peak_mib" in got:
        line += f"; baseline {statistics.median(got['baseline_peak_mib']):.1f} MiB, "
        line += f"{statistics.median(got['baseline_seconds']):.2f} s"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=10_000_000, help="64-byte frames")
    parser.add_argument("--counter-mb", type=float, default=200, help="counter file size")
    parser.add_argument("--runs", type=int, default=3, help="runs per command (median)")
    parser.add_argument("--dir", default=None, help="scratch folder (default: a temp dir)")
    parser.add_argument("--baseline-src", default=None, help="an earlier pcieperf's src folder")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        scratch = Path(folder)
        baseline = Path(args.baseline_src).resolve() if args.baseline_src else None
        bench = Bench(args.runs, scratch, scratch, baseline)
        capture, counters = scratch / "frames.pcap", scratch / "pcm-iio.csv"
        duration = f"{args.packets / 10e6 * 1e3:g}ms"
        synth = ["trace", "synth", "--sizes", "64", "--pps", "10M", "--duration", duration]
        bench.once(bench.pcieperf(*synth, "-o", str(capture), "-q"), capture)
        write_counters(counters, int(args.counter_mb * 1e6))
        trace_mb, counter_mb = capture.stat().st_size / 1e6, counters.stat().st_size / 1e6
        packets = f"{args.packets / 1e6:g} M packets ({trace_mb:.0f} MB)"
        cases = {
            f"nic --trace, {packets}": (["nic", "--trace", str(capture)], TRACE_TARGET_MIB),
            f"dpdk-fwd --trace, {packets}": (
                ["dpdk-fwd", "--trace", str(capture)],
                TRACE_TARGET_MIB,
            ),
            f"explain --counters, {counter_mb:.0f} MB": (
                ["explain", "--counters", str(counters), "--pps", "10M", "--frame", "64"],
                COUNTERS_TARGET_MIB,
            ),
            f"iommu fit --counters, {counter_mb:.0f} MB": (
                ["iommu", "fit", "--counters", str(counters), "--pps", "7M", "--frame", "64"],
                COUNTERS_TARGET_MIB,
            ),
        }
        sizes = {"nic": capture, "dpdk-fwd": capture, "explain": counters, "iommu": counters}
        for name, (argv, target) in cases.items():
            size = sizes[argv[0]].stat().st_size
            results[name] = measure(bench, [*argv, "--json", "-q"], target, size)
            report(name, results[name])
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Capture-file speed (issue 5) on a generated capture of 64-byte frames (1 GiB by default).

Read: pcieperf (Rust reader into numpy columns) against `capinfos` and `dpkt`.
Write: pcieperf's buffered writer against a C program that calls libpcap's `pcap_dump` once
per packet (built here from Debian's libpcap-dev), both writing the same frames.
Merge: two interleaved halves merged by pcieperf and by `mergecap`; peak RSS (VmHWM) of the
merge for inputs of 1/4 and of the full size, and for the full size split into 2, 8 and 64
inputs (it must grow with neither size nor count). Two figures per merge: the process that runs
only the Rust merge (Python + the extension, what the engine holds), and the `pcieperf trace
merge` command as a whole (its imports included), beside `mergecap`'s.
Targets: read >= 1 GB/s and >= 10x dpkt; write >= 3x the per-packet libpcap baseline;
merge >= 2x mergecap; merge peak memory < 32 MiB whatever the size and count of the inputs.
Run: python3 benchmarks/bench_trace.py [--gib 1.0] [--dir /tmp]
Comparisons whose tool is missing are skipped with a note (apt-get install tshark libpcap-dev,
pip install dpkt).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pcieperf import trace
from pcieperf._native import core

FRAME = 60  # a 64-byte frame as captured: no FCS
RECORD = 16 + FRAME  # pcap record header + data
BASELINE_C = r"""
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* One pcap_dump call per packet: libpcap's own per-record write path. */
int main(int argc, char **argv) {
    long n = atol(argv[2]);
    pcap_t *p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 262144,
                                                     PCAP_TSTAMP_PRECISION_NANO);
    pcap_dumper_t *d = pcap_dump_open(p, argv[1]);
    if (!d) { fprintf(stderr, "%s\n", pcap_geterr(p)); return 1; }
    unsigned char frame[60];
    memset(frame, 0, sizeof frame);
    struct pcap_pkthdr h;
    h.caplen = h.len = sizeof frame;
    for (long i = 0; i < n; i++) {
        long ns = 1767225600000000000L + i * 17;
        h.ts.tv_sec = ns / 1000000000L;
        h.ts.tv_usec = ns % 1000000000L;
        frame[0] = (unsigned char)i;
        pcap_dump((u_char *)d, &h, frame);
    }
    pcap_dump_close(d);
    return 0;
}
"""


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(cmd: list[str]) -> float:
    return timed(lambda: subprocess.run(cmd, check=True, capture_output=True))


def line(what: str, packets: int, nbytes: int, seconds: float) -> None:
    print(
        f"  {what:<38} {seconds:7.2f} s  {packets / seconds / 1e6:7.2f} Mpps  "
        f"{nbytes / seconds / 1e9:6.2f} GB/s"
    )


def write_capture(path: Path, n: int, offset_ns: int = 0, step_ns: int = 17) -> float:
    ts = trace.SYNTH_START_NS + offset_ns + np.arange(n, dtype=np.int64) * step_ns
    lens = np.full(n, FRAME, dtype=np.uint32)
    return timed(lambda: core().trace_synth(str(path), "pcap", ts, lens, 1024))


def bench_read(path: Path, n: int) -> None:
    size = path.stat().st_size
    print(f"read ({n} packets, {size / 2**30:.2f} GiB, page cache warm):")
    run(["cat", str(path)])  # warm the page cache for every reader alike
    ours = timed(lambda: trace.read(path))
    line("pcieperf trace.read -> numpy", n, size, ours)
    if shutil.which("capinfos"):
        theirs = run(["capinfos", "-c", "-M", str(path)])
        line("capinfos -c", n, size, theirs)
        print(f"  pcieperf / capinfos: {theirs / ours:.1f}x")
    else:
        print("  capinfos missing (apt-get install wireshark-common): skipped")
    try:
        import dpkt
    except ImportError:
        print("  dpkt missing (pip install dpkt): skipped")
        return

    def dpkt_read() -> None:
        with path.open("rb") as fh:
            for _ in dpkt.pcap.Reader(fh):
                pass

    theirs = timed(dpkt_read)
    line("dpkt.pcap.Reader", n, size, theirs)
    print(f"  pcieperf / dpkt: {theirs / ours:.1f}x (target >= 10x); GB/s target >= 1")


def write_batch(path: Path, n: int) -> float:
    """The writer alone: n copies of one 60-byte frame from memory, as the C baseline writes."""
    ts = trace.SYNTH_START_NS + np.arange(n, dtype=np.int64) * 17
    lens = np.full(n, FRAME, dtype=np.uint32)
    frame, offsets, iface = (
        np.zeros(FRAME, np.uint8),
        np.zeros(n, np.uint64),
        np.zeros(n, np.uint32),
    )

    def write() -> None:
        writer = core().TraceWriter(str(path), "pcap", 1, 0)
        writer.write_batch(ts, iface, lens, lens, frame, offsets)
        writer.close()

    return timed(write)


ROUNDS = 3


def best_and_median(folder: Path, name: str, write) -> tuple[float, float]:
    """Seconds of `write(path)` over ROUNDS fresh files: best and median. Each round deletes the
    previous file and syncs first, so no writer pays for the last one's writeback."""
    times = []
    for _ in range(ROUNDS):
        path = folder / name
        path.unlink(missing_ok=True)
        os.sync()
        times.append(write(path))
    return min(times), float(np.median(times))


def bench_write(folder: Path, n: int) -> None:
    print(f"write ({n} packets of {FRAME} B, pcap with ns timestamps, best/median of {ROUNDS}):")
    ours = best_and_median(folder, "ours.pcap", lambda p: write_batch(p, n))
    size = (folder / "ours.pcap").stat().st_size
    for label, t in zip(("best", "median"), ours, strict=True):
        line(f"pcieperf writer, {label}", n, size, t)
    os.sync()
    synth = write_capture(folder / "synth.pcap", n)
    line("pcieperf trace synth (builds UDP frames)", n, size, synth)
    (folder / "synth.pcap").unlink()
    if not (shutil.which("gcc") and Path("/usr/include/pcap/pcap.h").exists()):
        print("  gcc or libpcap-dev missing (apt-get install libpcap-dev): skipped")
        return
    source = folder / "dump.c"
    source.write_text(BASELINE_C)
    binary = folder / "dump"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source), "-lpcap"], check=True)
    theirs = best_and_median(folder, "libpcap.pcap", lambda p: run([str(binary), str(p), str(n)]))
    for label, t in zip(("best", "median"), theirs, strict=True):
        line(f"libpcap pcap_dump per packet, {label}", n, size, t)
    print(
        f"  pcieperf / pcap_dump: best {theirs[0] / ours[0]:.1f}x, median "
        f"{theirs[1] / ours[1]:.1f}x (target >= 3x)"
    )


# VmHWM (peak RSS of this process image) rather than ru_maxrss, which a child inherits from
# the benchmark process that forked it. The engine alone: the extension is loaded from its file,
# without the pcieperf package, whose __init__ imports numpy and the models (~41 MB by itself).
MERGE_PEAK = """
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.ExtensionFileLoader("pcieperf._core", sys.argv[1])
core = importlib.util.module_from_spec(
    importlib.util.spec_from_file_location("pcieperf._core", sys.argv[1], loader=loader)
)
loader.exec_module(core)
core.trace_merge(sys.argv[3:], sys.argv[2], "pcapng", False)
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(int(status.split()[0]))
"""


def merge_peak_mib(inputs: list[Path], out: Path) -> float:
    extension = core().__file__
    done = subprocess.run(
        [sys.executable, "-c", MERGE_PEAK, extension, str(out), *map(str, inputs)],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout.strip()) / 1024


def command_peak_mib(cmd: list[str]) -> float:
    """Peak RSS of a whole command (GNU time's maximum resident set size of the child)."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *cmd], check=True, capture_output=True, text=True
    )
    return int(done.stderr.strip().splitlines()[-1]) / 1024


def split_inputs(folder: Path, n: int, parts: int) -> list[Path]:
    """`n` packets split into `parts` interleaved inputs (input k holds packets k, k+parts...)."""
    paths = []
    for k in range(parts):
        paths.append(folder / f"part{parts}-{k}.pcap")
        write_capture(paths[-1], n // parts, 17 * k, 17 * parts)
    return paths


def bench_merge(folder: Path, n: int) -> None:
    half = n // 2
    a, b = folder / "a.pcap", folder / "b.pcap"
    write_capture(a, half, 0, 34)
    write_capture(b, half, 17, 34)  # interleaves with a: the merge alternates inputs
    size = a.stat().st_size + b.stat().st_size
    print(f"merge (2 x {half} packets, {size / 2**30:.2f} GiB in):")
    run(["cat", str(a), str(b)])
    out = folder / "merged.pcap"
    ours = timed(lambda: trace.merge([a, b], out, force=True))
    line("pcieperf trace.merge", 2 * half, size, ours)
    if shutil.which("mergecap"):
        theirs = run(["mergecap", "-F", "pcap", "-w", str(folder / "mc.pcap"), str(a), str(b)])
        line("mergecap -F pcap", 2 * half, size, theirs)
        print(f"  pcieperf / mergecap: {theirs / ours:.1f}x (target >= 2x)")
    else:
        print("  mergecap missing (apt-get install wireshark-common): skipped")
    small_a, small_b = folder / "sa.pcap", folder / "sb.pcap"
    write_capture(small_a, half // 4, 0, 34)
    write_capture(small_b, half // 4, 17, 34)
    small = merge_peak_mib([small_a, small_b], folder / "sm.pcapng")
    full = merge_peak_mib([a, b], folder / "m.pcapng")
    print(
        f"  merge peak RSS (engine): {small:.1f} MiB for {size / 4 / 2**20:.0f} MiB in, "
        f"{full:.1f} MiB for {size / 2**20:.0f} MiB in"
    )
    for f in (small_a, small_b):
        f.unlink()
    bench_merge_count(folder, [a, b], size)


def bench_merge_count(folder: Path, pair: list[Path], size: int) -> None:
    """Peak RSS with 2, 8 and 64 inputs of the same total size."""
    n = sum((p.stat().st_size - 24) // RECORD for p in pair)
    pcieperf = [sys.executable, "-m", "pcieperf.cli", "trace", "merge", "--force"]
    for parts in (2, 8, 64):
        inputs = pair if parts == 2 else split_inputs(folder, n, parts)
        out = folder / "count.pcapng"
        engine = merge_peak_mib(inputs, out)
        whole = command_peak_mib([*pcieperf, *map(str, inputs), "-o", str(out)])
        line_ = f"  {parts:>2} inputs, {size / 2**20:.0f} MiB: engine {engine:5.1f} MiB, "
        line_ += f"pcieperf trace merge {whole:5.1f} MiB"
        if shutil.which("mergecap"):
            theirs = command_peak_mib(["mergecap", "-w", str(out), *map(str, inputs)])
            line_ += f", mergecap {theirs:5.1f} MiB"
        print(line_)
        if parts != 2:
            for p in inputs:
                p.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="size of the generated capture")
    parser.add_argument("--dir", default=None, help="scratch folder (default: a temp dir)")
    args = parser.parse_args()
    n = int(args.gib * 2**30 - 24) // RECORD
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        folder = Path(scratch)
        bench_write(folder, n)
        bench_read(folder / "ours.pcap", n)
        for name in ("libpcap.pcap", "ours.pcap"):
            (folder / name).unlink(missing_ok=True)
        bench_merge(folder, n)


if __name__ == "__main__":
    main()

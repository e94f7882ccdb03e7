"""Capture commands as a user times them (issue 15): each whole `pcieperf trace` command beside
the tool it replaces, in the same run, alternating, median of --runs runs with the spread.

- stats: `pcieperf trace stats F --json` vs `capinfos -c -d F` and a dpkt script (count and
  bytes) on --packets 64-byte frames made by `pcieperf trace synth`;
  peak memory on a 4 GiB capture (a sparse file: its hole reads as zero-length records at
  time 0, so nothing is written to disk; deleted after).
- merge: `pcieperf trace merge ... -o M.pcapng` vs `mergecap -w M.pcapng` (pcapng out on both
  sides) for 2, 8 and 64 interleaved inputs holding the same packets, with peak memory.
- convert: `pcieperf trace convert F -o C.pcap` vs a C program that reads F with libpcap and
  writes it with `pcap_dump`, one call per packet (built here from Debian's libpcap-dev), and
  beside them the floor both share: `dd` writing as many bytes from /dev/zero, 1 MiB a call.
- writer (the engine, in this process): pcieperf's buffered writer vs libpcap's `pcap_dump`
  per packet, both writing --packets copies of one frame from memory, beside the same floor.
Outputs go to a tmpfs (/dev/shm) when there is one, so the disk adds noise to neither side.
`--baseline-src DIR` also times an earlier pcieperf (its src folder, extension built) beside.
Targets: stats >= 2x capinfos and >= 50x dpkt, < 64 MiB on 4 GiB; merge >= 3x mergecap and
< 32 MiB at 2 and 64 inputs; convert >= 5x libpcap pcap_dump.
Run: python3 benchmarks/bench_trace.py [--packets 6000000] [--runs 5] [--json-out F.json]
[--only convert ...]
Peers that are missing are skipped with the reason (apt-get install tshark libpcap-dev gcc;
dpkt is pip-installed into this interpreter's environment if absent).
"""

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pcieperf
from pcieperf._native import core
from pcieperf.net.trace.synthesis import SYNTH_START_NS

FRAME = 60  # a 64-byte frame as captured: no FCS
TIME = "/usr/bin/time"  # GNU time: the peak RSS of the command itself (%M, KiB)
DPKT_SCRIPT = """
import sys, dpkt
packets = data = 0
with open(sys.argv[1], "rb") as f:
    for _, buf in dpkt.pcap.Reader(f):
        packets += 1
        data += len(buf)
print(packets, data)
"""
CONVERT_C = r"""
#include <pcap/pcap.h>
#include <stdio.h>
/* libpcap's own convert: pcap_next_ex per record, pcap_dump (two fwrites) per record. */
int main(int argc, char **argv) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *in = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO,
                                                         err);
    if (!in) { fprintf(stderr, "%s\n", err); return 1; }
    pcap_dumper_t *out = pcap_dump_open(in, argv[2]);
    if (!out) { fprintf(stderr, "%s\n", pcap_geterr(in)); return 1; }
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(in, &h, &data)) == 1) pcap_dump((u_char *)out, h, data);
    pcap_dump_close(out);
    pcap_close(in);
    return rc == PCAP_ERROR_BREAK ? 0 : 1;
}
"""
DUMP_C = r"""
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* One pcap_dump call per packet from memory: libpcap's own per-record write path. */
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


class Bench:
    """Runs commands side by side and collects the figures (printed and, on request, JSON)."""

    def __init__(self, runs: int, scratch: Path, out_dir: Path, baseline: Path | None) -> None:
        self.runs = runs
        self.scratch = scratch
        self.out_dir = out_dir
        self.baseline = baseline
        self.results: dict[str, dict] = {}

    def pcieperf(self, *args: str, baseline: bool = False) -> list[str]:
        """The `pcieperf` command as a user runs it (this one, or the baseline source's)."""
        if baseline:
            base = ["env", f"PYTHONPATH={self.baseline}", sys.executable, "-m", "pcieperf.cli"]
            return [*base, *args]
        script = Path(sys.executable).with_name("pcieperf")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "pcieperf.cli"]
        return [*command, *args]

    def once(self, cmd: list[str], clean: Path | None) -> tuple[float, float | None]:
        """Wall seconds and peak RSS (MiB, from GNU time) of one run; `clean` is removed
        before, so no run writes over the file of another."""
        if clean is not None:
            clean.unlink(missing_ok=True)
        timed = [TIME, "-f", "%M", *cmd] if Path(TIME).exists() else cmd
        start = time.perf_counter()
        done = subprocess.run(timed, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
        peak = int(done.stderr.strip().splitlines()[-1]) / 1024 if timed is not cmd else None
        own = done.stdout.strip().splitlines()[-1:]  # a command may time its own work
        if own and own[0].startswith("elapsed_s="):
            seconds = float(own[0].removeprefix("elapsed_s="))
        return seconds, peak

    def compare(self, name: str, contenders: dict[str, tuple[list[str], Path | None]]) -> None:
        """Times every contender `runs` times, alternating, and reports medians, spreads and
        the speed of the first (pcieperf) against each other one."""
        seconds: dict[str, list[float]] = {k: [] for k in contenders}
        peaks: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(self.runs):
            for label, (cmd, clean) in contenders.items():
                s, peak = self.once(cmd, clean)
                seconds[label].append(s)
                if peak is not None:
                    peaks[label].append(peak)
        ours = next(iter(contenders))
        print(f"{name} (median of {self.runs}, [min-max]):")
        entry = {}
        for label in contenders:
            med = statistics.median(seconds[label])
            peak = max(peaks[label]) if peaks[label] else None
            ratio = med / statistics.median(seconds[ours])
            shown = f"{peak:6.1f} MiB" if peak is not None else "   n/a"
            print(
                f"  {label:<34} {med:7.3f} s [{min(seconds[label]):.3f}-"
                f"{max(seconds[label]):.3f}]  peak {shown}"
                + ("" if label == ours else f"  -> pcieperf {ratio:.2f}x faster")
            )
            entry[label] = {"median_s": med, "runs_s": seconds[label], "peak_mib": peak}
        self.results[name] = entry


def skip(what: str, why: str) -> None:
    print(f"  {what}: skipped ({why})")


def ensure_dpkt() -> bool:
    """dpkt in this interpreter's environment, pip-installed if absent."""
    try:
        import dpkt  # noqa: F401
    except ImportError:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "dpkt"], capture_output=True
        )
        if done.returncode != 0:
            return False
    return True


def build_c(source: str, folder: Path, name: str) -> Path | None:
    if not (shutil.which("gcc") and Path("/usr/include/pcap/pcap.h").exists()):
        return None
    (folder / f"{name}.c").write_text(source)
    binary = folder / name
    subprocess.run(
        ["gcc", "-O2", "-o", str(binary), str(folder / f"{name}.c"), "-lpcap"], check=True
    )
    return binary


def write_capture(path: Path, n: int, offset_ns: int = 0, step_ns: int = 17) -> None:
    """`n` UDP frames of 64 bytes, `step_ns` apart from `offset_ns` (pcap, ns)."""
    ts = SYNTH_START_NS + offset_ns + np.arange(n, dtype=np.int64) * step_ns
    core().trace_synth(str(path), "pcap", ts, np.full(n, FRAME, dtype=np.uint32), 1024)


def synth_capture(bench: Bench, packets: int, name: str = "frames.pcap") -> Path:
    """`packets` 64-byte frames made by `pcieperf trace synth`, read once into the page cache."""
    capture = bench.scratch / name
    seconds = packets / 10e6
    synth = ["trace", "synth", "--sizes", "64", "--pps", "10M", "--duration", f"{seconds}s"]
    subprocess.run([*bench.pcieperf(*synth, "-o", str(capture))], check=True, capture_output=True)
    subprocess.run(["cat", str(capture)], check=True, stdout=subprocess.DEVNULL)  # page cache
    return capture


def bench_stats(bench: Bench, capture: Path, packets: int) -> None:
    contenders = {
        "pcieperf trace stats --json": (
            bench.pcieperf("trace", "stats", str(capture), "--json"),
            None,
        )
    }
    if bench.baseline:
        base = bench.pcieperf("trace", "stats", str(capture), "--json", baseline=True)
        contenders["baseline pcieperf trace stats --json"] = (base, None)
    if shutil.which("capinfos"):
        contenders["capinfos -c -d"] = (["capinfos", "-c", "-d", str(capture)], None)
    else:
        skip("capinfos", "not installed: apt-get install tshark")
    if ensure_dpkt():
        contenders["dpkt.pcap.Reader (count, bytes)"] = (
            [sys.executable, "-c", DPKT_SCRIPT, str(capture)],
            None,
        )
    else:
        skip("dpkt", "pip could not install it")
    size = capture.stat().st_size
    bench.compare(
        f"stats: {packets} packets of 64 B, {size / 1e6:.0f} MB, page cache warm", contenders
    )


def bench_stats_memory(bench: Bench) -> None:
    """Peak memory of `trace stats` on 4 GiB: a sparse pcap whose hole reads as 16-byte zero
    records (time 0, no data), 268 M packets, with no disk used."""
    big = bench.scratch / "sparse-4gib.pcap"
    header = (0xA1B23C4D).to_bytes(4, "little") + bytes([2, 0, 4, 0]) + bytes(8)
    header += (262144).to_bytes(4, "little") + (1).to_bytes(4, "little")  # snaplen, Ethernet
    records = ((4 << 30) - len(header)) // 16
    with big.open("wb") as f:
        f.write(header)
        f.truncate(len(header) + 16 * records)
    try:
        seconds, peak = bench.once(bench.pcieperf("trace", "stats", str(big), "--json"), None)
    finally:
        big.unlink()
    print(
        f"stats of a 4 GiB capture ({records / 1e6:.0f} M records): {seconds:.1f} s, "
        f"peak {peak:.1f} MiB (target < 64)"
    )
    bench.results["stats 4 GiB"] = {"seconds": seconds, "peak_mib": peak}


def bench_merge(bench: Bench, packets: int) -> None:
    out = bench.out_dir / "merged.pcapng"
    for parts in (2, 8, 64):
        inputs = [bench.scratch / f"part{parts}-{k}.pcap" for k in range(parts)]
        for k, path in enumerate(inputs):
            write_capture(path, packets // parts, 17 * k, 17 * parts)
        subprocess.run(["cat", *map(str, inputs)], check=True, stdout=subprocess.DEVNULL)
        names = [str(p) for p in inputs]
        contenders = {
            "pcieperf trace merge -o M.pcapng": (
                bench.pcieperf("trace", "merge", *names, "-o", str(out), "--force"),
                out,
            )
        }
        if bench.baseline:
            base = bench.pcieperf(
                "trace", "merge", *names, "-o", str(out), "--force", baseline=True
            )
            contenders["baseline pcieperf trace merge"] = (base, out)
        if shutil.which("mergecap"):
            contenders["mergecap -w M.pcapng"] = (["mergecap", "-w", str(out), *names], out)
        else:
            skip("mergecap", "not installed: apt-get install tshark")
        bench.compare(f"merge: {parts} inputs, {packets} packets to pcapng", contenders)
        out.unlink(missing_ok=True)
        for path in inputs:
            path.unlink()


FLOOR = "output write alone (dd, the floor)"


def write_floor(out: Path, size: int) -> list[str]:
    """`dd` writing `size` bytes (rounded up to MiB) from /dev/zero to `out`, 1 MiB a call: the
    least any writer of that file can take here."""
    mib = -(-size // (1 << 20))
    return ["dd", "if=/dev/zero", f"of={out}", "bs=1M", f"count={mib}", "status=none"]


def bench_convert(bench: Bench, capture: Path, packets: int) -> None:
    out = bench.out_dir / "converted.pcap"
    contenders = {
        "pcieperf trace convert -o C.pcap": (
            bench.pcieperf("trace", "convert", str(capture), "-o", str(out), "--force"),
            out,
        )
    }
    if bench.baseline:
        base = bench.pcieperf(
            "trace", "convert", str(capture), "-o", str(out), "--force", baseline=True
        )
        contenders["baseline pcieperf trace convert"] = (base, out)
    binary = build_c(CONVERT_C, bench.scratch, "pcap_convert")
    if binary is None:
        skip("libpcap convert", "gcc or libpcap-dev missing: apt-get install gcc libpcap-dev")
    else:
        contenders["libpcap pcap_next_ex + pcap_dump"] = (
            [str(binary), str(capture), str(out)],
            out,
        )
    contenders[FLOOR] = (write_floor(out, capture.stat().st_size), out)
    # What the command costs besides the packets (interpreter, imports, threads, rename): with
    # the floor, the least a whole `trace convert` of the big capture can take.
    tiny = synth_capture(bench, 1, "one-frame.pcap")
    fixed = bench.pcieperf("trace", "convert", str(tiny), "-o", str(out), "--force")
    contenders["pcieperf trace convert of 1 packet"] = (fixed, out)
    bench.compare(f"convert: {packets} packets, pcap (ns) to pcap (ns)", contenders)
    out.unlink(missing_ok=True)
    tiny.unlink()


# The writer as an engine: the time of writing and closing only (not Python's start-up, numpy's
# import or building the arrays), against the C program's whole run.
WRITER = """
import sys, time, numpy as np
from pcieperf._native import core
n = int(sys.argv[2])
ts = 1767225600000000000 + np.arange(n, dtype=np.int64) * 17
lens = np.full(n, 60, dtype=np.uint32)
start = time.perf_counter()
writer = core().TraceWriter(sys.argv[1], "pcap", 1, 0)
writer.write_batch(ts, np.zeros(n, np.uint32), lens, lens, np.zeros(60, np.uint8),
                   np.zeros(n, np.uint64))
writer.close()
print(f"elapsed_s={time.perf_counter() - start}")
"""


def bench_writer(bench: Bench, packets: int) -> None:
    out = bench.out_dir / "written.pcap"
    contenders = {
        "pcieperf writer (engine only)": (
            [sys.executable, "-c", WRITER, str(out), str(packets)],
            out,
        )
    }
    binary = build_c(DUMP_C, bench.scratch, "pcap_dump_loop")
    if binary is None:
        skip("libpcap pcap_dump", "gcc or libpcap-dev missing: apt-get install gcc libpcap-dev")
    else:
        contenders["libpcap pcap_dump per packet"] = ([str(binary), str(out), str(packets)], out)
    pcap_bytes = 24 + packets * (16 + 60)  # file header, then record header + frame each
    contenders[FLOOR] = (write_floor(out, pcap_bytes), out)
    bench.compare(f"writer: {packets} frames of 60 B from memory", contenders)
    out.unlink(missing_ok=True)


PARTS = ("stats", "convert", "merge", "writer", "stats-4gib")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=6_000_000, help="64-byte frames")
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median)")
    parser.add_argument("--dir", default=None, help="scratch folder (default: a temp dir)")
    parser.add_argument("--baseline-src", default=None, help="an earlier pcieperf's src folder")
    parser.add_argument("--json-out", default=None, help="also write the figures here")
    parser.add_argument("--skip-4gib", action="store_true", help="skip the 4 GiB memory run")
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only these parts (repeatable)"
    )
    args = parser.parse_args()
    # A pip install compiles the package's bytecode; an editable one, or a machine with
    # PYTHONDONTWRITEBYTECODE set, would recompile it on every run: compile it once here.
    compileall.compile_dir(Path(pcieperf.__file__).parent, quiet=1)
    if args.baseline_src:
        compileall.compile_dir(Path(args.baseline_src), quiet=1)
    shm = Path("/dev/shm")
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as scratch,
        tempfile.TemporaryDirectory(
            dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else args.dir
        ) as out_dir,
    ):
        baseline = Path(args.baseline_src).resolve() if args.baseline_src else None
        bench = Bench(args.runs, Path(scratch), Path(out_dir), baseline)
        print(f"load average before: {os.getloadavg()}, {os.cpu_count()} CPUs")
        parts = set(args.only or PARTS) - ({"stats-4gib"} if args.skip_4gib else set())
        if parts & {"stats", "convert"}:
            capture = synth_capture(bench, args.packets)
            if "stats" in parts:
                bench_stats(bench, capture, args.packets)
            if "convert" in parts:
                bench_convert(bench, capture, args.packets)
            capture.unlink()
        if "merge" in parts:
            bench_merge(bench, args.packets)
        if "writer" in parts:
            bench_writer(bench, args.packets)
        if "stats-4gib" in parts:
            bench_stats_memory(bench)
        print(f"load average after: {os.getloadavg()}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(bench.results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Writes the inputs and records the expected `pcieperf trace stats --json` output of the
byte-identity test (tests/net/test_trace_stats_golden.py).

The expected files were recorded ONCE, by the numpy implementation of commit 085f2a9 (before
the statistics moved into the Rust core), so that the test compares the new code with the old
one. Re-recording them with the code under test would make the test unable to fail: do it only
for a deliberate change of the output, and say so in the commit.

Run from the project root: python3 tests/data/trace_stats/make.py [--inputs-only]

`--rates-from-oracle` rewrites only the `rates` of every expected file, computed by the numpy
oracle (tests/helpers/stats_oracle.py), not by the code under test: done once, for issue 27's
deliberate change of the rule (peaks over whole windows only, a shorter last window reported
apart as the tail).

`--frames-from-oracle` adds to every expected file the keys issue 27 added beside the recorded
ones (frame bytes incl. FCS: `bytes_frame`, `mean_frame_gbps`, `peak_frame_gbps`,
`tail_frame_gbps`; ISO 8601 times: `first_time`, `last_time`), per file and per interface,
computed by the numpy oracle, not by the code under test; every recorded key keeps its value.
"""

import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

from pcieperf.net.trace.files import read

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository, for the tests package

from tests.helpers import CAPTURES  # noqa: E402
from tests.helpers.captures import CUT_PCAP, QUIRKS, epb, idb, pcap, shb  # noqa: E402

INPUTS = HERE / "inputs"
EXPECTED = HERE / "expected"
# Ethernet rates each input is summarised at (bursts depend on the rate); the shared captures at
# the default 40 GbE only.
ETH_RATES = ("10", "40", "100")
SYNTH = {
    # name: trace synth arguments (5 ms of traffic at most: small files, several 1 ms windows)
    "constant_64.pcap": ["--sizes", "64", "--pps", "1M", "--duration", "5ms"],
    "poisson_imix.pcap": ["--sizes", "imix", "--pps", "2M", "--duration", "3ms", "--arrival",
                          "poisson", "--seed", "3"],
    "onoff_imix.pcapng": ["--sizes", "imix", "--pps", "3M", "--duration", "2ms", "--arrival",
                          "onoff", "--burst", "16", "--seed", "5", "--eth", "100"],
    "onoff_64.pcap": ["--sizes", "64", "--pps", "5M", "--duration", "1ms", "--arrival", "onoff",
                      "--burst", "32"],
}  # fmt: skip


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def shuffled_pcap(count: int, seed: int) -> bytes:
    """A µs pcap whose records are out of time order: random times within 3 s, random lengths
    (0..1600 wire, caplen up to 96), so windows, bursts and gaps see unsorted input."""
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        usec = rng.getrandbits(22) % 3_000_000
        wire = rng.getrandbits(11) % 1601
        records.append((1_700_000_000 + usec // 10**6, usec % 10**6, b"\xab" * min(wire, 96), wire))
    return pcap(records)


def multi_interface_pcapng(count: int, seed: int, units: tuple[int, int, int]) -> bytes:
    """A pcapng with Ethernet, raw IP and Linux cooked interfaces whose timestamps count
    `units` ns each, interleaved, with equal timestamps and back-to-back packets. Times lie on a
    µs grid: in order with units of 1 and 1000 ns; coarser units put packets out of order."""
    rng = random.Random(seed)
    resolutions = [9 - len(str(u)) + 1 for u in units]  # 1 ns -> 9, 1000 ns -> 6, ...
    out = shb("<")
    for linktype, resolution in zip((1, 101, 113), resolutions, strict=True):
        out += idb("<", 0, resolution, linktype)
    us = 1_700_000_000 * 10**6
    for _ in range(count):
        us += rng.choice((0, 1, 1, 2, 17, 300))
        ts = us * 1000
        iface = rng.getrandbits(2) % 3
        wire = rng.choice((0, 10, 46, 60, 300, 1500, 9000))
        out += epb("<", iface, ts // units[iface], b"\xcd" * min(wire, 64), wire)
    return out


def write_inputs() -> list[Path]:
    INPUTS.mkdir(exist_ok=True)
    files = {name: data for name, (data, _) in QUIRKS.items()}
    files["cut.pcap"] = CUT_PCAP
    files["shuffled.pcap.gz"] = gzip.compress(shuffled_pcap(4000, 11), mtime=0)
    in_order = multi_interface_pcapng(3000, 12, (1000, 1000, 1000))
    mixed = multi_interface_pcapng(3000, 13, (1, 1000, 1_000_000))
    files["interfaces.pcapng.gz"] = gzip.compress(in_order, mtime=0)
    files["resolutions.pcapng.gz"] = gzip.compress(mixed, mtime=0)
    for name, data in files.items():
        (INPUTS / name).write_bytes(data)
    for name, args in SYNTH.items():
        cli("trace", "synth", *args, "-o", str(INPUTS / name), "--force")
    parts = [str(INPUTS / n) for n in ("constant_64.pcap", "poisson_imix.pcap")]
    cli("trace", "merge", *parts, "-o", str(INPUTS / "merged.pcapng"), "--force")
    for name in [*SYNTH, "merged.pcapng"]:  # gzip keeps the repository small (~0.5 MB)
        plain = INPUTS / name
        Path(f"{plain}.gz").write_bytes(gzip.compress(plain.read_bytes(), 9, mtime=0))
        plain.unlink()
    return sorted(INPUTS.iterdir())


def record(path: Path, eth: str, key: str) -> None:
    """Expected output for one input at one Ethernet rate, with the path made relative (and
    `{file}` where a message names it: the test puts the checkout's path back)."""
    text = cli("trace", "stats", "--json", "--eth", eth, str(path))
    (result,) = json.loads(text.replace(json.dumps(str(path))[1:-1], "{file}"))
    result["file"] = key
    out = EXPECTED / f"{key.replace('/', '__')}@{eth}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


def rates_from_oracle() -> None:
    """Replace the `rates` of every expected file by the numpy oracle's, at the same windows."""
    import numpy as np
    from tests.helpers import stats_oracle
    from tests.net.test_trace_stats_golden import source

    for expected in sorted(EXPECTED.glob("*.json")):
        path, _ = source(expected)
        recorded = json.loads(expected.read_text())
        found = read(path)
        order = np.argsort(found.ts_ns, kind="stable")
        bits = found.wirelen[order].astype(np.int64) * 8
        frame_bits = stats_oracle._wire_frames(found)[order] * 8
        windows = [r["window_ns"] for r in recorded["rates"]]
        recorded["rates"] = [
            stats_oracle._rates(found.ts_ns[order], bits, frame_bits, w) for w in windows
        ]
        expected.write_text(json.dumps(recorded, indent=2) + "\n")


FRAME_KEYS = ("bytes_frame", "first_time", "last_time", "mean_frame_gbps")
RATE_FRAME_KEYS = ("peak_frame_gbps", "tail_frame_gbps")


def _with(recorded: dict, oracle: dict, added: tuple[str, ...]) -> dict:
    """`recorded` with the `added` keys of `oracle`, every key where the oracle (and so the
    code, which the oracle test holds to the same keys) puts it."""
    return {
        k: oracle[k] if k in added else recorded[k] for k in oracle if k in recorded or k in added
    }


def frames_from_oracle() -> None:
    """Add the frame-byte keys and ISO times to every expected file, from the numpy oracle."""
    from tests.helpers import stats_oracle
    from tests.net.test_trace_stats_golden import source

    from pcieperf.net.ethernet import Ethernet

    for expected in sorted(EXPECTED.glob("*.json")):
        path, eth = source(expected)
        recorded = json.loads(expected.read_text())
        windows = tuple(r["window_ns"] for r in recorded["rates"])
        oracle = stats_oracle.stats(read(path), Ethernet(int(eth)), windows)
        result = _with(recorded, oracle, FRAME_KEYS)
        result["rates"] = [
            _with(r, o, RATE_FRAME_KEYS)
            for r, o in zip(recorded["rates"], oracle["rates"], strict=True)
        ]
        result["interfaces"] = [
            _with(r, o, FRAME_KEYS)
            for r, o in zip(recorded["interfaces"], oracle["interfaces"], strict=True)
        ]
        expected.write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs-only", action="store_true", help="do not record outputs")
    parser.add_argument(
        "--rates-from-oracle", action="store_true", help="rewrite only the rates (issue 27)"
    )
    parser.add_argument(
        "--frames-from-oracle",
        action="store_true",
        help="add the frame-byte keys and ISO times (issue 27)",
    )
    args = parser.parse_args()
    if args.rates_from_oracle:
        rates_from_oracle()
        return
    if args.frames_from_oracle:
        frames_from_oracle()
        return
    inputs = write_inputs()
    if args.inputs_only:
        return
    EXPECTED.mkdir(exist_ok=True)
    for path in inputs:
        for eth in ETH_RATES:
            record(path, eth, f"inputs/{path.name}")
    for path in sorted(CAPTURES.glob("**/*.pcap*")):
        record(path, "40", f"shared/{path.relative_to(CAPTURES)}")


if __name__ == "__main__":
    main()

"""Counter import speed (issue 6): rows per second parsed and stored, and explain's time.

Writes one hour of `pcm-iio 1 -csv` from a two-socket Sapphire Rapids (12 IIO stacks x 8 parts
per socket: 192 rows and a repeated header per second, IOTLB columns on Part0 rows), then
times parsing, the DuckDB import and `explain` of one stack.
Run: python3 benchmarks/bench_counters.py [--json-out F.json]
"""

import tempfile
import time
from pathlib import Path

from _json_out import write_figures
from pcieperf.dpdk import forwarding
from pcieperf.measure import counters, explain
from pcieperf.measure.store import Store
from pcieperf.pcie.link import Link

SECONDS, SOCKETS, STACKS, PARTS = 3600, 2, 12, 8
HEADER = (
    "Date,Time,Socket,Name,Part,IB write,IB read,OB read,OB write,IOTLB Lookup,IOTLB Miss,"
    "Ctxt Cache Hit,256T Cache Hit,512G Cache Hit,1G Cache Hit,2M Cache Hit,IOMMU Mem Access"
)


def write_file(path: Path) -> int:
    """The hour of samples; returns the data rows written."""
    rows = 0
    with path.open("w") as fh:
        for t in range(SECONDS):
            stamp = f"2026-11-22,{10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000"
            fh.write(HEADER + "\n")
            for socket in range(SOCKETS):
                for stack in range(STACKS):
                    for part in range(PARTS):
                        name = f"IIO Stack {stack} - PCIe{part % 4}"
                        iommu = ",40000000,1200,1,2,3,4,5,6" if part == 0 else ""
                        fh.write(
                            f"{stamp},Socket{socket},{name},Part{part},"
                            f"{964_999_936 + t},{1_119_999_872 + t},0,2560000{iommu}\n"
                        )
                        rows += 1
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pcm-iio.csv"
        rows = write_file(path)
        size = path.stat().st_size
        start = time.perf_counter()
        samples = counters.parse(path, "pcm-iio")
        parse_s = time.perf_counter() - start
        start = time.perf_counter()
        with Store(Path(tmp) / "s.duckdb") as store:
            imported, _ = store.import_counters(
                path, lambda sink: counters.parse(path, "pcm-iio", sink=sink)
            )
            store_s = time.perf_counter() - start
            cfg = forwarding.ForwardingConfig(pkt_bytes=64)
            start = time.perf_counter()
            stack = store.stack_counters(imported, (0, "IIO Stack 3 - PCIe0"))
            explain.explain(stack, cfg, Link(), 10e6)
            explain_s = time.perf_counter() - start
    print(
        f"file: {SECONDS} s of samples, {rows:,} rows, {len(samples):,} values, {size / 1e6:.1f} MB"
    )
    rate = f"{rows / parse_s / 1e3:.0f} k rows/s, {size / parse_s / 1e6:.1f} MB/s"
    print(f"parse: {parse_s:.2f} s ({rate})")
    print(f"store: {store_s:.2f} s ({len(samples) / store_s / 1e6:.2f} M values/s)")
    print(f"explain one stack: {explain_s:.2f} s")
    write_figures(
        {"parse_rows_per_s": rows / parse_s, "store_values_per_s": len(samples) / store_s}
        | {"explain_s": explain_s}
    )


if __name__ == "__main__":
    main()

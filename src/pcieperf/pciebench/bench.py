"""pcie-bench as data: its tests, parameters and result files, and the system-name convention.

The meaning of every test and cache state follows the NFP implementation of pcie-bench
(Neugebauer et al., SIGCOMM 2018, §4-5; docs/bench.md has the long form):

- A *transaction* is one DMA descriptor of SZ bytes handed to the device's DMA engine (DMA
  tests), or one 4..64 B access through the device's PCIe command path (CMD tests).
- Addresses are drawn from a window of WinSZ bytes split into units of roundup64(SZ + HO);
  `Seq` walks the units in order, `Rand` draws them at random. A transfer never crosses 4 KiB.
- `BW_*` tests keep many transactions in flight (95 worker threads on the NFP) and report the
  rate; `LAT_*` tests issue one transaction at a time and report its latency distribution.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import numpy as np
from numpy.typing import NDArray

from pcieperf._config import read_bounded
from pcieperf.errors import UsageError, unreadable, warn

Kind = Literal["bw", "lat", "cdf"]


@dataclass(frozen=True)
class BenchTest:
    """One pcie-bench test."""

    name: str
    kind: Kind
    path: Literal["dma", "cmd"]
    description: str


TESTS: dict[str, BenchTest] = {
    t.name: t
    for t in (
        BenchTest(
            "BW_DMA_RD",
            "bw",
            "dma",
            "DMA reads from host memory (device <- host), "
            "many in flight; rate of SZ-byte transactions",
        ),
        BenchTest(
            "BW_DMA_WR", "bw", "dma", "DMA writes to host memory (device -> host), many in flight"
        ),
        BenchTest(
            "BW_DMA_RW",
            "bw",
            "dma",
            "odd transactions read, even ones write; the "
            "reported bandwidth is that of one direction",
        ),
        BenchTest(
            "LAT_DMA_RD",
            "lat",
            "dma",
            "one DMA read at a time; latency from enqueue to completion, DMA engine included",
        ),
        BenchTest(
            "LAT_DMA_WRRD",
            "lat",
            "dma",
            "a DMA write, then a read of the same address once the write completed",
        ),
        BenchTest("LAT_CMD_RD", "lat", "cmd", "one 4..64 B read through the command path"),
        BenchTest(
            "LAT_CMD_WRRD", "lat", "cmd", "a command-path write and read issued back to back"
        ),
    )
}
TEST_ALIASES = {
    "BW_RD": "BW_DMA_RD",
    "BW_WR": "BW_DMA_WR",
    "BW_RW": "BW_DMA_RW",
    "LAT_RD": "LAT_DMA_RD",
    "LAT_WRRD": "LAT_DMA_WRRD",
}

CACHE_STATES = {
    "HWarm": "host thrashes its caches, then writes the window 4 times: lines sit in the LLC",
    "DWarm": "the device writes the window sequentially (2 passes) first; with DDIO the lines "
    "are allocated in the LLC",
    "Cold": "host thrashes its caches only; the window is not touched",
    "DThrash": "as Cold, then the device writes 64 B lines at random over the 64 MiB buffer",
}
PATTERNS = {"Seq": "units of the window in order", "Rand": "units drawn at random"}
UNSTEADY_RATIO = 10.0  # p99.9 / median latency above this: the host stalls (calibrate.steadiness)


def canonical_test(name: str) -> str:
    """Map a test name or its short alias (BW_RD) to the pcie-bench name (BW_DMA_RD)."""
    upper = name.strip().upper()
    upper = TEST_ALIASES.get(upper, upper)
    if upper not in TESTS:
        raise UsageError(
            f"unknown test {name!r}; use one of {', '.join(TESTS)} (or {', '.join(TEST_ALIASES)})"
        )
    return upper


# ---------------------------------------------------------------------------------------------
# Result files


# The columns that identify a measurement (a point), shared by bandwidth and latency files.
KEY_COLUMNS = ("Test", "PAT", "Cache", "HO", "DO", "WinSZ", "SZ")
BW_COLUMNS = (*KEY_COLUMNS, "Time(cyc)", "Time", "Bytes", "Trans", "BW (GB/s)", "Trans/s")
LAT_COLUMNS = (
    *KEY_COLUMNS,
    *("TAvg", "Avg", "Med", "Min", "Max", "95%", "99.9%"),
    *("TAvg(ns)", "Avg(ns)", "Med(ns)", "Min(ns)", "Max(ns)", "95%(ns)", "99.9%(ns)"),
    "#outliers",
    "#samples",
)
CDF_COLUMNS = ("cycles", "ns", "cdf")
COLUMNS: dict[Kind, tuple[str, ...]] = {"bw": BW_COLUMNS, "lat": LAT_COLUMNS, "cdf": CDF_COLUMNS}
TEXT_COLUMNS: dict[str, Collection[str]] = {"Test": TESTS, "PAT": PATTERNS, "Cache": CACHE_STATES}
"""The text columns of a result CSV, each with the values it may hold."""

# Store column names (snake case, units in names) for every CSV column.
STORE_NAMES = {
    "Test": "test",
    "PAT": "pattern",
    "Cache": "cache",
    "HO": "host_offset",
    "DO": "dev_offset",
    "WinSZ": "window_bytes",
    "SZ": "size_bytes",
    "Time(cyc)": "time_cyc",
    "Time": "time_ns",
    "Bytes": "bytes",
    "Trans": "transactions",
    "BW (GB/s)": "bw_gbps",
    "Trans/s": "trans_per_s",
    "TAvg": "tavg_cyc",
    "Avg": "avg_cyc",
    "Med": "med_cyc",
    "Min": "min_cyc",
    "Max": "max_cyc",
    "95%": "p95_cyc",
    "99.9%": "p999_cyc",
    "TAvg(ns)": "tavg_ns",
    "Avg(ns)": "avg_ns",
    "Med(ns)": "med_ns",
    "Min(ns)": "min_ns",
    "Max(ns)": "max_ns",
    "95%(ns)": "p95_ns",
    "99.9%(ns)": "p999_ns",
    "#outliers": "outliers",
    "#samples": "samples",
    "cycles": "cycles",
    "ns": "ns",
    "cdf": "cdf",
}
INTEGER_COLUMNS = {
    "HO",
    "DO",
    "WinSZ",
    "SZ",
    "Time(cyc)",
    "Bytes",
    "Trans",
    "#outliers",
    "#samples",
}


def file_kind(name: str) -> Kind | None:
    """What a pcie-bench result file holds, from its name (None: not a result file)."""
    if not name.endswith(".csv"):
        return None
    if name.endswith("_cdf.csv"):
        return "cdf"
    if name.startswith("bw_"):
        return "bw"
    if name.startswith("lat_"):
        return "lat"
    return None


@dataclass(frozen=True)
class ResultTable:
    """One parsed result file: store column name -> array, plus CDF section numbers."""

    file: str
    kind: Kind
    columns: dict[str, NDArray]

    @property
    def rows(self) -> int:
        """Number of data rows."""
        return len(next(iter(self.columns.values())))


def read_result_csv(path: Path) -> ResultTable:
    """Parse a pcie-bench CSV strictly: exact header, complete rows, valid values.

    Errors name the file and line: an unknown column, a truncated row, a bad number.
    """
    kind = file_kind(path.name)
    if kind is None:
        raise UsageError(f"{path}: not a pcie-bench result file (bw_*.csv, lat_*.csv)")
    expected = COLUMNS[kind]
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(_checked_rows(path, csv.reader(fh), expected))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not a text CSV file ({exc.reason})") from None
    except OSError as exc:
        raise unreadable(path, exc) from None
    if not rows:
        raise UsageError(f"{path} line 2: no data rows")
    columns: dict[str, NDArray] = {}
    for index, name in enumerate(expected):
        values = [r[index] for r in rows]
        columns[STORE_NAMES[name]] = _column(path, name, values)
    if kind == "cdf":
        # A new section (one test/size/window/cache combination) starts where cdf == 0.
        columns["section"] = np.cumsum(columns["cdf"] == 0) - 1
    return ResultTable(path.name, kind, columns)


def _checked_rows(
    path: Path, reader: Iterator[list[str]], expected: tuple[str, ...]
) -> Iterator[list[str]]:
    header = next(reader, None)
    if header is None:
        raise UsageError(f"{path} line 1: empty file, expected the header {','.join(expected)}")
    header = [h.strip() for h in header]
    unknown = [h for h in header if h not in expected]
    if unknown:
        raise UsageError(
            f"{path} line 1: unknown column {unknown[0]!r}; expected {','.join(expected)}"
        )
    if tuple(header) != expected:
        missing = [h for h in expected if h not in header]
        raise UsageError(
            f"{path} line 1: columns differ from {','.join(expected)}"
            + (f" (missing {missing[0]!r})" if missing else " (order)")
        )
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(expected):
            raise UsageError(
                f"{path} line {line}: {len(row)} fields, expected {len(expected)} "
                "(truncated or malformed row)"
            )
        yield row


def _column(path: Path, name: str, values: list[str]) -> NDArray:
    if name in TEXT_COLUMNS:
        allowed = TEXT_COLUMNS[name]
        for line, value in enumerate(values, start=2):
            if value not in allowed:
                raise UsageError(
                    f"{path} line {line}: {name} {value!r} is not one of {', '.join(allowed)}"
                )
        return np.array(values)
    try:
        numbers = np.array(values, dtype=np.float64)
    except ValueError:
        bad = next(i for i, v in enumerate(values) if not _is_number(v))
        raise UsageError(f"{path} line {bad + 2}: {name} {values[bad]!r} is not a number") from None
    if not np.all(np.isfinite(numbers)):
        bad = int(np.flatnonzero(~np.isfinite(numbers))[0])
        raise UsageError(f"{path} line {bad + 2}: {name} {values[bad]!r} is not finite")
    if name not in INTEGER_COLUMNS:
        return numbers
    fractional = numbers != np.floor(numbers)
    if np.any(fractional):
        bad = int(np.flatnonzero(fractional)[0])
        raise UsageError(f"{path} line {bad + 2}: {name} {values[bad]!r} is not a whole number")
    return numbers.astype(np.int64)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# System names: <card>_<arch>-<cpu>[-_]<machine>[-sD-sM-sC][-iommu[-nosp]]


IommuMode = Literal["off", "on", "nosp"]
IOMMU_MODES: tuple[str, ...] = get_args(IommuMode)
SMALL_PAGE_BYTES = 4096
SUPERPAGE_BYTES = 2 << 20  # Intel VT-d 2 MiB second-level pages: `iommu` systems use them


# The bandwidth runs of pcie-bench's NFP suite (docs/bench.md, "What the suite runs"): which
# rows each result file holds. These are the benchmark's own parameters, not measurements.
SIZE_SWEEP_BYTES = (
    *(16, 32, 63, 64, 65, 127, 128, 129, 192, 255, 256, 257, 320, 384, 511, 512, 513, 576),
    *(640, 704, 767, 768, 769, 832, 896, 960, 1023, 1024, 1025, 1279, 1280, 1281, 1535, 1536),
    *(1537, 1791, 1792, 1793, 2047, 2048),
)
SWEEP_WINDOW_BYTES = (
    *(4 << 10, 16 << 10, 256 << 10, 512 << 10, 1 << 20, 3 << 19, 2 << 20, 3 << 20, 4 << 20),
    *(8 << 20, 16 << 20, 32 << 20, 64 << 20),
)
WINDOW_SWEEP_SIZES = (64, 128, 256, 512)
OFFSET_SWEEP_SIZES = (64, 128, 256, 407, 416, 1024, 2048)
OFFSET_SWEEP_OFFSETS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 20, 25, 32, 41, 48, 63)
SMALL_WINDOW_BYTES = 8 << 10
BW_TRANSACTIONS = 8 << 20  # per row; BW_DMA_RW rows count one direction: half of them


@dataclass(frozen=True)
class Point:
    """One measurement of a pcie-bench test: the key columns of a result-file row."""

    test: str
    pattern: str
    cache: str
    host_offset: int
    dev_offset: int
    window: int
    size: int

    @property
    def transactions(self) -> int:
        """Transactions the benchmark counts for this row (one direction for BW_DMA_RW)."""
        return BW_TRANSACTIONS // 2 if self.test == "BW_DMA_RW" else BW_TRANSACTIONS


def bandwidth_plan() -> dict[str, list[Point]]:
    """Every bandwidth result file of the suite with its rows, in the benchmark's order."""
    plan = {
        "bw_dma_sz_sweep.csv": [
            Point(test, "Rand", "HWarm", 0, 0, SMALL_WINDOW_BYTES, size)
            for test in ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW")
            for size in SIZE_SWEEP_BYTES
        ]
    }
    for op, test in (("rd", "BW_DMA_RD"), ("wr", "BW_DMA_WR")):
        for size in WINDOW_SWEEP_SIZES:
            plan[f"bw_dma_win_sweep_{op}_rnd_{size}.csv"] = [
                Point(test, "Rand", cache, 0, 0, window, size)
                for cache in sorted(CACHE_STATES)
                for window in SWEEP_WINDOW_BYTES
            ]
        for suffix, cache in (("", "HWarm"), ("_cold", "Cold")):
            plan[f"bw_dma_off_{op}{suffix}.csv"] = [
                Point(test, "Seq", cache, ho, do, SMALL_WINDOW_BYTES, size)
                for size in OFFSET_SWEEP_SIZES
                for ho, do in _offset_pairs()
            ]
    return plan


def _offset_pairs() -> list[tuple[int, int]]:
    """Host-offset sweep with the device offset at 0, then the device-offset sweep."""
    return [(o, 0) for o in OFFSET_SWEEP_OFFSETS] + [(0, o) for o in OFFSET_SWEEP_OFFSETS]


def iotlb_page_bytes(iommu: str) -> int:
    """Page size the IOTLB caches translations for in an IOMMU mode (`iommu` = super pages)."""
    return SUPERPAGE_BYTES if iommu == "on" else SMALL_PAGE_BYTES


_SYSTEM = re.compile(
    r"^(?P<card>[^_]+)_(?P<arch>[a-z]+)-(?P<cpu>[A-Za-z]+-[A-Za-z]?\d+-\d+[A-Za-z0-9]*)"
    r"[-_](?P<machine>.+?)"
    r"(?:[-_]s(?P<dev>\d)-s(?P<mem>\d)-s(?P<cpu_node>\d))?"
    r"(?:[-_](?P<iommu>iommu(?:-nosp)?))?$"
)


@dataclass(frozen=True)
class SystemInfo:
    """What a pcie-bench result directory's name says about the host."""

    name: str
    card: str
    arch: str
    cpu: str
    machine: str
    numa_device: int
    numa_memory: int
    numa_cpu: int
    iommu: IommuMode


def parse_system_name(name: str) -> SystemInfo:
    """Parse a result directory name, e.g. nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0."""
    match = _SYSTEM.match(name)
    if not match:
        raise UsageError(
            f"cannot parse system name {name!r}; expected "
            "<card>_<arch>-<cpu>_<machine>[-sD-sM-sC][-iommu[-nosp]], e.g. "
            "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630-iommu"
        )
    g = match.groupdict()
    modes: dict[str | None, IommuMode] = {"iommu": "on", "iommu-nosp": "nosp", None: "off"}
    iommu = modes[g["iommu"]]
    return SystemInfo(
        name=name,
        card=g["card"],
        arch=g["arch"],
        cpu=g["cpu"],
        machine=g["machine"],
        numa_device=int(g["dev"] or 0),
        numa_memory=int(g["mem"] or 0),
        numa_cpu=int(g["cpu_node"] or 0),
        iommu=iommu,
    )


def system_info(name: str) -> SystemInfo:
    """What a result directory's name says: pcie-bench's naming parsed, or, for any other
    name, nothing (card clock default, NUMA local, IOMMU off unless its files say otherwise),
    with a warning: the files, not the folder name, hold the measurements."""
    if _SYSTEM.match(name):
        return parse_system_name(name)
    warn(
        f"{name!r} is not named as pcie-bench names systems: assuming a local NUMA placement "
        "and the default card clock; its IOMMU mode comes from its files"
    )
    return SystemInfo(name, "", "", "", name, 0, 0, 0, "off")


# --- result directories ----------------------------------------------------------------------

EXPECTED_FILES = (
    "bw_dma_sz_sweep.csv",
    *(f"bw_dma_win_sweep_{d}_rnd_{s}.csv" for d in ("rd", "wr") for s in (64, 128, 256, 512)),
    *(f"bw_dma_off_{d}{c}.csv" for d in ("rd", "wr") for c in ("", "_cold")),
    "lat_dma_sizes.csv",
    "lat_dma_sizes_byte_inc.csv",
    "lat_dma_sweep_rd_rnd_64.csv",
    "lat_dma_sweep_wrrd_rnd_64.csv",
    "lat_dma_off_rd.csv",
    "lat_dma_off_wrrd.csv",
    "lat_dma_details.csv",
    "lat_dma_details_cdf.csv",
)


@dataclass
class ParsedDir:
    """Everything one result directory holds, parsed and checked."""

    info: SystemInfo
    source: Path
    tables: list[ResultTable] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """Expected result files the directory lacks."""
        present = {t.file for t in self.tables}
        return [f for f in EXPECTED_FILES if f not in present]


def parse_result_dir(path: Path) -> ParsedDir:
    """Parse a pcie-bench result directory (name, CSVs, sys-*.txt) without touching a store."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory")
    parsed = ParsedDir(system_info(path.name), path)
    try:
        files = sorted(path.iterdir())
    except OSError as exc:
        raise UsageError(f"cannot read folder {path}: {exc.strerror}") from None
    for file in files:
        if file_kind(file.name):
            parsed.tables.append(read_result_csv(file))
        elif file.name.startswith("sys-") and file.suffix == ".txt":
            fact = read_bounded(file).decode(errors="replace")
            parsed.facts[file.stem.removeprefix("sys-")] = fact
    if not parsed.tables:
        raise UsageError(f"{path}: no pcie-bench result files (bw_*.csv, lat_*.csv) found")
    return parsed

"""A host's DMA latencies as a device sees them (`HostLatency`), from pcie-bench latency files
(mean and percentiles from their CDFs), a `bench calibrate` file, or given values; the
statistics and files they come from. `latency` prices one packet's loopback on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf._cache import cached
from pcieperf._config import read_bounded
from pcieperf._numpy import np
from pcieperf.errors import UsageError, param, require_choice
from pcieperf.pcie.link import Link
from pcieperf.pciebench.calibration_file import load_calibration
from pcieperf.pciebench.device import LATENCY_TEST_BYTES, outside_host_ns

if TYPE_CHECKING:
    from numpy.typing import NDArray

# The percentiles pcie-bench's latency files report (Min, Med, 95%, 99.9%); the CDFs give them
# too (the minimum is their first value: the fastest of the 16 Mi samples).
QUANTILES: dict[str, float] = {"min": 0.0, "p50": 0.5, "p95": 0.95, "p99.9": 0.999}
DETAILS_COLUMNS = {"min": "min_ns", "p50": "med_ns", "p95": "p95_ns", "p99.9": "p999_ns"}
STATS: tuple[str, ...] = ("mean", *QUANTILES)
# What a read holds its tag for under load: the host's floor, its fastest sample. The latency
# test issues one read at a time to an otherwise idle host; a busy host pays none of what an
# idle one adds (power-state exits: the Fujitsu E3's bulk sits ~700 ns above its floor), and
# pcie-bench's bandwidth runs match tags over it (docs/latency.md, "The check").
LOADED_STAT = "min"
REFERENCE_WINDOW = 8192  # ... over an 8 KiB window (pcie-bench-methodology.md §2)
DETAILS_FILE = "lat_dma_details.csv"
CDF_FILE = "lat_dma_details_cdf.csv"
CACHE_STATES = ("HWarm", "Cold")  # the states the details files hold
IDLE_DRIVER_LINE = "intel_idle: MWAIT substates"  # Linux drivers/idle/intel_idle.c boot line


@dataclass(frozen=True)
class HostLatency:
    """A host's DMA latencies as a device sees them, per statistic (`STATS`), for 64 B.

    `read_ns`: a DMA read's round trip, request issued to data back (pcie-bench LAT_DMA_RD).
    `write_ns`: what a posted write costs before later traffic sees it: LAT_DMA_WRRD minus
    LAT_DMA_RD (a read may not pass a posted write, PCIe Base 3.0 §2.4.1), or half the read
    round trip where no write data exists (`write_assumed`: the paper's symmetric latency).
    """

    source: str
    read_ns: dict[str, float]
    write_ns: dict[str, float]
    write_assumed: bool = False
    notes: tuple[str, ...] = ()  # what the user should know about these numbers


def host_from_values(read_ns: float, write_ns: float | None = None) -> HostLatency:
    """A host given by its 64 B read round trip (and posted-write latency), the same at every
    percentile; without `write_ns`, half the read (the paper's symmetry assumption)."""
    for name, value in ((param("read_ns"), read_ns), (param("write_ns"), write_ns)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UsageError(f"{name} {value!r} is not allowed; give a latency >= 0 ns")
    write = read_ns / 2 if write_ns is None else write_ns
    return HostLatency(
        source=f"given: read {read_ns:g} ns, write {write:g} ns",
        read_ns=dict.fromkeys(STATS, float(read_ns)),
        write_ns=dict.fromkeys(STATS, float(write)),
        write_assumed=write_ns is None,
    )


def host_from_dir(path: Path, cache: str = "HWarm") -> HostLatency:
    """A pcie-bench result directory's 64 B random-read latencies (8 KiB window, `cache`):
    mean from `lat_dma_details.csv`, percentiles from the CDFs in `lat_dma_details_cdf.csv`."""
    from pcieperf.pciebench.bench import read_result_csv  # numpy: not for an assumed host

    require_choice("cache state", cache, CACHE_STATES)
    if not path.is_dir():
        raise UsageError(f"{param('host')} {path} is not a directory")
    if not (path / DETAILS_FILE).is_file():
        raise UsageError(
            f"{param('host')} {path}: no pcie-bench latency files ({DETAILS_FILE} missing); give "
            f"a pcie-bench result directory, {param('calibration')} FILE or {param('read_ns')}"
        )
    details = read_result_csv(path / DETAILS_FILE).columns
    has_cdf = (path / CDF_FILE).is_file()
    cdf = read_result_csv(path / CDF_FILE).columns if has_cdf else None
    read = _details_stats(path, details, cdf, "LAT_DMA_RD", cache)
    wrrd = _details_stats(path, details, cdf, "LAT_DMA_WRRD", cache)
    files = f"{DETAILS_FILE} and {CDF_FILE}" if has_cdf else DETAILS_FILE
    return HostLatency(
        source=f"pcie-bench {path.name}: {files}, 64 B, 8 KiB, {cache}",
        read_ns=read,
        write_ns={s: max(wrrd[s] - read[s], 0.0) for s in STATS},
        notes=_unsteady_notes(path, read),
    )


def _unsteady_notes(path: Path, read: dict[str, float]) -> tuple[str, ...]:
    """A note when the host's read latency stalls (p99.9 over UNSTEADY_RATIO x the median,
    the rule `calibrate.steadiness` applies): its mean, median and tails then describe a host
    that idles between the test's one-at-a-time reads, not a loaded one, and its measured
    64 B read rates scatter between tags over the median and over the floor (docs/latency.md).
    """
    from pcieperf.pciebench.bench import UNSTEADY_RATIO  # with read_result_csv, as it is used

    ratio = read["p99.9"] / read["p50"] if read.get("p50") else 0.0
    if ratio <= UNSTEADY_RATIO:
        return ()
    dmesg = path / "sys-dmesg.txt"
    idle = dmesg.is_file() and IDLE_DRIVER_LINE in read_bounded(dmesg).decode(errors="replace")
    why = (
        "; sys-dmesg.txt shows the intel_idle driver, so deep C-states may wake the host for "
        "each DMA of an idle latency test but not under load"
        if idle
        else ""
    )
    times = f"{read['p50'] / read['min']:.1f}x" if read["min"] > 0 else "above"
    return (
        f"{path.name}: 64 B read latency p99.9 is {ratio:.0f}x its median (host stalls){why}; "
        f"its median ({read['p50']:.0f} ns) is {times} its floor ({read['min']:.0f} ns): a "
        "loaded host's latency lies between them and tag-bound rates take the floor",
    )


def _details_stats(
    path: Path, details: dict[str, NDArray], cdf: dict[str, NDArray] | None, test: str, cache: str
) -> dict[str, float]:
    """Mean and percentiles of one test's row: percentiles from its CDF section (the sections
    follow the rows) where the CDF file exists, else the row's own columns."""
    row = np.flatnonzero(
        (details["test"] == test)
        & (details["pattern"] == "Rand")
        & (details["cache"] == cache)
        & (details["window_bytes"] == REFERENCE_WINDOW)
        & (details["size_bytes"] == LATENCY_TEST_BYTES)
    )
    if row.size != 1:
        raise UsageError(
            f"{path / DETAILS_FILE}: no single {test} row (Rand, {cache}, 8 KiB, 64 B)"
        )
    stats = {"mean": float(details["avg_ns"][row[0]])}
    if cdf is None:
        return stats | {s: float(details[c][row[0]]) for s, c in DETAILS_COLUMNS.items()}
    if int(cdf["section"].max()) + 1 != details["test"].size:
        raise UsageError(f"{path / CDF_FILE}: not one CDF section per row of {DETAILS_FILE}")
    keep = cdf["section"] == row[0]
    ns, fraction = cdf["ns"][keep], cdf["cdf"][keep]
    for name, q in QUANTILES.items():
        at = min(int(np.searchsorted(fraction, q, side="left")), ns.size - 1)
        stats[name] = float(ns[at])
    return stats


def host_from_calibration(path: Path) -> HostLatency:
    """The reference host of a `bench calibrate` file: its LLC-warm latency with the device,
    benchmark and link time the calibration removed put back (what a device sees), one value
    for every statistic; posted writes at half of it (the paper's symmetry assumption)."""
    cal = load_calibration(path)
    if cal.reference is None:
        raise UsageError(
            f"{param('calibration')} {path}: no [reference_host] table to take latency from"
        )
    link = Link.of(cal.reference)
    read = cal.reference.llc_latency_ns + outside_host_ns(cal.device, link)
    return replace(
        host_from_values(read), source=f"calibration {path.name}: reference host, LLC warm"
    )


@cached(1)
def assumed_read_ns() -> float:
    """The assumed host's read round trip on a loaded host (`LOADED_STAT`): what a device's read
    request holds its tag for where no host is given (`nic`'s tag bound), read once."""
    return assumed_host().read_ns[LOADED_STAT]


def assumed_host() -> HostLatency:
    """The host every command assumes where none is given: the shipped calibration's reference
    host, named as assumed (no measured host is exactly it; `--host DIR` gives a measured one)."""
    from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION

    host = host_from_calibration(DEFAULT_CALIBRATION)
    return replace(
        host,
        source=f"assumed ({host.source}; --host DIR for a measured one)",
    )

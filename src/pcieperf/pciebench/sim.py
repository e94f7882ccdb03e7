"""Simulate pcie-bench tests: host and device profiles -> the Rust simulator -> bandwidth/latency.

A *device profile* (`pciebench.device`) describes the DMA engine (outstanding tags,
per-transaction issue cost, the fixed latency of its descriptor handling); a *host profile* the
PCIe link settings, memory and LLC latencies, the warm capacity of the LLC and of DDIO, the root
complex's write path and the IOMMU. Both are TOML files with `name`, `source` and `notes`, and
every value in them is either a spec fact or the output of a documented calibration run
(`pcieperf bench calibrate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf._config import load_toml
from pcieperf._native import core
from pcieperf.errors import (
    UsageError,
    require_choice,
    require_positive,
)
from pcieperf.pcie.alignment import transfer_shape
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import blocks_touched
from pcieperf.pciebench.bench import (
    CACHE_STATES,
    IOMMU_MODES,
    TESTS,
    Point,
    canonical_test,
    iotlb_page_bytes,
)
from pcieperf.pciebench.device import DeviceProfile, from_table


@dataclass(frozen=True)
class HostProfile:
    """The host: link settings, memory hierarchy as a device sees it, write path and IOMMU.

    The root complex retires a posted write in `write_line_ns` per 64 B line it touches plus
    `partial_line_ns` per line it only partly covers (a read-modify-write of that line); a
    read takes `read_partial_line_ns` longer to issue per line it only partly covers. An
    IOTLB miss takes `walk_ns` to translate and keeps one of `walkers` busy for `walk_busy_ns`
    (a walker may accept the next miss before the previous walk returns).
    """

    name: str
    source: str
    mps: int
    mrrs: int
    completion_policy: str
    addr64: bool
    llc_latency_ns: float
    ddio_latency_ns: float
    dram_latency_ns: float
    remote_extra_ns: float
    llc_bytes: int
    ddio_bytes: int
    write_line_ns: float
    partial_line_ns: float
    posted_credits: int
    iotlb_entries: int
    walk_ns: float
    walk_busy_ns: float
    walkers: int
    iommu: str = "off"
    read_partial_line_ns: float = 0.0
    numa_device: int = 0
    numa_memory: int = 0
    numa_cpu: int = 0
    gen: int = 3
    lanes: int = 8
    rcb: int = 64
    notes: str = ""

    def __post_init__(self) -> None:
        require_choice("IOMMU mode", self.iommu, IOMMU_MODES)

    @property
    def link(self) -> Link:
        """The PCIe link these settings describe."""
        return Link.of(self)


def load_host(path: Path) -> HostProfile:
    """A host profile from TOML."""
    return from_table(HostProfile, load_toml(path), str(path))


CACHE_LINE_BYTES = 64  # Intel Xeon (and the NFP's CTM) cache-line size


def cache_lines(offset: ArrayLike, size: ArrayLike) -> tuple[NDArray, NDArray]:
    """64 B lines a transfer at `offset` touches, and how many of them it covers only in part
    (element-wise for arrays)."""
    start = np.asarray(offset, dtype=np.int64)
    end = start + np.asarray(size, dtype=np.int64)
    lines = blocks_touched(start, end, CACHE_LINE_BYTES)
    ragged_ends = (start % CACHE_LINE_BYTES != 0).astype(np.int64) + (end % CACHE_LINE_BYTES != 0)
    return lines, np.minimum(ragged_ends, lines)


def _warm(point: Point, host: HostProfile) -> tuple[int, float]:
    """Bytes of the window that are warm in the LLC, and the latency of a warm line."""
    remote_cpu = host.numa_cpu != host.numa_device
    if point.cache == "HWarm":
        # The helper ran on the CPU socket: lines sit in that socket's LLC.
        return host.llc_bytes, host.llc_latency_ns + (host.remote_extra_ns if remote_cpu else 0)
    if point.cache == "DWarm":
        # Device writes allocate into the LLC through DDIO, within its share of the ways.
        return host.ddio_bytes, host.ddio_latency_ns
    return 0, 0.0


def sim_params(
    point: Point,
    host: HostProfile,
    device: DeviceProfile,
    transactions: int,
    seed: int = 1,
    record_latencies: bool = False,
) -> dict[str, Any]:
    """The Rust simulator's parameters for one point."""
    test = TESTS[canonical_test(point.test)]
    require_choice("cache state", point.cache, CACHE_STATES)
    link = host.link
    shape = transfer_shape(
        link, point.size, point.host_offset, point.dev_offset, point.window, device.burst_bytes
    )
    warm_bytes, hit_latency = _warm(point, host)
    lines, partial = cache_lines(point.host_offset, point.size)
    issue_read, issue_write, datapath = device.times(shape)
    remote_memory = host.numa_memory != host.numa_device
    rate = link.tlp_bytes_per_s / 1e9
    ops = {
        "BW_DMA_RD": "read",
        "BW_DMA_WR": "write",
        "BW_DMA_RW": "alternate",
        "LAT_DMA_RD": "read",
        "LAT_DMA_WRRD": "write_then_read",
    }.get(test.name)
    if ops is None:
        raise UsageError(f"the simulator models DMA tests only, not {test.name}")
    return {
        "transactions": transactions,
        "size": point.size,
        "host_offset": point.host_offset,
        "window": point.window,
        "pattern": "seq" if point.pattern == "Seq" else "rand",
        "ops": ops,
        "seed": seed,
        "tags": device.tags if test.kind == "bw" else 1,
        "issue_read_ns": float(issue_read + host.read_partial_line_ns * partial),
        "issue_write_ns": float(issue_write),
        "datapath_ns": float(datapath),
        "fixed_latency_ns": device.fixed_latency_ns,
        "read_up_bytes": float(shape.read_up_bytes),
        "read_down_bytes": float(shape.read_down_bytes),
        "write_up_bytes": float(shape.write_up_bytes),
        "up_bytes_per_ns": rate,
        "down_bytes_per_ns": rate,
        "warm_bytes": warm_bytes,
        "hit_latency_ns": hit_latency,
        "miss_latency_ns": host.dram_latency_ns + (host.remote_extra_ns if remote_memory else 0),
        "write_ns": host.write_line_ns * lines + host.partial_line_ns * partial,
        "posted_credits": host.posted_credits,
        "iotlb_entries": host.iotlb_entries if host.iommu != "off" else 0,
        "page_bytes": iotlb_page_bytes(host.iommu),
        "walk_ns": host.walk_ns,
        "walk_busy_ns": host.walk_busy_ns,
        "walkers": host.walkers,
        "record_latencies": record_latencies,
    }


@dataclass(frozen=True)
class PointResult:
    """Simulated outcome of one point: bandwidth for BW tests, latency quantiles for LAT."""

    point: Point
    bw_gbps: float
    trans_per_s: float
    latency_ns: dict[str, float]
    iotlb_misses: int


def simulate(
    point: Point,
    host: HostProfile,
    device: DeviceProfile,
    transactions: int = 200_000,
    seed: int = 1,
) -> PointResult:
    """Simulate one point of a pcie-bench test."""
    require_positive("transactions", transactions)
    latency_test = TESTS[canonical_test(point.test)].kind == "lat"
    params = sim_params(point, host, device, transactions, seed, record_latencies=latency_test)
    out = core().simulate(params)
    per_direction = 2 if params["ops"] == "alternate" else 1
    rate = out["transactions"] / per_direction / out["elapsed_ns"] * 1e9
    lat = np.asarray(out["latencies_ns"]) + device.latency_overhead_ns
    quantiles = (
        {}
        if lat.size == 0
        else {
            "avg_ns": float(lat.mean()),
            "med_ns": float(np.median(lat)),
            "min_ns": float(lat.min()),
            "max_ns": float(lat.max()),
            "p95_ns": float(np.quantile(lat, 0.95)),
            "p999_ns": float(np.quantile(lat, 0.999)),
        }
    )
    return PointResult(
        point, rate * point.size * 8 / 1e9, rate, quantiles, int(out["iotlb_misses"])
    )

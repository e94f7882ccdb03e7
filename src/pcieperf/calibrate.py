"""Calibration inputs a host gives away for free: its facts files and its latency sweeps.

`parse_host_facts` reads the link settings and LLC size from pcie-bench's `sys-*.txt` files;
`fit_latency` turns the single-transaction latency sweep (`lat_dma_sweep_rd_rnd_64`: 64 B random
reads over windows of 8 KiB..64 MiB in four cache states) into the host-side latencies and
capacities the simulator needs. Both are deterministic least-squares fits over small grids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pcieperf.bench import CACHE_STATES, iotlb_page_bytes
from pcieperf.errors import UsageError


@dataclass(frozen=True)
class HostFacts:
    """PCIe settings of the device's link and the CPU's LLC, as the host reported them."""

    mps: int
    mrrs: int
    rcb: int
    gen: int
    lanes: int
    llc_bytes: int
    addr64: bool


_GEN_OF_SPEED = {"2.5": 1, "5": 2, "8": 3, "16": 4, "32": 5, "64": 6}


def _device_block(lspci: str, vendor: str) -> str:
    """The lspci -vv block of the first device whose header names `vendor`."""
    blocks = re.split(r"\n(?=\S)", lspci)
    for block in blocks:
        if vendor in block.splitlines()[0]:
            return block
    raise UsageError(f"sys-lspci.txt: no device of vendor {vendor!r} found")


def parse_host_facts(facts: dict[str, str], vendor: str = "Netronome") -> HostFacts:
    """Link settings from `lspci` (the device's block), LLC size from `cpuinfo`, and whether
    DMA addresses lie above 4 GiB (64-bit TLP headers) from `dma-addrs`."""
    for name in ("lspci", "cpuinfo", "dma-addrs"):
        if name not in facts:
            raise UsageError(f"host facts lack sys-{name}.txt; it is needed to predict")
    block = _device_block(facts["lspci"], vendor)
    ctl = re.search(r"MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes", block)
    sta = re.search(r"LnkSta:\s+Speed ([\d.]+)GT/s, Width x(\d+)", block)
    rcb = re.search(r"RCB (\d+) bytes", block)
    cache = re.search(r"cache size\s*:\s*(\d+) KB", facts["cpuinfo"])
    if not (ctl and sta and cache):
        raise UsageError(
            "host facts: cannot find MaxPayload/MaxReadReq and LnkSta in "
            "sys-lspci.txt or 'cache size' in sys-cpuinfo.txt"
        )
    addrs = [int(tok, 16) for tok in re.findall(r"0x[0-9a-fA-F]+", facts["dma-addrs"])]
    return HostFacts(
        mps=int(ctl.group(1)),
        mrrs=int(ctl.group(2)),
        rcb=int(rcb.group(1)) if rcb else 64,
        gen=_GEN_OF_SPEED.get(sta.group(1), 3),
        lanes=int(sta.group(2)),
        llc_bytes=int(cache.group(1)) * 1024,
        addr64=bool(addrs) and max(addrs) > 0xFFFFFFFF,
    )


@dataclass(frozen=True)
class LatencyFit:
    """Host-side read latencies (device and link time removed) and warm capacities."""

    llc_latency_ns: float
    ddio_latency_ns: float
    dram_latency_ns: float
    llc_bytes: int
    ddio_bytes: int
    iotlb_entries: int
    walk_ns: float
    rms_error_ns: float


def miss_fraction(window: NDArray[np.float64], entries: int, page_bytes: int) -> NDArray:
    """IOTLB miss fraction of uniform random accesses over `window` with LRU of `entries`."""
    pages = np.maximum(window / page_bytes, 1.0)
    return np.clip(1.0 - entries / pages, 0.0, 1.0)


def warm_fraction(window: NDArray[np.float64], capacity: float) -> NDArray:
    """Share of a window's lines that are warm when `capacity` bytes of it are cached."""
    return np.clip(capacity / window, 0.0, 1.0)


_CAPACITY_GRID = np.unique(np.geomspace(64 << 10, 256 << 20, 121).astype(np.int64))
_ENTRY_GRID = np.array([8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 4096])


def fit_latency(
    window: NDArray, cache: NDArray, avg_ns: NDArray, overhead_ns: float, iommu: str
) -> LatencyFit:
    """Fit host latencies and capacities to a latency sweep (one row per window and state).

    `overhead_ns` is what the device and link add to every read (device latency plus TLP wire
    time); it is subtracted so the fitted values are the host's. Model, per state:
    avg(W) = cold + warm(W) * (hit - cold) + miss(W) * walk, with warm() and miss() above.
    """
    window = np.asarray(window, dtype=np.float64)
    host = np.asarray(avg_ns, dtype=np.float64) - overhead_ns
    states = {s: np.asarray(cache) == s for s in CACHE_STATES}
    if not states["Cold"].any() or not states["HWarm"].any():
        raise UsageError("the latency sweep needs Cold and HWarm rows to fit the host")
    page = iotlb_page_bytes(iommu)
    cold_w, cold = window[states["Cold"]], host[states["Cold"]]
    entries, walk, dram = (
        _fit_iommu(cold_w, cold, page) if iommu != "off" else (0, 0.0, float(np.median(cold)))
    )
    iommu_term = (miss_fraction(window, entries, page) * walk) if entries else np.zeros_like(window)
    fits = {}
    for state in ("HWarm", "DWarm"):
        keep = states[state] if states[state].any() else states["HWarm"]
        fits[state] = _fit_warm(window[keep], host[keep] - iommu_term[keep], dram)
    model = np.full_like(host, dram) + iommu_term
    for state, (hit, capacity, _) in fits.items():
        keep = states[state]
        model[keep] += warm_fraction(window[keep], capacity) * (hit - dram)
    rms = float(np.sqrt(np.mean((model - host) ** 2)))
    return LatencyFit(
        llc_latency_ns=fits["HWarm"][0],
        ddio_latency_ns=fits["DWarm"][0],
        dram_latency_ns=dram,
        llc_bytes=int(fits["HWarm"][1]),
        ddio_bytes=int(fits["DWarm"][1]),
        iotlb_entries=int(entries),
        walk_ns=float(walk),
        rms_error_ns=rms,
    )


def _fit_iommu(window: NDArray, cold: NDArray, page: int) -> tuple[int, float, float]:
    """Best (entries, walk, base) for cold = base + miss(W) * walk, by grid + least squares."""
    best = (0, 0.0, float(np.median(cold)), np.inf)
    for entries in _ENTRY_GRID:
        miss = miss_fraction(window, int(entries), page)
        design = np.column_stack([np.ones_like(miss), miss])
        (base, walk), *_ = np.linalg.lstsq(design, cold, rcond=None)
        walk = max(walk, 0.0)
        err = float(np.sum((base + miss * walk - cold) ** 2))
        if err < best[3] - 1e-9:
            best = (int(entries), float(walk), float(base), err)
    return best[0], best[1], best[2]


def _fit_warm(window: NDArray, lat: NDArray, cold: float) -> tuple[float, float, float]:
    """Best (hit latency, warm capacity, error) for lat = cold + warm(W) * (hit - cold)."""
    best = (cold, 0.0, np.inf)
    for capacity in _CAPACITY_GRID:
        warm = warm_fraction(window, float(capacity))
        if not np.any(warm > 0):
            continue
        # Least squares for the hit latency given the capacity.
        hit = cold + float(np.sum(warm * (lat - cold)) / np.sum(warm * warm))
        err = float(np.sum((cold + warm * (hit - cold) - lat) ** 2))
        if err < best[2] - 1e-9:
            best = (hit, float(capacity), err)
    return best

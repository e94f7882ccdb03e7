"""Calibration inputs a host gives away for free: its facts files and its latency sweeps.

`parse_host_facts` reads the link settings and LLC size from pcie-bench's `sys-*.txt` files;
`fit_latency` turns the single-transaction latency sweep (`lat_dma_sweep_rd_rnd_64`: 64 B random
reads over windows of 8 KiB..64 MiB in four cache states) into the host-side latencies and
capacities the simulator needs. Both are deterministic least-squares fits over small grids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf.errors import UsageError
from pcieperf.pciebench.bench import (
    CACHE_STATES,
    SMALL_PAGE_BYTES,
    IommuMode,
    SystemInfo,
    iotlb_page_bytes,
    parse_result_dir,
)


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


def device_block(lspci: str, vendor: str) -> str:
    """The lspci -vv block of the first device whose header names `vendor`."""
    blocks = re.split(r"\n(?=\S)", lspci)
    for block in blocks:
        if vendor in next(iter(block.splitlines()), ""):  # its first line; none if empty
            return block
    raise UsageError(f"sys-lspci.txt: no device of vendor {vendor!r} found")


def parse_host_facts(facts: dict[str, str], vendor: str = "Netronome") -> HostFacts:
    """Link settings from `lspci` (the device's block), LLC size from `cpuinfo`, and whether
    DMA addresses lie above 4 GiB (64-bit TLP headers) from `dma-addrs`."""
    for name in ("lspci", "cpuinfo", "dma-addrs"):
        if name not in facts:
            raise UsageError(f"host facts lack sys-{name}.txt; it is needed to predict")
    block = device_block(facts["lspci"], vendor)
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


def iotlb_miss(window: NDArray, entries: int, iommu: str) -> NDArray:
    """IOTLB miss fraction per window for an IOMMU mode; zero without IOTLB entries."""
    window = np.asarray(window, dtype=np.float64)
    if not entries:
        return np.zeros_like(window)
    return miss_fraction(window, entries, iotlb_page_bytes(iommu))


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
    iommu_term = iotlb_miss(window, entries, iommu) * walk
    fits = {}
    for state in ("HWarm", "DWarm"):
        keep = states[state] if states[state].any() else states["HWarm"]
        fits[state] = _fit_warm(window[keep], host[keep] - iommu_term[keep], dram)
    fit = LatencyFit(
        llc_latency_ns=fits["HWarm"][0],
        ddio_latency_ns=fits["DWarm"][0],
        dram_latency_ns=dram,
        llc_bytes=int(fits["HWarm"][1]),
        ddio_bytes=int(fits["DWarm"][1]),
        iotlb_entries=int(entries),
        walk_ns=float(walk),
        rms_error_ns=0.0,
    )
    model = latency_model(fit, window, cache, iommu)
    return replace(fit, rms_error_ns=float(np.sqrt(np.mean((model - host) ** 2))))


# Windows of fewer pages than this cannot tell an IOTLB: on remote-memory hosts the 8 KiB
# window reads ~70-130 ns faster than every larger one (a cache effect; 2 pages miss in no IOTLB).
MIN_IOTLB_PAGES = 16


def _fit_iommu(window: NDArray, cold: NDArray, page: int) -> tuple[int, float, float]:
    """Best (entries, walk, base) for cold = base + miss(W) * walk, by grid + least squares,
    over the windows of at least MIN_IOTLB_PAGES pages."""
    keep = window >= MIN_IOTLB_PAGES * page
    if np.count_nonzero(keep) >= 3:
        window, cold = window[keep], cold[keep]
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


# --- Host IOMMU evidence: the latency sweep decides, the boot files corroborate -----------------


@dataclass(frozen=True)
class IommuFacts:
    """What the host's boot files say about its IOMMU; None where they say nothing."""

    enabled: bool | None
    superpages: bool | None
    why: str


# VT-d spec (rev 3.x) §10.4.2 Capability Register: bits 37:34 are SLLPS, Second Level Large
# Page Support (bit 34: 2 MiB, bit 35: 1 GiB); 0 means second-level tables map 4 KiB only.
SLLPS_SHIFT, SLLPS_MASK = 34, 0xF


def sllps(cap: int) -> int:
    """The SLLPS field of a DMAR capability register value."""
    return (cap >> SLLPS_SHIFT) & SLLPS_MASK


def parse_iommu_facts(facts: dict[str, str]) -> IommuFacts:
    """IOMMU state from `intel_iommu=` on the kernel command line, the kernel's DMAR lines in
    dmesg (enabled, super pages disabled) and the DMAR units' SLLPS capability bits."""
    cmdline, dmesg = facts.get("kernel-cmdline", ""), facts.get("dmesg", "")
    options = {o for m in re.findall(r"intel_iommu=(\S+)", cmdline) for o in m.split(",")}
    caps = [int(c, 16) for c in re.findall(r"\bcap ([0-9a-fA-F]+)", dmesg)]
    said_on = re.search(r"IOMMU:? enabled|IOMMU enabled", dmesg, re.IGNORECASE) is not None
    enabled = True if ("on" in options or said_on) else False if "off" in options else None
    if enabled is None and (cmdline or dmesg):
        enabled, why = False, "no intel_iommu=on and no 'IOMMU enabled' line at boot"
    else:
        why = f"intel_iommu={','.join(sorted(options))}" if options else "dmesg"
    superpages = None
    if "sp_off" in options or re.search(r"disable supported super ?page", dmesg, re.I):
        superpages, why = False, why + "; super pages disabled (sp_off)"
    elif caps and not any(sllps(c) for c in caps):
        superpages, why = False, why + "; DMAR cap SLLPS = 0 (4 KiB second-level pages only)"
    elif caps and enabled:
        superpages = True
        why += f"; DMAR cap SLLPS = {sllps(caps[0]):#x} (2 MiB pages supported)"
    return IommuFacts(enabled=enabled, superpages=superpages, why=why)


# DisplayFamily_DisplayModel -> microarchitecture (Intel SDM Vol. 4, Table 2-1, and Intel's
# "Intel Architecture and Processor Identification with CPUID Model and Family Numbers").
_INTEL_MODELS = {
    **dict.fromkeys((0x2A, 0x2D), "snb"),
    **dict.fromkeys((0x3A, 0x3E), "ivb"),
    **dict.fromkeys((0x3C, 0x3F, 0x45, 0x46), "hsw"),
    **dict.fromkeys((0x3D, 0x47, 0x4F, 0x56), "bdw"),
    0x55: "skx",  # Skylake-SP, Cascade Lake, Cooper Lake share the model number
    **dict.fromkeys((0x6A, 0x6C), "icx"),
    0x8F: "spr",
    0xCF: "emr",
}


def cpu_generation(cpuinfo: str) -> str:
    """The CPU's microarchitecture from /proc/cpuinfo's vendor, family and model."""
    family = re.search(r"^cpu family\s*:\s*(\d+)", cpuinfo, re.M)
    model = re.search(r"^model\s*:\s*(\d+)", cpuinfo, re.M)
    if not (family and model):
        return "unknown"
    fam, mod = int(family.group(1)), int(model.group(1))
    if "GenuineIntel" in cpuinfo and fam == 6 and mod in _INTEL_MODELS:
        return _INTEL_MODELS[mod]
    vendor = "amd" if "AuthenticAMD" in cpuinfo else "intel" if "GenuineIntel" in cpuinfo else ""
    return f"{vendor} family {fam} model {mod}".strip()


@dataclass(frozen=True)
class IommuEvidence:
    """The IOMMU as predictions use it: decided by the latency sweep, corroborated by facts.

    `mode` is what is in effect for DMA: `nosp` when the sweep shows 4 KiB-page IOTLB misses,
    `on` when the IOMMU is on but no miss shows up to the sweep's largest window (super pages),
    `off` otherwise. `entries` and `walk_ns` are the fitted reach and miss latency (0 if none).
    """

    mode: IommuMode
    entries: int
    walk_ns: float
    named: IommuMode
    facts: IommuFacts
    why: str
    conflicts: tuple[str, ...] = ()

    @property
    def misses(self) -> bool:
        """Whether the sweep shows IOTLB misses (4 KiB pages in effect)."""
        return self.entries > 0

    @property
    def page_bytes(self) -> int:
        """Page size the IOTLB caches in effect (0 with the IOMMU off)."""
        return 0 if self.mode == "off" else iotlb_page_bytes(self.mode)


MIN_WALK_NS = 50.0  # added latency below this is noise (steady hosts jitter by ~15 ns)


def iommu_evidence(sweep: dict[str, NDArray], info: SystemInfo, facts: IommuFacts) -> IommuEvidence:
    """Decide IOMMU mode, page size, IOTLB reach and walk latency from the latency sweep.

    The Cold medians are fitted with 4 KiB-page misses (`_fit_iommu`); a walk of MIN_WALK_NS or
    more means misses exist. The name and the boot files only corroborate: where they
    disagree, the sweep wins and `conflicts` says so.
    """
    cold = np.asarray(sweep["cache"]) == "Cold"
    window = np.asarray(sweep["window_bytes"], dtype=np.float64)[cold]
    entries, walk, _ = _fit_iommu(window, np.asarray(sweep["med_ns"])[cold], SMALL_PAGE_BYTES)
    largest = int(window.max()) >> 20 if window.size else 0
    conflicts = []
    if walk >= MIN_WALK_NS:
        mode: IommuMode = "nosp"
        why = f"latency sweep: +{walk:.0f} ns past {entries} 4 KiB pages (IOTLB misses)"
        if info.iommu != "nosp":
            conflicts.append(f"name says iommu={info.iommu}")
        if facts.enabled is False:
            conflicts.append("boot files show no IOMMU enabled")
        if facts.superpages:
            conflicts.append("boot files allow super pages")
    else:
        entries, walk = 0, 0.0
        on = facts.enabled if facts.enabled is not None else info.iommu != "off"
        mode = "on" if on else "off"
        why = f"latency sweep flat up to {largest} MiB (no IOTLB misses)"
        if info.iommu == "nosp" or (facts.superpages is False and on):
            conflicts.append("name or boot files say 4 KiB pages, but no miss shows")
        if (info.iommu != "off") != on:
            conflicts.append(f"name says iommu={info.iommu}")
    return IommuEvidence(mode, int(entries), float(walk), info.iommu, facts, why, tuple(conflicts))


# --- A measured host: what a pcie-bench result directory holds --------------------------------


@dataclass(frozen=True)
class HostRun:
    """One host's result directory, parsed: its name, facts, result tables by file name, the
    IOMMU its own evidence shows and its CPU generation."""

    info: SystemInfo
    facts: HostFacts
    tables: dict[str, dict[str, NDArray]]
    iommu: IommuEvidence
    generation: str

    @property
    def name(self) -> str:
        """The directory (system) name."""
        return self.info.name


LATENCY_SWEEP_FILE = "lat_dma_sweep_rd_rnd_64.csv"


def load_run(path: Path) -> HostRun:
    """Parse a result directory; it must hold the latency sweep and the host facts."""
    parsed = parse_result_dir(path)
    tables = {t.file: t.columns for t in parsed.tables}
    if LATENCY_SWEEP_FILE not in tables:
        raise UsageError(f"{path}: {LATENCY_SWEEP_FILE} is missing; it is needed to calibrate")
    evidence = iommu_evidence(
        tables[LATENCY_SWEEP_FILE], parsed.info, parse_iommu_facts(parsed.facts)
    )
    generation = cpu_generation(parsed.facts.get("cpuinfo", ""))
    return HostRun(parsed.info, parse_host_facts(parsed.facts), tables, evidence, generation)


def host_latency(run: HostRun) -> LatencyFit:
    """Fit the host's 64 B random-read latency sweep as measured (nothing subtracted).

    Medians, not means: on some hosts rare millisecond stalls dominate the mean (docs/bench.md).
    IOTLB misses are fitted only where the sweep shows them (`iommu_evidence`), whatever the
    directory's name says.
    """
    sweep = run.tables[LATENCY_SWEEP_FILE]
    mode = "nosp" if run.iommu.misses else "off"
    return fit_latency(sweep["window_bytes"], sweep["cache"], sweep["med_ns"], 0.0, mode)


def latency_model(fit: LatencyFit, window: NDArray, cache: NDArray, iommu: str) -> NDArray:
    """Mean read latency the fit predicts for each (window, cache state)."""
    window = np.asarray(window, dtype=np.float64)
    latency = fit.dram_latency_ns + iotlb_miss(window, fit.iotlb_entries, iommu) * fit.walk_ns
    for state, hit, capacity in (
        ("HWarm", fit.llc_latency_ns, fit.llc_bytes),
        ("DWarm", fit.ddio_latency_ns, fit.ddio_bytes),
    ):
        keep = np.asarray(cache) == state
        latency[keep] += warm_fraction(window[keep], capacity) * (hit - fit.dram_latency_ns)
    return latency


def steadiness(run: HostRun) -> float:
    """Worst ratio of 99.9th-percentile to median latency over the latency sweep.

    Steady hosts stay below ~2; a host with millisecond stalls (power management, SMIs) shows
    ratios in the hundreds, and its bandwidth results are not reproducible run to run.
    """
    sweep = run.tables[LATENCY_SWEEP_FILE]
    return float(np.max(sweep["p999_ns"] / sweep["med_ns"]))

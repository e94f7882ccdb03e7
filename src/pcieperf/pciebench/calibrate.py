"""Calibration inputs a host gives away for free: its facts files and its latency sweeps.

`parse_host_facts` reads the link settings and LLC size from pcie-bench's `sys-*.txt` files;
`fit_latency` turns the single-transaction latency sweep (`lat_dma_sweep_rd_rnd_64`: 64 B random
reads over windows of 8 KiB..64 MiB in four cache states) into the host-side latencies and
capacities the simulator needs. Both are deterministic least-squares fits over small grids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf.errors import ProfileError, UsageError
from pcieperf.pcie.alignment import BURST_BYTES, TransferShape, transfer_shape
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import read_cost
from pcieperf.pciebench.bench import (
    CACHE_STATES,
    SMALL_PAGE_BYTES,
    UNSTEADY_RATIO,
    WINDOW_SWEEP_SIZES,
    IommuMode,
    Point,
    SystemInfo,
    iotlb_page_bytes,
    parse_result_dir,
)
from pcieperf.pciebench.sim import DeviceProfile, HostProfile, cache_lines, from_table, load_toml
from pcieperf.progress import wrap as with_progress


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
# The calibration shipped with pcieperf: `pcieperf bench calibrate` over the NFP-6000 data set.
DEFAULT_CALIBRATION = Path(__file__).parent / "calibrations" / "nfp6000.toml"


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


# --- The device-wide fit ----------------------------------------------------------------------


@dataclass(frozen=True)
class SharedHost:
    """Host-side parameters that latency cannot reveal, shared by the calibration hosts."""

    write_line_ns: float
    partial_line_ns: float
    walk_busy_ns: float
    walkers: int
    posted_credits: int
    completion_policy: str
    read_partial_line_ns: float = 0.0
    # CPU generations of the hosts whose IOTLB misses fixed walk_busy_ns (cpu_generation)
    walker_generations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Spread:
    """How far measured bandwidth strays from the fitted model on the calibration's hosts:
    the 2.5th and 97.5th percentile of measured / fitted, per point category (`category`).

    It stands for what one global device fit cannot know of a new host (the per-host spread
    of the device and root-complex parameters), and is the band a prediction interval adds.
    """

    categories: list[str] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)

    def band(self, category: str) -> tuple[float, float]:
        """(low, high) ratio for a category; the widest band for one the fit never saw."""
        if category in self.categories:
            i = self.categories.index(category)
            return self.low[i], self.high[i]
        return (min(self.low, default=1.0), max(self.high, default=1.0))


SPREAD_QUANTILES = (2.5, 97.5)


def category(test: str, misses: bool, pattern: str = "Rand", dev_offset: int = 0) -> str:
    """A point's spread category: its test, whether its accesses miss in the IOTLB, and for
    the offset sweeps (the suite's only `Seq` rows) whether the device offset is non-zero
    (modelled by the same fit, but strays from it in its own way)."""
    tag = "+do" if dev_offset > 0 else "+seq" if pattern == "Seq" else ""
    return f"{test}{'+iotlb' if misses else ''}{tag}"


@dataclass(frozen=True)
class ReferenceHost:
    """Medians over the calibration's steady IOMMU hosts with 4 KiB pages (`-iommu-nosp`), the
    only ones whose IOTLB the latency sweep reveals: the host the DPDK IOMMU model assumes."""

    iotlb_entries: int
    walk_ns: float
    llc_latency_ns: float
    mps: int
    mrrs: int
    hosts: list[str]


@dataclass(frozen=True)
class Calibration:
    """A fitted device profile, the shared host parameters and how well they fit."""

    device: DeviceProfile
    shared: SharedHost
    fit_mape_pct: dict[str, float]
    points: int
    left_out: list[str]  # unsteady hosts the fit did not use
    reference: ReferenceHost | None = None  # None when no steady 4 KiB-page IOMMU host was given
    spread: Spread = field(default_factory=Spread)


@dataclass(frozen=True)
class FitSummary:
    """The [fit] table of a calibration file: how well the fit did, per host."""

    hosts: list[str] = field(default_factory=list)
    mape_pct: list[float] = field(default_factory=list)
    points: int = 0
    left_out: list[str] = field(default_factory=list)


# Issue 3's acceptance set: the size sweep and the window sweeps.
ACCEPTANCE_FILES = (
    "bw_dma_sz_sweep.csv",
    *(f"bw_dma_win_sweep_{d}_rnd_{s}.csv" for d in ("rd", "wr") for s in WINDOW_SWEEP_SIZES),
)
# The offset sweeps (issue 14 item 3: host and device offsets).
OFFSET_FILES = tuple(f"bw_dma_off_{d}{c}.csv" for d in ("rd", "wr") for c in ("", "_cold"))
FIT_FILES = (*ACCEPTANCE_FILES, *OFFSET_FILES)
MIN_FIT_SIZE = 64  # the size sweep's 16 and 32 B rows sit below a cache line; not fitted
POSTED_CREDITS = 64  # not observable in the data: large enough never to bind (docs/bench.md)
_PARAMETERS = (
    "tags",
    "latency_overhead_ns",
    "read_ns",
    "read_line_ns",
    "write_ns",
    "write_line_ns",
    "datapath_ns",
    "datapath_line_ns",
    "rc_write_line_ns",
    "rc_partial_line_ns",
    "walk_busy_ns",
    "read_request_ns",
    "unaligned_read_ns",
    "burst_base_ns",
    "burst_ns",
    "read_partial_line_ns",
)
_START = np.array([32, 100, 10, 5, 15, 5, 5, 5, 9, 3, 40, 10, 20, 4, 17, 2], dtype=np.float64)
WALKERS = 1  # with the busy time fitted, one walker: only their ratio is observable


@dataclass(frozen=True)
class _Terms:
    """Per-point quantities of the mean-value model for one host (parameter-free parts)."""

    measured_gbps: NDArray
    size: NDArray
    lines: NDArray
    partial: NDArray
    shape: TransferShape
    test: NDArray
    latency: NDArray
    miss: NDArray
    read_up: NDArray
    read_down: NDArray
    write_up: NDArray
    read64_wires: float
    category: NDArray


def bandwidth_points(run: HostRun, files: tuple[str, ...] = FIT_FILES) -> dict[str, NDArray]:
    """A host's bandwidth rows of `files` from 64 B up (default: the fitted ones, the size,
    window and offset sweeps)."""
    parts = []
    for file in files:
        if file not in run.tables:
            continue
        cols = run.tables[file]
        keep = cols["size_bytes"] >= MIN_FIT_SIZE
        parts.append({k: v[keep] for k, v in cols.items()})
    if not parts:
        raise UsageError(f"{run.name}: no bandwidth results to calibrate on ({files[0]}, ...)")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _terms(
    run: HostRun,
    fit: LatencyFit,
    policy: str,
    files: tuple[str, ...] = FIT_FILES,
    burst_bytes: int = BURST_BYTES,
) -> _Terms:
    rows = bandwidth_points(run, files)
    link = host_link(run.facts, policy)
    size = rows["size_bytes"].astype(np.int64)
    window = rows["window_bytes"].astype(np.float64)
    rate = link.tlp_bytes_per_s / 1e9
    shape = transfer_shape(
        link, size, rows["host_offset"], rows["dev_offset"], rows["window_bytes"], burst_bytes
    )
    lines, partial = cache_lines(rows["host_offset"], size)
    miss = iotlb_miss(window, fit.iotlb_entries, run.iommu.mode)
    cats = [
        category(*row)
        for row in zip(rows["test"], miss > 0, rows["pattern"], rows["dev_offset"], strict=True)
    ]
    return _Terms(
        measured_gbps=rows["bw_gbps"],
        size=size,
        lines=lines,
        partial=partial.astype(np.float64),
        shape=shape,
        test=rows["test"],
        latency=latency_model(fit, window, rows["cache"], run.iommu.mode),
        miss=miss,
        read_up=shape.read_up_bytes / rate,
        read_down=shape.read_down_bytes / rate,
        write_up=shape.write_up_bytes / rate,
        read64_wires=read_wire_ns(link, 64),
        category=np.array(cats),
    )


def read_wire_ns(link: Link, size: int) -> float:
    """Time a read of `size` bytes spends on the link: its request out plus its completions."""
    cost = read_cost(link, size)
    return float((cost.wire_out + cost.wire_back)[()]) / (link.tlp_bytes_per_s / 1e9)


def host_link(facts: HostFacts, policy: str) -> Link:
    """The device's link as the host facts describe it."""
    return Link(
        gen=facts.gen,
        lanes=facts.lanes,
        mps=facts.mps,
        mrrs=facts.mrrs,
        rcb=facts.rcb,
        completion_policy=policy,
        addr64=facts.addr64,
    )


def _device_of(
    values: dict[str, float], name: str, source: str, burst_bytes: int = BURST_BYTES
) -> DeviceProfile:
    """The device profile that fitted parameter values describe."""
    return DeviceProfile(
        name=name,
        source=source,
        fixed_latency_ns=0.0,
        burst_bytes=burst_bytes,
        notes="fixed latency is folded into the host latencies the latency sweep gives",
        **{k: round(values[k]) if k == "tags" else values[k] for k in _DEVICE_FIELDS},
    )


def _mean_value_gbps(t: _Terms, x: NDArray) -> NDArray:
    """Bandwidth of each point as the slowest of its resources (the simulator's bottlenecks)."""
    v = dict(zip(_PARAMETERS, x, strict=True))
    tags, overhead = v["tags"], v["latency_overhead_ns"]
    device = _device_of(v, "mean-value model", "fit")
    read, write, path = device.times(t.shape)
    read = read + v["read_partial_line_ns"] * t.partial
    root_complex = v["rc_write_line_ns"] * t.lines + v["rc_partial_line_ns"] * t.partial
    walk = t.miss * v["walk_busy_ns"] / WALKERS
    # Round trip of a read: the measured 64 B latency, corrected for size, minus the overhead.
    read64, _, path64 = device.costs(1)
    trip = t.latency - overhead + (read + path + t.read_up + t.read_down) - (read64 + path64)
    trip = np.maximum(trip - t.read64_wires, 1.0)
    read_time = np.maximum.reduce([read, path, t.read_up, t.read_down, walk, trip / tags])
    write_time = np.maximum.reduce([write, path, t.write_up, root_complex, walk])
    pair_time = np.maximum.reduce(
        [
            read,
            write,
            2 * path,
            t.read_up + t.write_up,
            t.read_down,
            root_complex,
            2 * walk,
            (trip + write + path + t.write_up) / tags,
        ]
    )
    time = np.where(
        t.test == "BW_DMA_RD", read_time, np.where(t.test == "BW_DMA_WR", write_time, pair_time)
    )
    return t.size * 8 / time


def fit_device(
    runs: list[HostRun], name: str = "calibrated device", burst_bytes: int = BURST_BYTES
) -> Calibration:
    """Least-squares fit of the device and shared host parameters to the hosts' bandwidths.

    Minimises the robust (soft-L1) sum of log(predicted / measured) over every size-sweep
    (>= 64 B), window-sweep and offset-sweep point of the steady hosts; both completion
    policies are tried and the better kept. Latency-derived host parameters come from each
    host's own sweep; `burst_bytes` is the device-memory burst the fit assumes.
    """
    from scipy.optimize import least_squares  # only fitting needs scipy; keep the CLI quick

    steady = [r for r in runs if steadiness(r) <= UNSTEADY_RATIO] or runs
    left_out = [r.name for r in runs if r not in steady]
    latencies = [host_latency(r) for r in steady]
    best = None
    for policy in with_progress(("mps", "rcb"), "fitting", "completion policy"):
        terms = [
            _terms(r, lat, policy, burst_bytes=burst_bytes)
            for r, lat in zip(steady, latencies, strict=True)
        ]
        fit = least_squares(
            lambda x, terms=terms: np.concatenate(
                [np.log(_mean_value_gbps(t, x) / t.measured_gbps) for t in terms]
            ),
            _START,
            bounds=(np.r_[1, np.zeros(len(_START) - 2), 1], np.inf),
            loss="soft_l1",
            f_scale=0.05,
        )
        if best is None or fit.cost < best[0].cost:
            best = (fit, policy, terms)
    fit, policy, terms = best
    x = fit.x
    mape = {
        r.name: round(100 * float(np.mean(np.abs(_mean_value_gbps(t, x) / t.measured_gbps - 1))), 2)
        for r, t in zip(steady, terms, strict=True)
    }
    values = dict(zip(_PARAMETERS, (float(v) for v in x), strict=True))
    source = f"pcieperf bench calibrate on {len(steady)} hosts (fit.hosts)"
    device = _device_of(values, name, source, burst_bytes)
    shared = SharedHost(
        write_line_ns=values["rc_write_line_ns"],
        partial_line_ns=values["rc_partial_line_ns"],
        walk_busy_ns=values["walk_busy_ns"],
        walkers=WALKERS,
        posted_credits=POSTED_CREDITS,
        completion_policy=policy,
        read_partial_line_ns=values["read_partial_line_ns"],
        walker_generations=sorted({r.generation for r in steady if r.iommu.misses}),
    )
    points = sum(t.size.size for t in terms)
    spread = fit_spread(terms, x)
    calibration = Calibration(device, shared, mape, points, left_out, spread=spread)
    return replace(calibration, reference=reference_host(steady, calibration))


def fit_spread(terms: list[_Terms], x: NDArray) -> Spread:
    """Percentiles of measured / fitted bandwidth per category over the given points."""
    ratio = np.concatenate([t.measured_gbps / _mean_value_gbps(t, x) for t in terms])
    cats = np.concatenate([t.category for t in terms])
    names = sorted(set(cats.tolist()))
    lo, hi = ([float(np.percentile(ratio[cats == c], q)) for c in names] for q in SPREAD_QUANTILES)
    return Spread(categories=names, low=lo, high=hi)


def reference_host(runs: list[HostRun], calibration: Calibration) -> ReferenceHost | None:
    """The median 4 KiB-page IOMMU host among `runs`, as `host_profile` sees each of them."""
    nosp = [host_profile(r, calibration) for r in runs if r.iommu.misses]
    if not nosp:
        return None

    def median(name: str) -> float:
        return float(np.median([getattr(h, name) for h in nosp]))

    return ReferenceHost(
        iotlb_entries=round(median("iotlb_entries")),
        walk_ns=median("walk_ns"),
        llc_latency_ns=median("llc_latency_ns"),
        mps=round(median("mps")),
        mrrs=round(median("mrrs")),
        hosts=[h.name for h in nosp],
    )


def outside_host_ns(device: DeviceProfile, link: Link) -> float:
    """What a 64 B latency-test read spends outside the host: the device's latency, its read
    engine and data path for one line, the benchmark's overhead and the link time."""
    read, _, path = device.costs(1)
    return (
        device.latency_overhead_ns + device.fixed_latency_ns + read + path + read_wire_ns(link, 64)
    )


def host_profile(run: HostRun, calibration: Calibration) -> HostProfile:
    """A simulator host profile from a host's facts and latency sweep plus the calibration.

    The sweep's latencies include the device, the link and the benchmark's overhead; those are
    subtracted (as the simulator adds them back) to leave the host's own share.
    """
    fit = host_latency(run)
    device, shared = calibration.device, calibration.shared
    link = host_link(run.facts, shared.completion_policy)
    outside_host = outside_host_ns(device, link)
    info = run.info
    return HostProfile(
        name=info.name,
        source=f"latency sweep and host facts of {info.name}, calibration {device.source}",
        mps=link.mps,
        mrrs=link.mrrs,
        completion_policy=shared.completion_policy,
        addr64=run.facts.addr64,
        llc_latency_ns=max(fit.llc_latency_ns - outside_host, 0.0),
        ddio_latency_ns=max(fit.ddio_latency_ns - outside_host, 0.0),
        dram_latency_ns=max(fit.dram_latency_ns - outside_host, 0.0),
        remote_extra_ns=0.0,
        llc_bytes=fit.llc_bytes,
        ddio_bytes=fit.ddio_bytes,
        write_line_ns=shared.write_line_ns,
        partial_line_ns=shared.partial_line_ns,
        read_partial_line_ns=shared.read_partial_line_ns,
        posted_credits=shared.posted_credits,
        iotlb_entries=fit.iotlb_entries,
        walk_ns=fit.walk_ns,
        walk_busy_ns=shared.walk_busy_ns,
        walkers=shared.walkers,
        iommu=run.iommu.mode,
        numa_device=info.numa_device,
        numa_memory=info.numa_memory,
        numa_cpu=info.numa_cpu,
        gen=link.gen,
        lanes=link.lanes,
        rcb=link.rcb,
        notes="measured latencies already include any NUMA distance, so remote_extra_ns = 0",
    )


def walker_unknown(run: HostRun, calibration: Calibration) -> bool:
    """Whether the host misses in its IOTLB on a CPU generation whose walker throughput the
    calibration never saw (its busy time was fitted on `walker_generations` only)."""
    return run.iommu.misses and run.generation not in calibration.shared.walker_generations


def interval_hosts(run: HostRun, calibration: Calibration, host: HostProfile) -> list[HostProfile]:
    """The other host profiles the evidence leaves possible besides `host`.

    Where the walker throughput is unknown (`walker_unknown`), the slow bound walks one miss
    at a time: busy for the whole walk latency the sweep shows, not the calibrated busy time.
    """
    if not walker_unknown(run, calibration):
        return []
    return [replace(host, walk_busy_ns=max(host.walk_ns, host.walk_busy_ns), walkers=1)]


def interval_band(
    run: HostRun, calibration: Calibration, host: HostProfile
) -> Callable[[Point], tuple[float, float]]:
    """Each row's (low, high) ratio to its prediction: the calibration's spread for the row's
    category (`Spread`), on an unsteady host widened by its own latency spread (`stall_band`)."""
    low_stall, high_stall = stall_band(run)

    def band(point: Point) -> tuple[float, float]:
        misses = bool(iotlb_miss(np.array([point.window]), host.iotlb_entries, host.iommu)[0])
        cat = category(point.test, misses, point.pattern, point.dev_offset)
        low, high = calibration.spread.band(cat)
        return low * low_stall, high * high_stall

    return band


def stall_band(run: HostRun) -> tuple[float, float]:
    """(low, high) factor for a host that stalls (steadiness above UNSTEADY_RATIO), else 1.

    Bandwidth is bound by latency over in-flight reads; on a stalling host a run's effective
    latency lies anywhere between the fastest sample (min) and what the stalls add to the
    mean, so the bandwidth may range over median/mean .. median/min of the latency sweep.
    """
    if steadiness(run) <= UNSTEADY_RATIO:
        return 1.0, 1.0
    sweep = run.tables[LATENCY_SWEEP_FILE]
    med = sweep["med_ns"]
    return float(np.min(med / sweep["avg_ns"])), float(np.max(med / sweep["min_ns"]))


HOST_LATENCY, HOST_FACTS, DEVICE = "host latency fit", "host facts", "device calibration"
DEFAULT, ASSUMPTION = "calibration default", "assumption"
_DEVICE_FIELDS = (
    *("tags", "read_ns", "read_line_ns", "write_ns", "write_line_ns", "datapath_ns"),
    *("datapath_line_ns", "latency_overhead_ns", "read_request_ns", "unaligned_read_ns"),
    *("burst_base_ns", "burst_ns"),
)
_BURST_WHY = "no public figure: of 64, 128 and 256 B, 128 B fits the offset sweeps best"


def _iommu_rows(run: HostRun) -> list[tuple[str, object, str, str]]:
    """Provenance of the IOMMU parameters: the sweep decides, facts and name corroborate."""
    ev = run.iommu
    overruled = f"; latency sweep wins over: {', '.join(ev.conflicts)}" if ev.conflicts else ""
    if ev.misses:
        source, why = HOST_LATENCY, ev.why + overruled
    elif ev.facts.enabled is not None:
        source, why = HOST_FACTS, f"{ev.why}; {ev.facts.why}{overruled}"
    else:
        source, why = ASSUMPTION, f"{ev.why}; no boot files: the name's iommu={ev.named}"
    page_why = "misses follow 4 KiB pages" if ev.misses else "no miss up to the largest window"
    return [
        ("iommu", ev.mode, source, why),
        ("page_bytes", ev.page_bytes, source, page_why + overruled),
        ("iotlb_entries", ev.entries, HOST_LATENCY, ev.why),
        ("walk_ns", round(ev.walk_ns, 1), HOST_LATENCY, ev.why),
    ]


def _walker_rows(run: HostRun, calibration: Calibration, host: HostProfile) -> list[tuple]:
    """Provenance of the walker's busy time and count: calibrated, or an interval if unknown."""
    gens = ", ".join(calibration.shared.walker_generations) or "none"
    if walker_unknown(run, calibration):
        why = (
            f"CPU {run.generation} is not among the calibrated walker generations ({gens}): "
            f"point = calibrated, bounds down to one walk at a time ({host.walk_ns:.0f} ns)"
        )
        source = ASSUMPTION
    else:
        why, source = f"fitted on IOTLB-miss hosts of {gens}", DEVICE
    return [
        ("walk_busy_ns", round(host.walk_busy_ns, 2), source, why),
        ("walkers", host.walkers, source, why),
    ]


def provenance(run: HostRun, calibration: Calibration, host: HostProfile) -> list[dict]:
    """For every parameter of a prediction: its value, which evidence decided it, and why."""
    lat = f"{LATENCY_SWEEP_FILE} medians"
    rows: list[tuple] = [
        ("cpu_generation", run.generation, HOST_FACTS, "sys-cpuinfo.txt family/model"),
        *_iommu_rows(run),
        *_walker_rows(run, calibration, host),
        *(
            (name, round(getattr(host, name), 1), HOST_LATENCY, lat)
            for name in ("dram_latency_ns", "llc_latency_ns", "ddio_latency_ns")
        ),
        *((name, getattr(host, name), HOST_LATENCY, lat) for name in ("llc_bytes", "ddio_bytes")),
        *(
            (name, getattr(host, name), HOST_FACTS, "sys-lspci.txt, the device's block")
            for name in ("mps", "mrrs", "rcb", "gen", "lanes")
        ),
        ("addr64", host.addr64, HOST_FACTS, "sys-dma-addrs.txt: a buffer above 4 GiB"),
        ("completion_policy", host.completion_policy, DEVICE, "the better fit of rcb and mps"),
        *(
            (name, round(getattr(host, name), 2), DEVICE, "bandwidth fit over the hosts")
            for name in ("write_line_ns", "partial_line_ns", "read_partial_line_ns")
        ),
        ("posted_credits", host.posted_credits, DEFAULT, "not observable: never binds"),
        ("remote_extra_ns", host.remote_extra_ns, ASSUMPTION, "measured latency has NUMA in it"),
        *(
            (f"device.{name}", getattr(calibration.device, name), DEVICE, calibration.device.source)
            for name in _DEVICE_FIELDS
        ),
        ("device.burst_bytes", calibration.device.burst_bytes, ASSUMPTION, _BURST_WHY),
    ]
    keys = ("parameter", "value", "source", "why")
    return [dict(zip(keys, row, strict=True)) for row in rows]


# --- Calibration files ------------------------------------------------------------------------


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def calibration_toml(calibration: Calibration) -> str:
    """The calibration as TOML: [device] and [host] load as profiles, [fit] says how well."""
    device = {f.name: getattr(calibration.device, f.name) for f in fields(DeviceProfile)}
    shared = {f.name: getattr(calibration.shared, f.name) for f in fields(SharedHost)}
    fit = {
        "hosts": list(calibration.fit_mape_pct),
        "mape_pct": list(calibration.fit_mape_pct.values()),
        "points": calibration.points,
        "left_out": calibration.left_out,
    }
    tables = [("device", device), ("host", shared), ("fit", fit)]
    if calibration.reference is not None:
        tables.append(("reference_host", asdict(calibration.reference)))
    if calibration.spread.categories:
        tables.append(("spread", asdict(calibration.spread)))
    out = ["# Written by `pcieperf bench calibrate`; re-run it to regenerate (docs/bench.md)."]
    for title, table in tables:
        out.append(f"\n[{title}]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
    return "\n".join(out) + "\n"


def load_calibration(path: Path) -> Calibration:
    """Read a calibration file written by `calibration_toml`."""
    data = load_toml(path)
    for table in ("device", "host", "fit"):
        if not isinstance(data.get(table), dict):
            raise ProfileError(f"{path}: missing [{table}] table; is this a calibration file?")
    fit = from_table(FitSummary, data["fit"], f"{path} [fit]")
    return Calibration(
        device=from_table(DeviceProfile, data["device"], f"{path} [device]"),
        shared=from_table(SharedHost, data["host"], f"{path} [host]"),
        fit_mape_pct=dict(zip(fit.hosts, fit.mape_pct, strict=False)),
        points=fit.points,
        left_out=fit.left_out,
        reference=(
            from_table(ReferenceHost, data["reference_host"], f"{path} [reference_host]")
            if isinstance(data.get("reference_host"), dict)
            else None
        ),
        spread=from_table(Spread, data.get("spread", {}), f"{path} [spread]"),
    )

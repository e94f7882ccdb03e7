"""Calibration inputs a host gives away for free: its facts files and its latency sweeps.

`parse_host_facts` reads the link settings and LLC size from pcie-bench's `sys-*.txt` files;
`fit_latency` turns the single-transaction latency sweep (`lat_dma_sweep_rd_rnd_64`: 64 B random
reads over windows of 8 KiB..64 MiB in four cache states) into the host-side latencies and
capacities the simulator needs. Both are deterministic least-squares fits over small grids.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf.bench import CACHE_STATES, WINDOW_SWEEP_SIZES, SystemInfo, iotlb_page_bytes
from pcieperf.errors import ProfileError, UsageError
from pcieperf.link import Link
from pcieperf.progress import wrap as with_progress
from pcieperf.sim import DeviceProfile, HostProfile, cache_lines, from_table, load_toml
from pcieperf.store import parse_result_dir
from pcieperf.tlp import read_cost, write_cost


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


# --- A measured host: what a pcie-bench result directory holds --------------------------------


@dataclass(frozen=True)
class HostRun:
    """One host's result directory, parsed: its name, facts and result tables by file name."""

    info: SystemInfo
    facts: HostFacts
    tables: dict[str, dict[str, NDArray]]

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
    return HostRun(parsed.info, parse_host_facts(parsed.facts), tables)


def host_latency(run: HostRun) -> LatencyFit:
    """Fit the host's 64 B random-read latency sweep as measured (nothing subtracted).

    Medians, not means: on some hosts rare millisecond stalls dominate the mean (docs/bench.md).
    """
    sweep = run.tables[LATENCY_SWEEP_FILE]
    return fit_latency(sweep["window_bytes"], sweep["cache"], sweep["med_ns"], 0.0, run.info.iommu)


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


UNSTEADY_RATIO = 10.0  # p99.9 / median above this: the host stalls (see steadiness)


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


FIT_FILES = (
    "bw_dma_sz_sweep.csv",
    *(f"bw_dma_win_sweep_{d}_rnd_{s}.csv" for d in ("rd", "wr") for s in WINDOW_SWEEP_SIZES),
)
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
)
_START = np.array([32, 100, 10, 5, 15, 5, 5, 5, 9, 3, 40], dtype=np.float64)
WALKERS = 1  # with the busy time fitted, one walker: only their ratio is observable


@dataclass(frozen=True)
class _Terms:
    """Per-point quantities of the mean-value model for one host (parameter-free parts)."""

    measured_gbps: NDArray
    size: NDArray
    lines: NDArray
    partial: NDArray
    test: NDArray
    latency: NDArray
    miss: NDArray
    read_up: NDArray
    read_down: NDArray
    write_up: NDArray
    read64_wires: float


def bandwidth_points(run: HostRun) -> dict[str, NDArray]:
    """The fitted/validated bandwidth rows of a host: size sweep (>= 64 B) and window sweeps."""
    parts = []
    for file in FIT_FILES:
        if file not in run.tables:
            continue
        cols = run.tables[file]
        keep = cols["size_bytes"] >= MIN_FIT_SIZE
        parts.append({k: v[keep] for k, v in cols.items()})
    if not parts:
        raise UsageError(f"{run.name}: no bandwidth results to calibrate on ({FIT_FILES[0]}, ...)")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _terms(run: HostRun, fit: LatencyFit, policy: str) -> _Terms:
    rows = bandwidth_points(run)
    link = host_link(run.facts, policy)
    size = rows["size_bytes"].astype(np.int64)
    window = rows["window_bytes"].astype(np.float64)
    rate = link.tlp_bytes_per_s / 1e9
    rd, wr = read_cost(link, size), write_cost(link, size)
    lines, partial = cache_lines(0, size)
    return _Terms(
        measured_gbps=rows["bw_gbps"],
        size=size,
        lines=lines,
        partial=partial.astype(np.float64),
        test=rows["test"],
        latency=latency_model(fit, window, rows["cache"], run.info.iommu),
        miss=iotlb_miss(window, fit.iotlb_entries, run.info.iommu),
        read_up=rd.wire_out / rate,
        read_down=rd.wire_back / rate,
        write_up=wr.wire_out / rate,
        read64_wires=read_wire_ns(link, 64),
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


def _mean_value_gbps(t: _Terms, x: NDArray) -> NDArray:
    """Bandwidth of each point as the slowest of its resources (the simulator's bottlenecks)."""
    tags, overhead, r0, r1, w0, w1, d0, d1, rc1, rcp, walk_busy = x
    read, write, path = r0 + r1 * t.lines, w0 + w1 * t.lines, d0 + d1 * t.lines
    root_complex = rc1 * t.lines + rcp * t.partial
    walk = t.miss * walk_busy / WALKERS
    # Round trip of a read: the measured 64 B latency, corrected for size, minus the overhead.
    trip = t.latency - overhead + (read + path + t.read_up + t.read_down) - (r0 + r1 + d0 + d1)
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


def fit_device(runs: list[HostRun], name: str = "calibrated device") -> Calibration:
    """Least-squares fit of the device and shared host parameters to the hosts' bandwidths.

    Minimises the robust (soft-L1) sum of log(predicted / measured) over every size-sweep
    (>= 64 B) and window-sweep point of the steady hosts; both completion policies are tried
    and the better kept. Latency-derived host parameters come from each host's own sweep.
    """
    from scipy.optimize import least_squares  # only fitting needs scipy; keep the CLI quick

    steady = [r for r in runs if steadiness(r) <= UNSTEADY_RATIO] or runs
    left_out = [r.name for r in runs if r not in steady]
    latencies = [host_latency(r) for r in steady]
    best = None
    for policy in with_progress(("mps", "rcb"), "fitting", "completion policy"):
        terms = [_terms(r, lat, policy) for r, lat in zip(steady, latencies, strict=True)]
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
    device = DeviceProfile(
        name=name,
        source=f"pcieperf bench calibrate on {len(steady)} hosts (fit.hosts)",
        tags=round(values["tags"]),
        read_ns=values["read_ns"],
        read_line_ns=values["read_line_ns"],
        write_ns=values["write_ns"],
        write_line_ns=values["write_line_ns"],
        datapath_ns=values["datapath_ns"],
        datapath_line_ns=values["datapath_line_ns"],
        fixed_latency_ns=0.0,
        latency_overhead_ns=values["latency_overhead_ns"],
        notes="fixed latency is folded into the host latencies the latency sweep gives",
    )
    shared = SharedHost(
        write_line_ns=values["rc_write_line_ns"],
        partial_line_ns=values["rc_partial_line_ns"],
        walk_busy_ns=values["walk_busy_ns"],
        walkers=WALKERS,
        posted_credits=POSTED_CREDITS,
        completion_policy=policy,
    )
    calibration = Calibration(device, shared, mape, sum(t.size.size for t in terms), left_out)
    return replace(calibration, reference=reference_host(steady, calibration))


def reference_host(runs: list[HostRun], calibration: Calibration) -> ReferenceHost | None:
    """The median 4 KiB-page IOMMU host among `runs`, as `host_profile` sees each of them."""
    nosp = [host_profile(r, calibration) for r in runs if r.info.iommu == "nosp"]
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


def host_profile(run: HostRun, calibration: Calibration) -> HostProfile:
    """A simulator host profile from a host's facts and latency sweep plus the calibration.

    The sweep's latencies include the device, the link and the benchmark's overhead; those are
    subtracted (as the simulator adds them back) to leave the host's own share.
    """
    fit = host_latency(run)
    device, shared = calibration.device, calibration.shared
    link = host_link(run.facts, shared.completion_policy)
    read, _, path = device.costs(1)
    outside_host = (
        device.latency_overhead_ns + device.fixed_latency_ns + read + path + read_wire_ns(link, 64)
    )
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
        posted_credits=shared.posted_credits,
        iotlb_entries=fit.iotlb_entries,
        walk_ns=fit.walk_ns,
        walk_busy_ns=shared.walk_busy_ns,
        walkers=shared.walkers,
        iommu=info.iommu,
        numa_device=info.numa_device,
        numa_memory=info.numa_memory,
        numa_cpu=info.numa_cpu,
        gen=link.gen,
        lanes=link.lanes,
        rcb=link.rcb,
        notes="measured latencies already include any NUMA distance, so remote_extra_ns = 0",
    )


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
    fit = data["fit"]
    hosts, mape = fit.get("hosts", []), fit.get("mape_pct", [])
    return Calibration(
        device=from_table(DeviceProfile, data["device"], f"{path} [device]"),
        shared=from_table(SharedHost, data["host"], f"{path} [host]"),
        fit_mape_pct=dict(zip(hosts, mape, strict=False)),
        points=int(fit.get("points", 0)),
        left_out=list(fit.get("left_out", [])),
        reference=(
            from_table(ReferenceHost, data["reference_host"], f"{path} [reference_host]")
            if isinstance(data.get("reference_host"), dict)
            else None
        ),
    )

"""The device-wide fit (`bench calibrate`): device profile and shared host parameters fitted
to measured pcie-bench bandwidth, a host's profile from its facts and latency sweep
(`host_profile`, `bench predict`), its prediction intervals and the provenance of every value.

The host inputs live in `pciebench.host` and the calibration file in
`pciebench.calibration_file`; their names stay importable from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from pcieperf.errors import UsageError
from pcieperf.pcie.alignment import BURST_BYTES, TransferShape, transfer_shape
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import read_wire_bytes
from pcieperf.pciebench.bench import (
    UNSTEADY_RATIO,
    WINDOW_SWEEP_SIZES,
    Point,
)
from pcieperf.pciebench.calibration_file import (
    Calibration,
    ReferenceHost,
    SharedHost,
    Spread,
)
from pcieperf.pciebench.device import DeviceProfile, outside_host_ns
from pcieperf.pciebench.host import (
    LATENCY_SWEEP_FILE,
    HostFacts,
    HostRun,
    LatencyFit,
    host_latency,
    iotlb_miss,
    latency_model,
    steadiness,
)
from pcieperf.pciebench.sim import HostProfile, cache_lines
from pcieperf.pciebench.walker import point_busy_ns, walker_why
from pcieperf.progress import wrap as with_progress

SPREAD_QUANTILES = (2.5, 97.5)

# The host inputs and the calibration file are read through this module too.
__all__ = [
    "ACCEPTANCE_FILES",
    "ASSUMPTION",
    "DEFAULT",
    "DEVICE",
    "FIT_FILES",
    "HOST_FACTS",
    "HOST_LATENCY",
    "MIN_FIT_SIZE",
    "OFFSET_FILES",
    "POSTED_CREDITS",
    "SPREAD_QUANTILES",
    "WALKERS",
    "bandwidth_points",
    "category",
    "fit_device",
    "fit_spread",
    "host_link",
    "host_profile",
    "interval_band",
    "provenance",
    "read_wire_ns",
    "reference_host",
    "stall_band",
]


def category(test: str, misses: bool, pattern: str = "Rand", dev_offset: int = 0) -> str:
    """A point's spread category: its test, whether its accesses miss in the IOTLB, and for
    the offset sweeps (the suite's only `Seq` rows) whether the device offset is non-zero
    (modelled by the same fit, but strays from it in its own way)."""
    tag = "+do" if dev_offset > 0 else "+seq" if pattern == "Seq" else ""
    return f"{test}{'+iotlb' if misses else ''}{tag}"


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
    return read_wire_bytes(link, size) / (link.tlp_bytes_per_s / 1e9)


def host_link(facts: HostFacts, policy: str) -> Link:
    """The device's link as the host facts describe it."""
    return Link.of(facts, completion_policy=policy)


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
        tags=round(values["tags"]),
        **{k: values[k] for k in _DEVICE_FIELDS if k != "tags"},
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


def _log_ratios(x: NDArray, terms: list[_Terms]) -> NDArray:
    """log(predicted / measured) at every point of the hosts' `terms`, at parameters `x`."""
    return np.concatenate([np.log(_mean_value_gbps(t, x) / t.measured_gbps) for t in terms])


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
    fits = []
    for policy in with_progress(("mps", "rcb"), "fitting", "completion policy"):
        terms = [
            _terms(r, lat, policy, burst_bytes=burst_bytes)
            for r, lat in zip(steady, latencies, strict=True)
        ]
        fit = least_squares(
            _log_ratios,
            _START,
            bounds=(np.r_[1, np.zeros(len(_START) - 2), 1], np.inf),
            loss="soft_l1",
            f_scale=0.05,
            args=(terms,),
        )
        fits.append((fit, policy, terms))
    fit, policy, terms = min(fits, key=lambda found: found[0].cost)  # the first of equals
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
        walk_busy_ns=point_busy_ns(run, calibration, fit.walk_ns),
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
    assumed, why = walker_why(run, calibration, host)
    source = ASSUMPTION if assumed else DEVICE
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

"""The model sweeps the report's figures draw: one DataFrame per figure (written as its CSV,
every column named with its unit) with its title, the one sentence saying what to read from
it, a caption and the facts worth quoting beside it.

Figures: the paper's Figure 1 (effective PCIe bandwidth and four NIC models against Ethernet),
DMA read/write/rw effective bandwidth across generations and widths, the DPDK forwarding
estimate versus packet rate, DPDK forwarding with the IOMMU against ring and page size, the
PCIe bandwidth a bursty trace needs over time, the paper's Figure 2 (where a packet's loopback
latency goes) with the DMAs in flight that line rate needs, DPDK packet capture per design
against frame size (with this machine's capture runs), and (given a counter file) measured
counters against the model's prediction band.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pcieperf.capture import fit as capture_fit
from pcieperf.capture.calibration import DEFAULT_CALIBRATION, load_calibration, runs_file
from pcieperf.capture.evaluate import evaluate_capture
from pcieperf.capture.path import DESIGNS
from pcieperf.capture.setup import CaptureSetup
from pcieperf.dpdk import forwarding
from pcieperf.errors import ProfileError
from pcieperf.iommu.advice import ring_sweep
from pcieperf.iommu.model import IommuResult
from pcieperf.iommu.platform import load_platform
from pcieperf.net.ethernet import Ethernet, PacketMix, dma_bytes, parse_mix
from pcieperf.net.trace.bandwidth import Demand
from pcieperf.net.trace.synthesis import synth
from pcieperf.net.trace.timeline import timeline
from pcieperf.net.wire import DEFAULT_FRAME_BYTES, FCS_BYTES, frames_text
from pcieperf.nic import latency, nic
from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile
from pcieperf.nic.rows import fixed_rows
from pcieperf.pcie import tlp
from pcieperf.pcie.link import Link
from pcieperf.units import decimal

if TYPE_CHECKING:
    from pcieperf.measure.explain import Explanation
    from pcieperf.results import Table

PAPER = (
    "Neugebauer, Antichi, Zazo, Audzevich, López-Buedo and Moore, “Understanding PCIe "
    "performance for end host networking”, ACM SIGCOMM 2018"
)
"""The paper the report's Figures 1 and 2 redraw, named in full wherever they are."""

FIG1_PROFILES = (
    ("simple", "Simple NIC"),
    ("kernel", "Modern NIC (kernel driver)"),
    ("dpdk", "Modern NIC (DPDK driver)"),
    (DEFAULT_PROFILE, "DPDK forwarding (XL710; the IOMMU figure's NIC)"),
)
DMA_LINKS = ((3, 8), (3, 16), (4, 8), (4, 16), (5, 8), (5, 16))
IOMMU_MIXES = ("64", "128", "256", "imix")
IOMMU_PACKETS = 100_000  # per point: +-1 % noise, 112 points in a few seconds
TRACE_MIX = "imix"
TRACE_MPPS = 11.0  # on/off IMIX at 40 GbE: 85 % of line rate on average, line rate in bursts
TRACE_WINDOW_NS = 50_000
LATENCY_FRAMES = np.arange(64, 1501, 4)  # the paper's Figure 2 spans 64 to 1500 B
LATENCY_LABELS = (64, 512, 1500)  # sizes whose PCIe share is written on the figure
CONCURRENCY_RATES_GBPS = (10, 40, 100, 400)


@dataclass(frozen=True)
class ReportConfig:
    """What the report evaluates; the defaults are the paper's Gen3 x8 with 40 GbE."""

    link: Link = field(default_factory=Link)
    eth_gbps: float = 40
    frame_sizes: tuple[int, int] = (64, 1500)
    dma_sizes: tuple[int, int] = (64, 2048)
    explanation: Explanation | None = None  # measured counters explained, for their section
    capture_calibration: Path = DEFAULT_CALIBRATION
    capture_runs: pd.DataFrame | None = None  # None: the runs beside the calibration, if any
    devices: Table | None = None  # `pp.devices`: this machine's devices, for their section


@dataclass
class FigureData:
    """One figure's data and words: `frame` is its CSV; `extra` what the drawing needs beyond
    the frame (a capacity line, legend labels)."""

    slug: str
    title: str
    read: str  # one sentence: what to read from the figure
    caption: str
    frame: pd.DataFrame
    facts: list[str]
    extra: dict[str, Any] = field(default_factory=dict)  # what each drawing takes, its own types


def profile_column(name: str) -> str:
    """Figure 1's column for a NIC profile: its frame throughput in Gb/s (`nic`'s name)."""
    return f"{name.replace('-', '_')}_achievable_gbps"


def fig1(cfg: ReportConfig) -> FigureData:
    """Paper Figure 1: effective PCIe bandwidth and NIC models vs frame size."""
    frames = np.arange(cfg.frame_sizes[0], cfg.frame_sizes[1] + 1)
    eth, link = Ethernet(cfg.eth_gbps), cfg.link
    frame = pd.DataFrame({"frame_bytes": frames})
    for op in ("write", "read"):
        frame[f"{op}_effective_gbps"] = tlp.effective_gbps(link, op, dma_bytes(frames))
    frame["line_rate_gbps"] = eth.frame_gbps(frames)
    facts = []
    for name, label in FIG1_PROFILES:
        profile = load_profile(name)
        frame[profile_column(name)] = nic.evaluate(
            profile, link, eth, fixed_rows(frames)
        ).achievable_gbps
        cross = nic.crossover_frame(profile, link, eth, frames)
        facts.append(
            f"{label}: line rate from {cross} B frames"
            if cross
            else f"{label}: never reaches line rate up to {frames[-1]} B"
        )
    return FigureData(
        "fig1_nic_models",
        "Effective PCIe bandwidth and NIC models (Figure 1 of the paper)",
        "Read where each NIC's curve meets the dashed Ethernet line: from that frame size on, "
        "the NIC forwards at line rate; below it, PCIe limits it (limited_by pcie_up).",
        f"Redrawn from {PAPER}, Figure 1. Per-direction throughput of each NIC/driver model on "
        "a full-duplex port (receive and transmit at once), against the Ethernet frame "
        "throughput. The first three are the paper's (the DPDK driver on an 82599); the fourth "
        "is the testpmd-fwd profile that `dpdk-fwd` and the IOMMU figure evaluate.",
        frame,
        facts,
        {"labels": {profile_column(n): label for n, label in FIG1_PROFILES}},
    )


def dma(cfg: ReportConfig) -> FigureData:
    """Effective DMA bandwidth for read, write and rw across generations and widths."""
    sizes = np.arange(cfg.dma_sizes[0], cfg.dma_sizes[1] + 1)
    frame = pd.DataFrame({"size": sizes})
    for op in tlp.OPS:
        for gen, lanes in DMA_LINKS:
            link = replace(cfg.link, gen=gen, lanes=lanes)
            frame[f"{op}_gen{gen}_x{lanes}_effective_gbps"] = tlp.effective_gbps(link, op, sizes)
    facts = []
    for op in tlp.OPS:
        at = tlp.effective_gbps(cfg.link, op, [64, 256, 1500])
        facts.append(
            f"Gen{cfg.link.gen} x{cfg.link.lanes} {op}: "
            + ", ".join(f"{s} B {v:.1f} Gb/s" for s, v in zip((64, 256, 1500), at, strict=True))
        )
    return FigureData(
        "dma_effective",
        "Effective DMA bandwidth by generation and width",
        "Read the saw-teeth: each drop is one more TLP (writes at each MPS, reads at each "
        "completion boundary), and doubling the generation or the width doubles the bandwidth.",
        f"MPS {cfg.link.mps} B, MRRS {cfg.link.mrrs} B, RCB {cfg.link.rcb} B "
        f"({cfg.link.completion_policy} completions), aligned buffers. rw is the bandwidth of "
        "each direction while reads and writes run at once. Gen3 x16 and Gen4 x8 (and Gen4 x16 "
        "and Gen5 x8) have the same lane rate times width, so their curves coincide: the x16 "
        "links are dashed with markers.",
        frame,
        facts,
    )


def dpdk_forwarding(cfg: ReportConfig) -> FigureData:
    """The DPDK forwarding estimate versus packet rate, and Figure 1's rate at the same frame."""
    # Every command's default frame (64 B, 60 B DMA'd), the rate axis past both limits.
    fwd = forwarding.ForwardingConfig(pkt_bytes=DEFAULT_FRAME_BYTES - FCS_BYTES)
    fig1_mpps = forwarding.forwarding_rate(fwd, cfg.link, Ethernet(cfg.eth_gbps)).max_pps[0]
    top = 1.1 * max(forwarding.estimate(fwd, cfg.link, 1e6).max_pps, fig1_mpps)
    pps = np.linspace(0, np.ceil(top / 5e6) * 5e6, 151)
    est = forwarding.estimate(fwd, cfg.link, pps)
    frame = pd.DataFrame({"pps": pps})
    for metric in forwarding.METRICS:
        frame[f"{metric}_gbps"] = est.metric_gbps(metric)
    frame["pcie_up_gbps"] = est.wire_up_gbps
    frame["pcie_down_gbps"] = est.wire_down_gbps
    wire_frame = fwd.pkt_bytes + FCS_BYTES  # the packet DMA'd, plus the FCS the NIC strips
    at10 = replace(est, pps=np.array(10e6))
    facts = [
        "at 10 Mpps: "
        + ", ".join(f"{m} {float(at10.metric_gbps(m)):.2f} Gb/s" for m in forwarding.METRICS),
        f"the link carries at most {est.max_pps / 1e6:.1f} Mpps of this forwarding; Figure 1's "
        f"XL710 curve at {wire_frame} B frames: {fig1_mpps / 1e6:.1f} Mpps",
    ]
    return FigureData(
        "dpdk_forwarding",
        "DPDK forwarding estimate (VTune recipe)",
        "Read the busier dotted wire line against the link capacity: extended, it meets it at "
        "the most this forwarding can carry (the rate the facts below give).",
        f"Counted data bandwidth per metric (solid) and PCIe wire bandwidth per direction "
        f"(dotted) of {fwd.pkt_bytes} B packets as DMA'd ({wire_frame} B frames with the FCS): "
        "Rx descriptor 32 B, Tx descriptor 16 B, RS threshold 32, Rx free threshold 32. Its "
        "limit is Figure 1's fourth curve at the same frame, the IOMMU figure's '64'; the "
        "dashed verticals mark both limits.",
        frame,
        facts,
        {
            "capacity_gbps": cfg.link.tlp_gbps,
            "pkt_bytes": fwd.pkt_bytes,
            "batch": fwd.batch,
            "limits_mpps": {"link": est.max_pps / 1e6, f"{cfg.eth_gbps:g} GbE": fig1_mpps / 1e6},
        },
    )


def iommu_rings(cfg: ReportConfig) -> FigureData:
    """DPDK forwarding with the IOMMU: packet rate and IOTLB misses vs ring size, 4K vs 2M."""
    platform = load_platform(gen=cfg.link.gen, lanes=cfg.link.lanes)
    device = platform.device.device
    if device is None:  # load_platform refuses a profile without one
        raise ProfileError(f"profile {platform.device.name!r} lacks a [device] table")
    mixes = [parse_mix(m) for m in IOMMU_MIXES]
    rows = ring_sweep(platform, Ethernet(cfg.eth_gbps), mixes, packets=IOMMU_PACKETS)
    at = {(r.mix, r.page, r.rxd): r for r in rows}
    facts = [
        f"{m}: 4 KiB pages, rxd/txd 1024: {at[(m, '4k', 1024)].mpps_iommu:.1f} Mpps "
        f"({at[(m, '4k', 1024)].iotlb_misses_per_pkt:.2f} misses/packet); 128: "
        f"{at[(m, '4k', 128)].mpps_iommu:.1f}; 2 MiB pages: {_hugepage_fact(at[(m, '2m', 1024)])}"
        for m in IOMMU_MIXES
    ]
    return FigureData(
        "iommu_rings",
        "IOMMU and page size in DPDK forwarding",
        "Read the gap between each mix's solid (4 KiB) and dashed (2 MiB) line: the rate the "
        "IOTLB misses cost, and the ring size from which they cost it.",
        "Packet rate with the IOMMU on against the descriptor-ring size, for 4 KiB (solid) and "
        "2 MiB (dashed) pages, and the IOTLB misses per packet where they vary with the ring; "
        "mixes whose curves coincide share one line. Mbuf pool 8192, cache 256, thresholds 32, "
        "DPDK's populate layout (one mbuf per 4 KiB page), IOVA as VA. The NIC is the "
        f"{platform.device.name} profile ({device.name}), the one Figure 1's "
        "fourth curve and `dpdk-fwd` price (a mix named 64 is a 64 B frame); IOTLB, walk "
        "timing and the host's write path are the pcie-bench calibration's (platform e5-v4), "
        "unchanged.",
        _result_frame(rows),
        facts,
        {"iotlb_entries": platform.iommu.iotlb_entries},
    )


def _hugepage_fact(r: IommuResult) -> str:
    """The 2 MiB-page rate beside the `nic` model's, and what holds it there."""
    return (
        f"{r.mpps_iommu:.1f} (nic model {r.nic_mpps:.1f}; limited by "
        f"{' + '.join(r.limited_by) or 'nothing reached'})"
    )


def _result_frame(rows: list[IommuResult]) -> pd.DataFrame:
    """IOMMU results, one row each: lists joined with '+', dicts one column per key."""
    columns: dict[str, list[object]] = {}
    for f in fields(IommuResult):
        values = [getattr(r, f.name) for r in rows]
        if isinstance(values[0], dict):
            for k in sorted({k for v in values for k in v}):
                columns[f"{f.name}_{k}"] = [v.get(k, np.nan) for v in values]
        else:
            columns[f.name] = ["+".join(v) if isinstance(v, list) else v for v in values]
    return pd.DataFrame(columns)


def trace_demand(cfg: ReportConfig) -> FigureData:
    """DPDK forwarding of a bursty IMIX trace: PCIe bandwidth per window against the link."""
    pps = TRACE_MPPS * 1e6 * cfg.eth_gbps / 40
    with tempfile.TemporaryDirectory(prefix="pcieperf-report-") as folder:
        demo = Path(folder) / "demo.pcap"
        mix, eth = parse_mix(TRACE_MIX), Ethernet(cfg.eth_gbps)
        synth(demo, eth=eth, mix=mix, pps=pps, duration_s=0.01, arrival="onoff", burst=256)
        fwd = forwarding.trace_forwarding(
            forwarding.ForwardingConfig(), cfg.link, timeline(demo), TRACE_WINDOW_NS, 1000
        )
    found = fwd.demand
    s = found.summary()
    facts = [
        f"mean up {s['mean_up_gbps']:.1f} Gb/s, down {s['mean_down_gbps']:.1f} Gb/s; peak up "
        f"{s['peak_up_gbps']:.1f}, down {s['peak_down_gbps']:.1f} of {s['capacity_gbps']:.1f}",
        f"{s['windows_over_capacity']} of {s['full_windows']} whole windows exceed the link; "
        "mean Tx "
        f"batch {fwd.mean_batch:.1f} from the arrivals (PMD polling every 1 µs)",
    ]
    return FigureData(
        "trace_demand",
        "Replaying a bursty trace: PCIe bandwidth over time",
        "Read how close the highest steps come to the dashed link capacity: a window above it "
        "is a burst the link cannot carry as it arrives.",
        "DPDK io-forwarding of a synthetic IMIX trace with on/off bursts (256 frames back to "
        "back at line rate, exponential idle gaps), each packet priced at its own size and "
        f"batches taken from the arrivals: wire bandwidth per {TRACE_WINDOW_NS / 1e3:g} µs "
        "window in each direction against the link's TLP capacity. `pcieperf dpdk-fwd --trace "
        "FILE --plot` draws the same for a real capture.",
        demand_frame(found),
        facts,
        {"demand": found, "path": f"synthetic {TRACE_MIX} onoff {pps / 1e6:g} Mpps"},
    )


def demand_frame(found: Demand) -> pd.DataFrame:
    """Up and down Gb/s per window, from the window's start in ms, and the link capacity."""
    t_ms = np.arange(found.up_gbps.size) * found.window_ns / 1e6
    return pd.DataFrame(
        {
            "t_ms": t_ms,
            "up_gbps": found.up_gbps,
            "down_gbps": found.down_gbps,
            "capacity_gbps": np.full(t_ms.size, found.capacity_gbps),
        }
    )


def _frame_index(size: int) -> int:
    """Where a frame size sits in LATENCY_FRAMES."""
    return int(np.searchsorted(LATENCY_FRAMES, size))


def fig2_latency(cfg: ReportConfig) -> FigureData:
    """Paper Figure 2: one packet's median loopback latency vs size, PCIe's part shaded."""
    result = latency.loopback(
        latency.PAPER_PROFILE, LATENCY_FRAMES, link=cfg.link, eth=Ethernet(cfg.eth_gbps)
    )
    total, pcie, share = result.total_ns(), result.kind_ns("pcie"), result.pcie_share()
    low, high = result.total_range_ns
    frame = pd.DataFrame(
        {
            "frame_bytes": LATENCY_FRAMES,
            "total_ns": total,
            "pcie_ns": pcie,
            "pcie_share": share,
            "total_low_ns": low,
            "total_high_ns": high,
        }
    )
    facts = [
        f"{LATENCY_FRAMES[i]} B: {total[i]:.0f} ns, PCIe {pcie[i]:.0f} ns ({100 * share[i]:.1f} %)"
        for i in map(_frame_index, LATENCY_LABELS)
    ]
    return FigureData(
        "fig2_latency",
        "Where a packet's loopback latency goes (Figure 2 of the paper)",
        "Read the blue share: PCIe is most of a kernel-bypass NIC's loopback latency at every "
        "size, less so as the wire's part grows with the frame.",
        f"Redrawn from {PAPER}, Figure 2. PCIe shaded blue; host latency from the shipped "
        "calibration (`pcieperf latency --host DIR` for a measured host), device costs assumed "
        "(docs/latency.md).",
        frame,
        facts,
        {"profile": result.profile, "host": result.host.source},
    )


def concurrency(cfg: ReportConfig) -> FigureData:
    """DMAs in flight that line rate needs, per size and Ethernet rate, against the tags."""
    frame = pd.DataFrame({"frame_bytes": LATENCY_FRAMES})
    facts: list[str] = []
    tags: int | None = 0
    i = _frame_index(128)
    for rate in CONCURRENCY_RATES_GBPS:
        result = latency.loopback(
            latency.PAPER_PROFILE, LATENCY_FRAMES, link=cfg.link, eth=Ethernet(rate)
        )
        frame[f"eth{rate}_inflight_needed_up"] = result.inflight_needed
        frame[f"eth{rate}_tags_needed"] = result.tags_needed
        facts.append(
            f"{rate} GbE, 128 B: {result.inflight_needed[i]:.0f} DMAs in flight per direction, "
            f"{result.tags_needed[i]:.0f} read tags"
        )
        tags = result.tags_available
    return FigureData(
        "concurrency",
        "DMAs in flight that line rate needs",
        "Read where each rate's dashed line crosses the device's tags: below that frame size "
        "the device cannot keep enough reads in flight to reach line rate.",
        "By Little's law (rate times latency), the DMAs each direction keeps in flight to cover "
        f"the packet's PCIe latency at line rate (solid, §2 of {PAPER}) and the read requests "
        "the device holds (dashed), against its tags.",
        frame,
        facts,
        {"tags": tags},
    )


def counters(cfg: ReportConfig) -> FigureData:
    """Measured counters of one stack over time against the forwarding model's prediction."""
    result = cfg.explanation
    assert result is not None  # only listed when the report has a counter file
    verdicts = {v.metric: v for v in result.verdicts}
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "metric": name,
                    "t_s": s.t_s,
                    "measured": s.value,
                    "predicted": verdicts[name].predicted,
                    "unit": s.unit,
                }
            )
            for name, s in result.series.items()
        ],
        ignore_index=True,
    )
    return FigureData(
        "counters",
        f"Measured counters: {result.file}",
        "Read whether each measured line stays inside its grey band: a metric outside it is "
        "one the model does not explain.",
        f"{result.source} samples of {result.stack} against DPDK forwarding at "
        f"{result.pps / 1e6:.3f} Mpps, {frames_text(result.pkt)}, mean batch "
        f"{result.mean_batch:.2f}; the grey band is the prediction ±15 %.",
        frame,
        _counter_facts(result),
        {"explanation": result},
    )


def _counter_facts(result: Explanation) -> list[str]:
    """Each metric per packet with its unit and verdict, then each diagnosis once, with the
    metrics it explains."""
    facts = []
    for v in result.verdicts:
        unit = "B/pkt" if result.series[v.metric].unit == "B/s" else "per packet"
        facts.append(
            f"{v.metric}: measured {decimal(v.measured / result.pps, 3)} {unit}, predicted "
            f"{decimal(v.predicted / result.pps, 3)} {unit} ({v.status})"
        )
    diagnoses: dict[str, list[str]] = {}
    for v in result.verdicts:
        if v.diagnosis:
            diagnoses.setdefault(v.diagnosis, []).append(v.metric)
    return facts + [f"{', '.join(names)}: {text}" for text, names in diagnoses.items()]


CAPTURE_FRAMES = np.arange(64, 1519, 2)  # the study's 64-512 B and on to full-size frames
CAPTURE_ETH = 10  # the study's 2 x 10 GbE ports of an XL710


def capture(cfg: ReportConfig) -> FigureData:
    """DPDK packet capture (the pdump study): capture and forwarding Gb/s against frame size,
    one line per design, on the study's setup, and this machine's runs against the model."""
    cal = load_calibration(cfg.capture_calibration)
    mixes = [PacketMix.fixed(int(f)) for f in CAPTURE_FRAMES]
    frame = pd.DataFrame({"frame_bytes": CAPTURE_FRAMES})
    facts = []
    for design in DESIGNS:
        found = evaluate_capture(cal, CaptureSetup(design=design), mixes, eth=CAPTURE_ETH)
        v, column = found.values, design.replace("-", "_")
        for bound in ("", "_low", "_high"):  # `capture model`'s names
            frame[f"{column}_capture_gbps{bound}"] = v[f"capture_gbps{bound}"]
        frame[f"{column}_fwd_gbps"] = v["fwd_gbps"]
        facts.append(_capture_fact(design, frame, column, found.limited_by[0]))
    runs = cfg.capture_runs
    if runs is None and runs_file(cfg.capture_calibration).is_file():
        runs = pd.read_csv(
            runs_file(cfg.capture_calibration), keep_default_na=False, na_values=["", "NaN"]
        )
    measured = None if runs is None or runs.empty else _capture_runs(cal, runs)
    return FigureData(
        "capture",
        "DPDK packet capture: will it keep up, and what does it cost the forwarding?",
        "Read where each design's capture line reaches the forwarded rate: below that frame "
        "size the capture core cannot write every copy and the rest are dropped at the ring.",
        "The capture model (`pcieperf capture model`) on the pdump study's setup: testpmd "
        f"forwarding between two {CAPTURE_ETH} GbE ports of an XL710 at line rate on 2 lcores, "
        "Rx and Tx of one port copied (one copy per forwarded packet) and written to /dev/null "
        "by one capture core; Gb/s count wire bits, as the study does. Costs are this machine's "
        f"calibration ({cal.meta.measured_on}, {len(cal.meta.runs)} runs); bands its spread "
        "(and, for contiguous batching, the unknown share of fixed costs saved per buffer). "
        "Right: the calibration's runs (net_null on this machine), measured against the "
        "model's prediction for each at its own CPU shares.",
        frame,
        facts,
        {"runs": measured},
    )


def _capture_fact(design: str, frame: pd.DataFrame, column: str, limit: str) -> str:
    """Where a design captures everything, and what it does at 64 B."""
    gbps, fwd = frame[f"{column}_capture_gbps"], frame[f"{column}_fwd_gbps"]
    full = frame["frame_bytes"][gbps >= fwd * (1 - 1e-9)]
    start = f"from {int(full.iloc[0])} B frames" if len(full) else "at no frame size up to 1518 B"
    return (
        f"{design}: captures every copy {start}; at 64 B {gbps.iloc[0]:.1f} Gb/s of "
        f"{fwd.iloc[0]:.1f} forwarded ({limit})"
    )


def _capture_runs(cal: object, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs' measured capture rate beside the calibration's prediction of each."""
    prepared = capture_fit.prepared(runs)
    predicted = capture_fit.predict(cal, prepared)  # type: ignore[arg-type]  # runs' frame
    return pd.DataFrame(
        {
            "frame_bytes": prepared["frame_bytes"],
            "writer": prepared["writer"],
            "sink": prepared["sink"],
            "capture_mpps": prepared["capture_pps"] / 1e6,
            "predicted_mpps": predicted["capture_pps"] / 1e6,
        }
    )


MAKERS: tuple[Callable[[ReportConfig], FigureData], ...] = (
    fig1,
    dma,
    dpdk_forwarding,
    iommu_rings,
    trace_demand,
    fig2_latency,
    concurrency,
    capture,
)
"""The model figures, in page order (the counter figure follows when there is a file)."""

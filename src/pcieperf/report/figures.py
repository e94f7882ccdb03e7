"""The default report: figures (PNG + SVG), their data (CSV) and one self-contained index.html.

Figures: the paper's Figure 1 (effective PCIe bandwidth and three NIC models against Ethernet),
DMA read/write/rw effective bandwidth across generations and widths, the DPDK forwarding
estimate versus packet rate, DPDK forwarding with the IOMMU against ring and page size, the
PCIe bandwidth a bursty trace needs over time, the paper's Figure 2 (where a packet's loopback
latency goes) with the DMAs in flight that line rate needs, and (given a counter file) measured
counters against the model's prediction band.
"""

from __future__ import annotations

import csv
import html
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pcieperf import progress
from pcieperf.dpdk import forwarding, iommu
from pcieperf.errors import UsageError, require_plot_file
from pcieperf.measure.store import Store
from pcieperf.net import trace
from pcieperf.net.ethernet import Ethernet, dma_bytes, parse_mix
from pcieperf.net.trace import Demand
from pcieperf.nic import latency, nic
from pcieperf.pcie import tlp
from pcieperf.pcie.link import Link
from pcieperf.pciebench.bench import CACHE_STATES
from pcieperf.pciebench.validate import Matched

if TYPE_CHECKING:
    from pcieperf.dpdk.iommu import Advice
    from pcieperf.measure.explain import Explanation

FIG1_PROFILES = (
    ("simple", "Simple NIC"),
    ("kernel", "Modern NIC (kernel driver)"),
    ("dpdk", "Modern NIC (DPDK driver)"),
    (iommu.DEFAULT_PROFILE, "DPDK forwarding (XL710; the IOMMU figure's NIC)"),
)
DMA_LINKS = ((3, 8), (3, 16), (4, 8), (4, 16), (5, 8), (5, 16))


@dataclass(frozen=True)
class ReportConfig:
    """What the report evaluates; the defaults are the paper's Gen3 x8 with 40 GbE."""

    link: Link = field(default_factory=Link)
    eth_gbps: float = 40
    frame_sizes: tuple[int, int] = (64, 1500)
    dma_sizes: tuple[int, int] = (64, 2048)
    max_mpps: float = 15.0
    explanation: Explanation | None = None  # measured counters explained, for their section


@dataclass
class Figure:
    """One written figure: its files and the facts worth quoting beside it."""

    slug: str
    title: str
    caption: str
    facts: list[str]


def _save(fig: plt.Figure, out: Path, slug: str) -> None:
    for ext in ("png", "svg"):
        fig.savefig(
            out / f"{slug}.{ext}", dpi=120, metadata={"Date": None} if ext == "svg" else None
        )
    plt.close(fig)


def _write_csv(path: Path, header: Sequence[str], columns: Sequence[np.ndarray]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(zip(*(np.asarray(c).tolist() for c in columns), strict=True))


def _write_plot(fig: plt.Figure, out: Path, dpi: float | None = None) -> Path:
    """Lay out, save and close a figure; returns where it went."""
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def figure_paper_fig1(cfg: ReportConfig, out: Path) -> Figure:
    """Paper Figure 1: effective PCIe bandwidth and NIC models vs frame size."""
    frames = np.arange(cfg.frame_sizes[0], cfg.frame_sizes[1] + 1)
    eth = Ethernet(cfg.eth_gbps)
    link = cfg.link
    effective = {op: tlp.effective_gbps(link, op, dma_bytes(frames)) for op in ("write", "read")}
    line = eth.frame_gbps(frames)
    curves, facts = {}, []
    for name, label in FIG1_PROFILES:
        profile = nic.load_profile(name)
        result = nic.evaluate_sizes(profile, link, eth, frames)
        curves[label] = result.achievable_gbps
        cross = nic.crossover_frame(profile, link, eth, frames)
        facts.append(
            f"{label}: line rate from {cross} B frames"
            if cross
            else f"{label}: never reaches line rate up to {frames[-1]} B"
        )
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for op, style in (("write", "-"), ("read", ":")):
        ax.plot(frames, effective[op], style, color="black", label=f"Effective PCIe BW ({op})")
    ax.plot(frames, line, label=f"{cfg.eth_gbps:g}G Ethernet", color="grey", linestyle="--")
    for label, values in curves.items():
        ax.plot(frames, values, label=label)
    ax.set(
        xlabel="Frame size (bytes)",
        ylabel="Bandwidth (Gb/s)",
        title=f"PCIe Gen{link.gen} x{link.lanes}, MPS {link.mps}, MRRS {link.mrrs}",
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    _save(fig, out, "fig1_nic_models")
    _write_csv(
        out / "fig1_nic_models.csv",
        ["frame_bytes", "effective_write_gbps", "effective_read_gbps", "ethernet_gbps", *curves],
        [frames, effective["write"], effective["read"], line, *curves.values()],
    )
    return Figure(
        "fig1_nic_models",
        "Effective PCIe bandwidth and NIC models (paper Figure 1)",
        "Per-direction throughput of each NIC/driver model on a full-duplex port "
        "(receive and transmit at once), against the Ethernet frame throughput. The first "
        "three are the paper's (the DPDK driver on an 82599); the fourth is the testpmd-fwd "
        "profile that `dpdk-fwd` and the IOMMU figure evaluate.",
        facts,
    )


def figure_dma(cfg: ReportConfig, out: Path) -> Figure:
    """Effective DMA bandwidth for read, write and rw across generations and widths."""
    sizes = np.arange(cfg.dma_sizes[0], cfg.dma_sizes[1] + 1)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5), sharey=True)
    header, columns, facts = ["size_bytes"], [sizes], []
    for ax, op in zip(axes, tlp.OPS, strict=True):
        for gen, lanes in DMA_LINKS:
            link = replace(cfg.link, gen=gen, lanes=lanes)
            eff = tlp.effective_gbps(link, op, sizes)
            ax.plot(sizes, eff, label=f"Gen{gen} x{lanes}", linewidth=1)
            header.append(f"{op}_gen{gen}_x{lanes}_gbps")
            columns.append(eff)
        ax.set(title=f"DMA {op}", xlabel="Transfer size (bytes)", yscale="log")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("Effective bandwidth (Gb/s)")
    axes[-1].legend(fontsize=8)
    _save(fig, out, "dma_effective")
    _write_csv(out / "dma_effective.csv", header, columns)
    for op in tlp.OPS:
        at = tlp.effective_gbps(cfg.link, op, [64, 256, 1500])
        facts.append(
            f"Gen{cfg.link.gen} x{cfg.link.lanes} {op}: "
            + ", ".join(f"{s} B {v:.1f} Gb/s" for s, v in zip((64, 256, 1500), at, strict=True))
        )
    return Figure(
        "dma_effective",
        "Effective DMA bandwidth by generation and width",
        f"MPS {cfg.link.mps}, MRRS {cfg.link.mrrs}, RCB {cfg.link.rcb} "
        f"({cfg.link.completion_policy} completions), aligned buffers. rw is the "
        "bandwidth of each direction while reads and writes run at once.",
        facts,
    )


def figure_dpdk(cfg: ReportConfig, out: Path) -> Figure:
    """The DPDK forwarding estimate versus packet rate."""
    pps = np.linspace(0, cfg.max_mpps * 1e6, 151)
    fwd = forwarding.ForwardingConfig()
    est = forwarding.estimate(fwd, cfg.link, pps)
    fig, (ax, ax_out) = plt.subplots(1, 2, figsize=(12, 4.8))
    columns = {f"{m}_gbps": est.metric_gbps(m) for m in forwarding.METRICS}
    columns["pcie_up_wire_gbps"] = est.wire_up_gbps
    columns["pcie_down_wire_gbps"] = est.wire_down_gbps
    for name, values in columns.items():
        if name.startswith("outbound"):
            ax_out.plot(pps / 1e6, values * 1e3, label=name.removesuffix("_gbps").replace("_", " "))
            continue
        style = ":" if "wire" in name else "-"
        ax.plot(pps / 1e6, values, style, label=name.removesuffix("_gbps").replace("_", " "))
    ax.axhline(cfg.link.tlp_gbps, color="black", linewidth=0.8, label="link capacity (TLPs)")
    ax.set(
        xlabel="Packet rate (Mpps)",
        ylabel="Bandwidth (Gb/s)",
        title=f"DPDK forwarding, {fwd.pkt_bytes} B packets, batch {fwd.batch:g}",
    )
    ax_out.set(xlabel="Packet rate (Mpps)", ylabel="Bandwidth (Mb/s)", title="Outbound (MMIO)")
    for a in (ax, ax_out):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    _save(fig, out, "dpdk_forwarding")
    _write_csv(out / "dpdk_forwarding.csv", ["pps", *columns], [pps, *columns.values()])
    at10 = replace(est, pps=np.array(10e6))
    facts = [
        "at 10 Mpps: "
        + ", ".join(f"{m} {float(at10.metric_gbps(m)):.2f} Gb/s" for m in forwarding.METRICS),
        f"the link carries at most {est.max_pps / 1e6:.1f} Mpps of this forwarding",
    ]
    return Figure(
        "dpdk_forwarding",
        "DPDK forwarding estimate (VTune recipe)",
        "Counted data bandwidth per metric (solid) and PCIe wire bandwidth per "
        "direction (dotted); Rx descriptor 32 B, Tx descriptor 16 B, RS threshold 32, "
        "Rx free threshold 32.",
        facts,
    )


IOMMU_MIXES = ("64", "128", "256", "imix")
IOMMU_PACKETS = 100_000  # per point: +-1 % noise, 112 points in a few seconds


def figure_iommu(cfg: ReportConfig, out: Path) -> Figure:
    """DPDK forwarding with the IOMMU: packet rate and IOTLB misses vs ring size, 4K vs 2M."""
    platform = iommu.load_platform(gen=cfg.link.gen, lanes=cfg.link.lanes)
    mixes = [parse_mix(m) for m in IOMMU_MIXES]
    rows = iommu.ring_sweep(platform, Ethernet(cfg.eth_gbps), mixes, packets=IOMMU_PACKETS)
    fig, (ax, ax_miss) = plt.subplots(1, 2, figsize=(12, 4.8))
    for color, mix in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], mixes, strict=False):
        for page, style in (("4k", "-o"), ("2m", "--s")):
            sel = [r for r in rows if r.mix == mix.name and r.page == page]
            rings = [r.rxd for r in sel]
            ax.plot(
                rings, [r.mpps_iommu for r in sel], style, color=color, label=f"{mix.name} {page}"
            )
            if page == "4k":
                ax_miss.plot(
                    rings, [r.iotlb_misses_per_pkt for r in sel], style, color=color, label=mix.name
                )
    for a, ylabel in ((ax, "Forwarded Mpps (IOMMU on)"), (ax_miss, "IOTLB misses per packet")):
        a.set(xscale="log", xlabel="rxd = txd", ylabel=ylabel)
        a.set_xticks(iommu.RING_SWEEP, [str(r) for r in iommu.RING_SWEEP])
        a.grid(alpha=0.3)
        a.legend(fontsize=8, ncol=2)
    ax.set_title(f"DPDK io-forward, {cfg.eth_gbps:g} GbE, Gen{cfg.link.gen} x{cfg.link.lanes}")
    ax_miss.set_title(f"4 KiB pages, {platform.iommu.iotlb_entries}-entry IOTLB")
    ax_miss.set_ylim(bottom=0)
    _save(fig, out, "iommu_rings")
    header, columns = _result_columns(rows)
    _write_csv(out / "iommu_rings.csv", header, columns)
    at = {(r.mix, r.page, r.rxd): r for r in rows}
    facts = [
        f"{m}: 4 KiB pages, rxd/txd 1024: {at[(m, '4k', 1024)].mpps_iommu:.1f} Mpps "
        f"({at[(m, '4k', 1024)].iotlb_misses_per_pkt:.2f} misses/packet); 128: "
        f"{at[(m, '4k', 128)].mpps_iommu:.1f}; 2 MiB pages: {_hugepage_fact(at[(m, '2m', 1024)])}"
        for m in IOMMU_MIXES
    ]
    return Figure(
        "iommu_rings",
        "IOMMU and page size in DPDK forwarding",
        "Packet rate with the IOMMU on (left) and IOTLB misses per packet (right) against the "
        "descriptor-ring size, for 4 KiB (solid) and 2 MiB (dashed) pages; mbuf pool 8192, "
        "cache 256, thresholds 32, DPDK's populate layout (one mbuf per 4 KiB page), IOVA as "
        f"VA. The NIC is the {platform.device.name} profile ({platform.device.device.name}), "
        "the one Figure 1's fourth curve and `dpdk-fwd` price; IOTLB, walk timing and the "
        "host's write path are the pcie-bench calibration's (platform e5-v4), unchanged.",
        facts,
    )


def _hugepage_fact(r: iommu.IommuResult) -> str:
    """The 2 MiB-page rate beside the `nic` model's, and what holds it there."""
    return (
        f"{r.mpps_iommu:.1f} (nic model {r.nic_mpps:.1f}; limited by "
        f"{' + '.join(r.limited_by) or 'nothing reached'})"
    )


def _result_columns(rows: list[iommu.IommuResult]) -> tuple[list[str], list[np.ndarray]]:
    """CSV columns of IOMMU results: lists joined with '+', dicts one column per key."""
    header: list[str] = []
    columns: list[np.ndarray] = []
    for f in fields(iommu.IommuResult):
        values = [getattr(r, f.name) for r in rows]
        if isinstance(values[0], dict):
            keys = sorted({k for v in values for k in v})
            header += [f"{f.name}_{k}" for k in keys]
            columns += [np.array([v.get(k, np.nan) for v in values]) for k in keys]
        else:
            header.append(f.name)
            columns.append(np.array(["+".join(v) if isinstance(v, list) else v for v in values]))
    return header, columns


TRACE_MIX = "imix"
TRACE_MPPS = 11.0  # on/off IMIX at 40 GbE: 85 % of line rate on average, line rate in bursts
TRACE_WINDOW_NS = 50_000


def _draw_demand(ax: plt.Axes, found: Demand) -> None:
    """Up and down Gb/s per window against the link's capacity."""
    t_ms = (np.arange(found.up_gbps.size) * found.window_ns) / 1e6
    ax.step(t_ms, found.up_gbps, where="post", label="device to host (up)")
    ax.step(t_ms, found.down_gbps, where="post", label="host to device (down)")
    ax.axhline(found.capacity_gbps, color="black", linestyle="--", label="link capacity")
    ax.set(
        xlabel="time (ms)",
        ylabel=f"PCIe Gb/s per {found.window_ns / 1e3:g} us",
        ylim=(0, max(found.capacity_gbps, found.up_gbps.max(), found.down_gbps.max()) * 1.1),
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def figure_trace(cfg: ReportConfig, out: Path) -> Figure:
    """DPDK forwarding of a bursty IMIX trace: PCIe bandwidth per window against the link."""
    eth = Ethernet(cfg.eth_gbps)
    demo = trace.synthetic(
        eth=eth,
        mix=parse_mix(TRACE_MIX),
        pps=TRACE_MPPS * 1e6 * cfg.eth_gbps / 40,
        duration_s=0.01,
        arrival="onoff",
        burst=256,
    )
    fwd = forwarding.trace_forwarding(
        forwarding.ForwardingConfig(), cfg.link, demo, TRACE_WINDOW_NS, 1000
    )
    found = fwd.demand
    fig, ax = plt.subplots(figsize=(10, 4.2))
    _draw_demand(ax, found)
    ax.set_title(f"{demo.path} at {cfg.eth_gbps:g} GbE, Gen{cfg.link.gen} x{cfg.link.lanes}")
    _save(fig, out, "trace_demand")
    t_ms = np.arange(found.up_gbps.size) * found.window_ns / 1e6
    _write_csv(
        out / "trace_demand.csv",
        ["t_ms", "up_gbps", "down_gbps", "capacity_gbps"],
        [t_ms, found.up_gbps, found.down_gbps, np.full(t_ms.size, found.capacity_gbps)],
    )
    s = found.summary()
    facts = [
        f"mean up {s['mean_up_gbps']:.1f} Gb/s, down {s['mean_down_gbps']:.1f} Gb/s; peak up "
        f"{s['peak_up_gbps']:.1f}, down {s['peak_down_gbps']:.1f} of {s['capacity_gbps']:.1f}",
        f"{s['windows_over_capacity']} of {s['windows']} windows exceed the link; mean Tx "
        f"batch {fwd.mean_batch:.1f} from the arrivals (PMD polling every 1 us)",
    ]
    return Figure(
        "trace_demand",
        "Replaying a bursty trace: PCIe bandwidth over time",
        "DPDK io-forwarding of a synthetic IMIX trace with on/off bursts (256 frames back to "
        "back at line rate, exponential idle gaps), each packet priced at its own size and "
        "batches taken from the arrivals: wire bandwidth per 50 us window in each direction "
        "against the link's TLP capacity. `pcieperf dpdk-fwd --trace FILE --plot` draws the "
        "same for a real capture.",
        facts,
    )


def plot_trace_demand(found: Demand, out: Path, title: str, force: bool = False) -> Path:
    """The bandwidth a trace needs per window against the link (`nic`/`dpdk-fwd --plot`)."""
    require_plot_file(out, force)
    fig, ax = plt.subplots(figsize=(10, 4.2))
    _draw_demand(ax, found)
    ax.set_title(title)
    return _write_plot(fig, out)


LATENCY_FRAMES = np.arange(64, 1501, 4)  # the paper's Figure 2 spans 64 to 1500 B
LATENCY_LABELS = (64, 512, 1500)  # sizes whose PCIe share is written on the figure
CONCURRENCY_RATES_GBPS = (10, 40, 100, 400)


def _frame_index(size: int) -> int:
    """Where a frame size sits in LATENCY_FRAMES."""
    return int(np.searchsorted(LATENCY_FRAMES, size))


def figure_latency(cfg: ReportConfig, out: Path) -> Figure:
    """Paper Figure 2: one packet's median loopback latency vs size, PCIe's part shaded."""
    result = latency.loopback(
        latency.DEFAULT_PROFILE, LATENCY_FRAMES, link=cfg.link, eth=Ethernet(cfg.eth_gbps)
    )
    total, pcie, share = result.total_ns(), result.kind_ns("pcie"), result.pcie_share()
    low, high = result.total_range_ns
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.fill_between(LATENCY_FRAMES, 0, pcie, color="tab:blue", alpha=0.35, label="PCIe")
    ax.fill_between(
        LATENCY_FRAMES, pcie, total, color="tab:orange", alpha=0.35, label="NIC, wire, host"
    )
    ax.plot(LATENCY_FRAMES, total, color="black", label="median latency")
    ax.plot(LATENCY_FRAMES, high, ":", color="grey", label="assumptions at their high end")
    for size in LATENCY_LABELS:
        i = _frame_index(size)
        ax.annotate(
            f"{100 * share[i]:.1f}%",
            (size, pcie[i]),
            textcoords="offset points",
            xytext=(0, -14),
            ha="center",
            fontsize=9,
        )
    ax.set(
        xlabel="Frame size (bytes)",
        ylabel="Median latency (ns)",
        ylim=(0, None),
        title=f"{result.profile} NIC loopback, {cfg.eth_gbps:g} GbE; host: {result.host.source}",
    )
    ax.title.set_fontsize(8)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    _save(fig, out, "fig2_latency")
    _write_csv(
        out / "fig2_latency.csv",
        ["frame_bytes", "total_ns", "pcie_ns", "pcie_share", "total_low_ns", "total_high_ns"],
        [LATENCY_FRAMES, total, pcie, share, low, high],
    )
    at = [_frame_index(size) for size in LATENCY_LABELS]
    facts = [
        f"{LATENCY_FRAMES[i]} B: {total[i]:.0f} ns, PCIe {pcie[i]:.0f} ns ({100 * share[i]:.1f} %)"
        for i in at
    ]
    return Figure(
        "fig2_latency",
        "Where a packet's loopback latency goes (paper Figure 2)",
        "PCIe (shaded blue) is most of a kernel-bypass NIC's loopback latency, its share "
        "falling with size as the wire's grows; host latency from the shipped calibration "
        "(`pcieperf latency --host DIR` for a measured host), device costs assumed "
        "(docs/latency.md).",
        facts,
    )


def figure_concurrency(cfg: ReportConfig, out: Path) -> Figure:
    """DMAs in flight that line rate needs, per size and Ethernet rate, against the tags."""
    fig, ax = plt.subplots(figsize=(8, 4.8))
    header, columns, facts, tags = ["frame_bytes"], [LATENCY_FRAMES], [], None
    for rate in CONCURRENCY_RATES_GBPS:
        result = latency.loopback(
            latency.DEFAULT_PROFILE, LATENCY_FRAMES, link=cfg.link, eth=Ethernet(rate)
        )
        (line,) = ax.plot(LATENCY_FRAMES, result.inflight_needed, label=f"{rate} GbE")
        ax.plot(LATENCY_FRAMES, result.tags_needed, "--", color=line.get_color(), linewidth=1)
        header += [f"inflight_needed_{rate}g", f"tags_needed_{rate}g"]
        columns += [result.inflight_needed, result.tags_needed]
        i = _frame_index(128)
        facts.append(
            f"{rate} GbE, 128 B: {result.inflight_needed[i]:.0f} DMAs in flight per direction, "
            f"{result.tags_needed[i]:.0f} read tags"
        )
        tags = result.tags_available
    ax.axhline(tags, color="black", linewidth=0.8, label=f"device tags ({tags})")
    ax.set(
        xlabel="Frame size (bytes)",
        ylabel="In flight at line rate",
        yscale="log",
        title="In-flight DMAs per direction (solid) and read tags (dashed) at line rate",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    _save(fig, out, "concurrency")
    _write_csv(out / "concurrency.csv", header, columns)
    return Figure(
        "concurrency",
        "DMAs in flight that line rate needs",
        "By Little's law (rate x latency), the DMAs each direction keeps in flight to cover "
        "the packet's PCIe latency at line rate (solid, the paper's §2 rule) and the read "
        "requests the device holds (dashed), against its tags.",
        facts,
    )


FIGURES: tuple[Callable[[ReportConfig, Path], Figure], ...] = (
    figure_paper_fig1,
    figure_dma,
    figure_dpdk,
    figure_iommu,
    figure_trace,
    figure_latency,
    figure_concurrency,
)


def _draw_explanation(result: Explanation) -> plt.Figure:
    """One panel per metric: measured over time, the prediction and its +-tolerance band."""
    from pcieperf.measure.explain import TOLERANCE

    verdicts = {v.metric: v for v in result.verdicts}
    names = list(result.series)
    fig, axes = plt.subplots(
        len(names), 1, figsize=(10, 1.9 * len(names) + 0.8), sharex=True, squeeze=False
    )
    for ax, name in zip(axes[:, 0], names, strict=True):
        series, verdict = result.series[name], verdicts[name]
        scale, unit = (8 / 1e9, "Gb/s") if series.unit == "B/s" else (1e-6, "M/s")
        low, high = verdict.predicted * (1 - TOLERANCE), verdict.predicted * (1 + TOLERANCE)
        ax.axhspan(low * scale, high * scale, color="grey", alpha=0.25, label="prediction ±15 %")
        ax.axhline(verdict.predicted * scale, color="black", linestyle="--", label="predicted")
        ax.plot(series.t_s, series.value * scale, marker=".", label="measured")
        if max(high, float(series.value.max(initial=0))) <= 0:
            ax.set_ylim(-0.05, 1)  # all zero: a readable axis, not matplotlib's 1e-17 ticks
        colour = "black" if verdict.status == "agrees" else "tab:red"
        ax.set_title(f"{name}: {verdict.status}", fontsize=9, loc="left", color=colour)
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"{result.source}, {result.stack}: measured vs predicted", fontsize=10)
    fig.tight_layout()
    return fig


def plot_explanation(result: Explanation, out: Path, force: bool = False) -> Path:
    """`explain --plot`: measured vs predicted over time; returns the file."""
    require_plot_file(out, force)
    return _write_plot(_draw_explanation(result), out, dpi=120)


def figure_counters(cfg: ReportConfig, out: Path) -> Figure:
    """Measured counters of one stack over time against the forwarding model's band."""
    result = cfg.explanation
    assert result is not None  # only listed when the report has a counter file
    _save(_draw_explanation(result), out, "counters")
    names = list(result.series)
    verdicts = {v.metric: v for v in result.verdicts}
    _write_csv(
        out / "counters.csv",
        ["metric", "t_s", "measured", "predicted", "unit"],
        [
            np.concatenate([[n] * result.series[n].t_s.size for n in names]),
            np.concatenate([result.series[n].t_s for n in names]),
            np.concatenate([result.series[n].value for n in names]),
            np.concatenate(
                [np.full(result.series[n].t_s.size, verdicts[n].predicted) for n in names]
            ),
            np.concatenate([[result.series[n].unit] * result.series[n].t_s.size for n in names]),
        ],
    )
    facts = [
        f"{v.metric}: measured {v.measured / result.pps:.3f}, predicted "
        f"{v.predicted / result.pps:.3f} per packet ({v.status})"
        + (f" — {v.diagnosis}" if v.diagnosis else "")
        for v in result.verdicts
    ]
    return Figure(
        "counters",
        f"Measured counters: {result.file}",
        f"{result.source} samples of {result.stack} against DPDK forwarding at "
        f"{result.pps / 1e6:.3f} Mpps, {result.pkt} B packets, mean batch "
        f"{result.mean_batch:.2f}; the grey band is the prediction ±15 %.",
        facts,
    )


def _html(cfg: ReportConfig, figures: list[Figure], out: Path) -> str:
    link = cfg.link
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>pcieperf report</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "figure{margin:1em 0}svg{max-width:100%;height:auto}"
        "figcaption{color:#444}</style></head><body>",
        "<h1>pcieperf report</h1>",
        f"<p>PCIe Gen{link.gen} x{link.lanes}: raw {link.raw_gbps:.2f} Gb/s, after encoding "
        f"{link.encoded_gbps:.2f} Gb/s, usable by TLPs {link.tlp_gbps:.2f} Gb/s per direction; "
        f"MPS {link.mps}, MRRS {link.mrrs}, RCB {link.rcb}; {cfg.eth_gbps:g} GbE.</p>",
    ]
    for fig in figures:
        svg = (out / f"{fig.slug}.svg").read_text(encoding="utf-8")
        svg = svg[svg.index("<svg") :]
        facts = "".join(f"<li>{html.escape(f)}</li>" for f in fig.facts)
        parts.append(
            f"<h2>{html.escape(fig.title)}</h2><figure>{svg}<figcaption>"
            f"{html.escape(fig.caption)} Data: <a href='{fig.slug}.csv'>{fig.slug}.csv</a>"
            f"</figcaption></figure><ul>{facts}</ul>"
        )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(cfg: ReportConfig, out: Path) -> Path:
    """Write every figure, its CSV and index.html into `out`; returns the index path.

    Everything is written into a temporary folder beside `out` first and moved in only once
    the whole report succeeded, so a failure leaves no half-written report behind.
    """
    plt.rcParams["svg.hashsalt"] = "pcieperf"  # stable SVG ids across runs
    makers = FIGURES + ((figure_counters,) if cfg.explanation else ())
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.absolute().parent) as tmp:
        work = Path(tmp)
        figures = [make(cfg, work) for make in progress.wrap(makers, "report", "figure")]
        (work / "index.html").write_text(_html(cfg, figures, work), encoding="utf-8")
        out.mkdir(exist_ok=True)
        for made in sorted(work.iterdir()):
            made.replace(out / made.name)
    return out / "index.html"


# ---------------------------------------------------------------------------------------------
# Measured data (pcieperf data plot)

MEASURED_VIEWS = ("size", "window", "offset", "cdf")


def plot_measured(
    store: Store,
    systems: list[str],
    view: str,
    out: Path,
    size: int = 64,
    direction: str = "rd",
    force: bool = False,
) -> Path:
    """Plot one view of measured pcie-bench data, one line per system; returns the file."""
    if view not in MEASURED_VIEWS:
        raise UsageError(
            f"plot view {view!r} is not allowed; choose one of {', '.join(MEASURED_VIEWS)}"
        )
    if direction not in ("rd", "wr"):
        raise UsageError(f"direction {direction!r} is not allowed; choose rd or wr")
    require_plot_file(out, force)
    names = [store.resolve(s) for s in systems] or store.system_names()
    if not names:
        raise UsageError(f"the store {store.path} holds no systems; run `pcieperf data import`")
    draw = {"size": _plot_size, "window": _plot_window, "offset": _plot_offset, "cdf": _plot_cdf}[
        view
    ]
    return _write_plot(draw(store, names, size, direction), out, dpi=120)


def _short(name: str) -> str:
    return name.split("_", 1)[-1]


def _plot_size(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
    for ax, test in zip(axes, ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW"), strict=True):
        for name in names:
            rows = store.rows("bw", name, test=test, file="bw_dma_sz_sweep.csv")
            ax.plot(rows["size_bytes"], rows["bw_gbps"], marker=".", label=_short(name))
        ax.set(title=test, xlabel="Transfer size (bytes)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    axes[0].legend(fontsize=7)
    return fig


def _plot_window(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    file = f"bw_dma_win_sweep_{direction}_rnd_{size}.csv"
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.5), sharey=True)
    measured = {name: store.rows("bw", name, file=file) for name in names}
    for ax, cache in zip(axes, CACHE_STATES, strict=True):
        for name, rows in measured.items():
            keep = rows["cache"] == cache
            ax.plot(
                rows["window_bytes"][keep], rows["bw_gbps"][keep], marker=".", label=_short(name)
            )
        ax.set(title=f"{cache}, {size} B random {direction}", xlabel="Window (bytes)", xscale="log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    axes[0].legend(fontsize=7)
    return fig


def _plot_offset(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for name in names:
        rows = store.rows("bw", name, file=f"bw_dma_off_{direction}.csv")
        keep = rows["size_bytes"] == size
        half = int(keep.sum()) // 2  # the host-offset sweep comes first, then the device one
        ho, do, bw = rows["host_offset"][keep], rows["dev_offset"][keep], rows["bw_gbps"][keep]
        axes[0].plot(ho[:half], bw[:half], marker=".", label=_short(name))
        axes[1].plot(do[half:], bw[half:], marker=".", label=_short(name))
    for ax, what in zip(axes, ("Host offset", "Device offset"), strict=True):
        ax.set(title=f"{what} sweep, {size} B {direction}", xlabel=f"{what} (bytes)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    axes[0].legend(fontsize=7)
    return fig


def _plot_cdf(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 5))
    for name in names:
        details = store.rows("lat", name, file="lat_dma_details.csv")
        cdf = store.rows("cdf", name, file="lat_dma_details_cdf.csv")
        for section in range(details["test"].size):
            if details["size_bytes"][section] != size:
                continue
            keep = cdf["section"] == section
            label = (
                f"{_short(name)} {details['test'][section]} "
                f"{details['window_bytes'][section] // 1024} KiB "
                f"{details['cache'][section]}"
            )
            ax.plot(cdf["ns"][keep], cdf["cdf"][keep], label=label)
    ax.set(title=f"DMA latency CDF, {size} B", xlabel="Latency (ns)", ylabel="CDF", xscale="log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    return fig


# ---------------------------------------------------------------------------------------------
# Validation (pcieperf validate --plot)


def plot_validation(matched: Matched, out: Path, force: bool = False) -> Path:
    """Measured vs predicted bandwidth, one colour per result-file family; returns the file."""
    require_plot_file(out, force)
    fig, ax = plt.subplots(figsize=(6, 6))
    families = np.array([f.rsplit("_", 1)[0] if "win_sweep" in f else f for f in matched.file])
    for family in np.unique(families):
        keep = families == family
        ax.scatter(matched.measured[keep], matched.predicted[keep], s=8, label=family)
    top = float(max(matched.measured.max(), matched.predicted.max())) * 1.05
    ax.plot([0, top], [0, top], color="black", linewidth=0.8)
    ax.set(xlabel="measured Gb/s", ylabel="predicted Gb/s", xlim=(0, top), ylim=(0, top))
    ax.set_title(f"MAPE {100 * matched.error.mean():.1f} % over {matched.error.size} points")
    ax.legend(fontsize=6)
    return _write_plot(fig, out, dpi=120)


def plot_advice(advice: Advice, out: Path, force: bool = False) -> Path:
    """Bar chart of `iommu advise`'s sweep: packet rate per single change, target marked."""
    require_plot_file(out, force)
    options = advice.options
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(options) + 1.8))
    labels = ["current"] + [c.description for c, _ in options]
    rates = [advice.current.mpps_iommu] + [r.mpps_iommu for _, r in options]
    colors = ["grey"] + ["tab:green" if advice.choice is c else "tab:blue" for c, _ in options]
    ax.barh(labels, rates, color=colors)
    ax.axvline(advice.target_mpps, color="black", linestyle="--", label="without IOMMU")
    ax.invert_yaxis()
    ax.set(xlabel="Forwarded Mpps (IOMMU on)", title="iommu advise: single changes")
    ax.legend(fontsize=8)
    return _write_plot(fig, out)

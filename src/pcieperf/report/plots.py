"""Matplotlib drawings: each report figure from its `FigureData`, and the figures other commands
write with `--plot` (`explain`, `validate`, `iommu advise`, `nic`/`dpdk-fwd --trace`; `data
plot`'s are `measured`'s, in this style).

House style: units in every axis label, legends outside the data (in columns that fit the
figure's height), reference lines (Ethernet, link capacity, tags) drawn above the model curves,
curves that coincide told apart by line style and markers, log axes only with plain-number
ticks, and one style per series: the Okabe-Ito colours (safe for colour-blind readers), then
the same colours dashed and dotted (`CYCLE`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from cycler import cycler
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from pcieperf import outputs
from pcieperf.dpdk import forwarding
from pcieperf.errors import require_plot_file
from pcieperf.net.wire import frames_text
from pcieperf.pcie import tlp
from pcieperf.pciebench.validate import Matched
from pcieperf.report import data
from pcieperf.report.data import FigureData, ReportConfig

if TYPE_CHECKING:
    from pcieperf.iommu.advice import Advice
    from pcieperf.measure.explain import Explanation
    from pcieperf.net.trace.bandwidth import Demand

REFERENCE = 5  # z-order of reference lines: above every model curve (matplotlib's lines: 2)
SAME_CURVE_RTOL = 0.02  # IOMMU curves within the sweep's +-1 % noise of each other coincide
PLAIN = FuncFormatter(lambda v, _: f"{v:g}")  # 1, 10, 100 rather than 10^0, 10^1, 10^2
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")
"""Okabe & Ito's palette (Color Universal Design, 2008): told apart in every common colour
vision deficiency."""
CYCLE = cycler(linestyle=["-", "--", ":"]) * cycler(color=OKABE_ITO)
"""24 styles, one per series: each colour solid, then dashed, then dotted."""
plt.rcParams["axes.prop_cycle"] = CYCLE
LEGEND_ROW_PT = 8 * 1.45  # a legend entry's height at font size 8 (matplotlib's spacing)


def _figure(width: float, height: float, ncols: int = 1) -> tuple[plt.Figure, np.ndarray]:
    """A figure laid out by matplotlib's constrained layout, so outside legends fit."""
    fig, axes = plt.subplots(1, ncols, figsize=(width, height), layout="constrained", squeeze=False)
    return fig, axes[0]


def legend_outside(ax: plt.Axes, widen: bool = False) -> None:
    """The axes' legend to the right of its data, within the figure's height: in up to two
    columns, and past what they hold, one last entry saying how many more series there are;
    `widen` makes the figure wider by the legend's width (the axes keep theirs)."""
    handles, labels = ax.get_legend_handles_labels()
    fig = ax.get_figure(root=True)
    assert fig is not None  # an axes drawn here belongs to a figure
    rows = max(int(fig.get_figheight() * 72 * 0.85 / LEGEND_ROW_PT), 2)
    ncol = min(-(-len(labels) // rows), 2)
    room = rows * ncol
    if len(labels) > room:
        left = len(labels) - room + 1
        handles = [*handles[: room - 1], Line2D([], [], linestyle="none")]
        labels = [*labels[: room - 1], f"... and {left} more (name fewer to see all)"]
    legend = ax.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, ncol=ncol
    )
    if widen:
        width = legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi  # type: ignore[attr-defined]  # Agg's canvas (matplotlib.use above)
        fig.set_figwidth(fig.get_figwidth() + width)


def _legend_below(ax: plt.Axes, ncol: int = 2) -> None:
    """The axes' legend under its x label (side-by-side panels have no room to the right)."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, ncol=ncol)


def _freeze_layout(fig: plt.Figure) -> None:
    """Run the figure's layout engine once and keep its result for every later draw."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine("none")


def write_plot(fig: plt.Figure, out: Path, force: bool, dpi: float | None = 120) -> Path:
    """Save and close a figure, published whole (pcieperf.outputs); returns where it went."""
    try:
        # the format from the output's suffix: the temporary's name ends in .part
        outputs.write_with(out, force, lambda tmp: fig.savefig(tmp, dpi=dpi, format=out.suffix[1:]))
    finally:
        plt.close(fig)
    return out


def draw_fig1(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """Paper Figure 1: effective PCIe bandwidth and the NIC models against Ethernet."""
    f, link = d.frame, cfg.link
    fig, (ax,) = _figure(10, 4.8)
    x = f["frame_bytes"]
    for op, style in (("write", "-"), ("read", ":")):
        ax.plot(x, f[f"{op}_effective_gbps"], style, color="black", label=f"Effective PCIe ({op})")
    for column, label in d.extra["labels"].items():
        ax.plot(x, f[column], label=label)
    ax.plot(
        x,
        f["line_rate_gbps"],
        "--",
        color="dimgrey",
        linewidth=2,
        zorder=REFERENCE,
        label=f"{cfg.eth_gbps:g} GbE line rate",
    )
    ax.set(
        xlabel="Frame size (B)",
        ylabel="Bandwidth per direction (Gb/s)",
        title=f"PCIe Gen{link.gen} x{link.lanes}, MPS {link.mps} B, MRRS {link.mrrs} B",
    )
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return fig


def draw_dma(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """DMA read/write/rw effective bandwidth: every link on a log scale (the x16 links dashed
    with markers, since Gen3 x16 lies on Gen4 x8 and Gen4 x16 on Gen5 x8), and below, the
    report's link alone on its own scale, where its saw-teeth show."""
    fig, grid = plt.subplots(2, 3, figsize=(15, 8), layout="constrained", squeeze=False)
    x, link = d.frame["size"], cfg.link
    for ax, op in zip(grid[0], tlp.OPS, strict=True):
        for k, (gen, lanes) in enumerate(data.DMA_LINKS):
            wide = lanes == 16
            ax.plot(
                x,
                d.frame[f"{op}_gen{gen}_x{lanes}_effective_gbps"],
                "--" if wide else "-",
                color=OKABE_ITO[k],
                marker="o" if wide else None,
                markevery=(100, 250),
                markersize=4,
                linewidth=1,
                label=f"Gen{gen} x{lanes}",
            )
        ax.set(title=f"DMA {op}, every link", xlabel="Transfer size (B)", yscale="log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(PLAIN)
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
    for ax, op in zip(grid[1], tlp.OPS, strict=True):
        ax.plot(x, tlp.effective_gbps(link, op, x.to_numpy()), color=OKABE_ITO[0], linewidth=1)
        ax.set(title=f"DMA {op}, Gen{link.gen} x{link.lanes} alone", xlabel="Transfer size (B)")
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel("Effective bandwidth (Gb/s)")
    legend_outside(grid[0][-1])
    return fig


def draw_dpdk_forwarding(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """Counted and wire bandwidth per packet rate; the MMIO doorbells on their own scale."""
    fig, (ax, ax_out) = _figure(12, 5.2, ncols=2)
    f, x = d.frame, d.frame["pps"] / 1e6
    for metric in forwarding.METRICS:
        target, scale = (ax_out, 1e3) if metric.startswith("outbound") else (ax, 1)
        target.plot(x, f[f"{metric}_gbps"] * scale, label=metric.replace("_", " "))
    for side in ("up", "down"):
        ax.plot(x, f[f"pcie_{side}_gbps"], ":", label=f"PCIe wire, {side}")
    ax.axhline(
        d.extra["capacity_gbps"], color="black", linewidth=1, zorder=REFERENCE, label="link (TLPs)"
    )
    for (what, mpps), style in zip(d.extra["limits_mpps"].items(), ("--", "-."), strict=True):
        ax.axvline(mpps, color="dimgrey", linestyle=style, zorder=REFERENCE, label=f"{what} limit")
    ax.set(
        xlabel="Packet rate (Mpps)",
        ylabel="Bandwidth (Gb/s)",
        title=f"DPDK forwarding, {frames_text(d.extra['pkt_bytes'])}, batch {d.extra['batch']:g}",
    )
    ax_out.set(xlabel="Packet rate (Mpps)", ylabel="Bandwidth (Mb/s)", title="Outbound (MMIO)")
    for a, ncol in ((ax, 3), (ax_out, 2)):
        a.grid(alpha=0.3)
        _legend_below(a, ncol)
    return fig


def _coinciding(curves: dict[str, np.ndarray]) -> list[list[str]]:
    """Names grouped where their curves agree within SAME_CURVE_RTOL everywhere."""
    groups: list[list[str]] = []
    for name, values in curves.items():
        same = (g for g in groups if np.allclose(curves[g[0]], values, rtol=SAME_CURVE_RTOL))
        group = next(same, None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    return groups


def _ring_curves(f: pd.DataFrame, page: str, column: str) -> dict[str, np.ndarray]:
    """One curve per mix over the ring sizes, for one page size."""
    sel = f[f["page"] == page].sort_values("rxd")
    return {m: sel.loc[sel["mix"] == m, column].to_numpy() for m in data.IOMMU_MIXES}


# 2 MiB hollow and larger, so a 4 KiB point under it stays visible
PAGE_STYLE: dict[str, dict[str, Any]] = {
    "4k": {"linestyle": "-", "marker": "o"},
    "2m": {"linestyle": "--", "marker": "s", "markersize": 9, "markerfacecolor": "none"},
}


def _mix_label(mix: str) -> str:
    """A mix's name in a legend: a fixed frame size with its unit."""
    return f"{mix} B" if mix.isdigit() else mix


def _draw_ring_groups(
    ax: plt.Axes, rings: np.ndarray, curves: dict, style: dict, page: str = ""
) -> None:
    """Coinciding mixes drawn once, labelled together, in the first mix's colour."""
    colours = dict(
        zip(data.IOMMU_MIXES, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False)
    )
    for group in _coinciding(curves):
        label = " = ".join(map(_mix_label, group)) + (f", {page}" if page else "")
        ax.plot(rings, curves[group[0]], color=colours[group[0]], label=label, **style)


def draw_iommu(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """Forwarded rate with the IOMMU per ring size, 4 KiB vs 2 MiB pages; the misses panel
    only where the misses change with the ring (otherwise the facts quote them)."""
    f = d.frame
    rings = np.sort(f["rxd"].unique())
    misses = _ring_curves(f, "4k", "iotlb_misses_per_pkt")
    varies = any(np.ptp(m) > SAME_CURVE_RTOL * max(m.max(), 1e-9) for m in misses.values())
    fig, axes = _figure(13 if varies else 8, 5.4, ncols=2 if varies else 1)
    ax = axes[0]
    for page, name in (("4k", "4 KiB"), ("2m", "2 MiB")):
        _draw_ring_groups(ax, rings, _ring_curves(f, page, "mpps_iommu"), PAGE_STYLE[page], name)
    ax.set(ylabel="Forwarded rate, IOMMU on (Mpps)", ylim=(0, None))
    ax.set_title(f"DPDK io-forward, {cfg.eth_gbps:g} GbE, Gen{cfg.link.gen} x{cfg.link.lanes}")
    if varies:
        _draw_ring_groups(axes[1], rings, misses, PAGE_STYLE["4k"])
        axes[1].set(ylabel="IOTLB misses per packet", ylim=(0, None))
        axes[1].set_title(f"4 KiB pages, {d.extra['iotlb_entries']}-entry IOTLB")
    for a in axes:
        a.set(xscale="log", xlabel="Ring size, rxd = txd (descriptors)")
        a.set_xticks(rings, [str(r) for r in rings])
        a.minorticks_off()
        a.grid(alpha=0.3)
        _legend_below(a)
    return fig


def _draw_demand(ax: plt.Axes, found: Demand) -> None:
    """Up and down Gb/s per window against the link's capacity."""
    t_ms = (np.arange(found.up_gbps.size) * found.window_ns) / 1e6
    ax.step(t_ms, found.up_gbps, where="post", label="device to host (up)")
    ax.step(t_ms, found.down_gbps, where="post", label="host to device (down)")
    ax.axhline(
        found.capacity_gbps, color="black", linestyle="--", zorder=REFERENCE, label="link capacity"
    )
    ax.set(
        xlabel="Time (ms)",
        ylabel=f"PCIe bandwidth per {found.window_ns / 1e3:g} µs (Gb/s)",
        ylim=(0, max(found.capacity_gbps, found.up_gbps.max(), found.down_gbps.max()) * 1.1),
    )
    ax.grid(alpha=0.3)
    legend_outside(ax)


def draw_trace(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """The synthetic trace's PCIe bandwidth per window."""
    fig, (ax,) = _figure(11, 4.2)
    _draw_demand(ax, d.extra["demand"])
    ax.set_title(f"{d.extra['path']} at {cfg.eth_gbps:g} GbE, Gen{cfg.link.gen} x{cfg.link.lanes}")
    return fig


def plot_trace_demand(found: Demand, out: Path, title: str, force: bool = False) -> Path:
    """The bandwidth a trace needs per window against the link (`nic`/`dpdk-fwd --plot`)."""
    require_plot_file(out, force)
    fig, (ax,) = _figure(11, 4.2)
    _draw_demand(ax, found)
    ax.set_title(title)
    return write_plot(fig, out, force, dpi=None)


def draw_latency(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """Paper Figure 2: PCIe's share of the loopback latency shaded, its % written at 3 sizes."""
    f = d.frame
    x, pcie, total = f["frame_bytes"], f["pcie_ns"], f["total_ns"]
    fig, (ax,) = _figure(10, 4.8)
    ax.fill_between(x, 0, pcie, color="tab:blue", alpha=0.35, label="PCIe")
    ax.fill_between(x, pcie, total, color="tab:orange", alpha=0.35, label="NIC, wire, host")
    ax.plot(x, total, color="black", label="median latency")
    ax.plot(x, f["total_high_ns"], ":", color="grey", label="assumptions at their high end")
    for size in data.LATENCY_LABELS:
        row = f[f["frame_bytes"] == size].iloc[0]
        ax.annotate(
            f"{100 * row['pcie_share']:.1f} %",
            (size, row["pcie_ns"]),
            textcoords="offset points",
            xytext=(0, -14),
            ha="center",
            fontsize=9,
        )
    ax.set(xlabel="Frame size (B)", ylabel="Median loopback latency (ns)", ylim=(0, None))
    ax.set_title(
        f"{d.extra['profile']} NIC loopback, {cfg.eth_gbps:g} GbE; host: {d.extra['host']}",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return fig


def draw_concurrency(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """In-flight DMAs (solid) and read tags (dashed) at line rate against the device's tags."""
    fig, (ax,) = _figure(10, 4.8)
    x = d.frame["frame_bytes"]
    for rate in data.CONCURRENCY_RATES_GBPS:
        (line,) = ax.plot(x, d.frame[f"eth{rate}_inflight_needed_up"], label=f"{rate} GbE")
        ax.plot(x, d.frame[f"eth{rate}_tags_needed"], "--", color=line.get_color(), lw=1)
    tags = d.extra["tags"]
    ax.axhline(tags, color="black", lw=1, zorder=REFERENCE, label=f"device tags ({tags})")
    ax.set(
        xlabel="Frame size (B)",
        ylabel="In flight at line rate (DMAs, tags)",
        yscale="log",
        title="In-flight DMAs per direction (solid) and read tags (dashed)",
    )
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(PLAIN)
    ax.grid(alpha=0.3, which="both")
    legend_outside(ax)
    return fig


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
        low, high = verdict.predicted * (1 - TOLERANCE), verdict.predicted * (1 + TOLERANCE)
        scale, unit = _rate_unit(max(high, float(series.value.max(initial=0))), series.unit)
        ax.axhspan(low * scale, high * scale, color="grey", alpha=0.25, label="prediction ±15 %")
        ax.axhline(verdict.predicted * scale, color="black", linestyle="--", label="predicted")
        ax.plot(series.t_s, series.value * scale, marker=".", label="measured")
        if max(high, float(series.value.max(initial=0))) <= 0:
            ax.set_ylim(-0.05, 1)  # all zero: a readable axis, not matplotlib's 1e-17 ticks
        colour = "black" if verdict.status == "agrees" else OKABE_ITO[3]
        noise = " (noise: none predicted)" if verdict.predicted == 0 < verdict.measured else ""
        ax.set_title(f"{name}: {verdict.status}{noise}", fontsize=9, loc="left", color=colour)
        ax.set_ylabel(f"{name} ({unit})", fontsize=8)
        ax.grid(alpha=0.3)
    # Above the first panel, right of its title: outside every panel's data.
    axes[0, 0].legend(fontsize=7, loc="lower right", bbox_to_anchor=(1, 1.0), ncol=3)
    axes[-1, 0].set_xlabel("Time (s)")
    fig.suptitle(f"{result.source}, {result.stack}: measured vs predicted", fontsize=10)
    fig.tight_layout()
    return fig


RATE_UNITS = {"B/s": (8, ("b/s", "kb/s", "Mb/s", "Gb/s")), "1/s": (1, ("/s", "k/s", "M/s", "G/s"))}
"""A counter's unit, the factor to the plotted base unit and its scaled names (10^3 apart)."""


def _rate_unit(peak: float, unit: str) -> tuple[float, str]:
    """The factor and the unit an axis of a counter rate up to `peak` reads in: the largest
    that keeps the peak at 1 or above (0.0002 M/s reads 190 /s)."""
    factor, names = RATE_UNITS.get(unit, (1, (unit,) * 4))
    step = min(max(int(np.log10(max(peak * factor, 1))) // 3, 0), len(names) - 1)
    return factor / 1000**step, names[step]


def draw_counters(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """The report's counter section: `explain --plot`'s figure."""
    return _draw_explanation(d.extra["explanation"])


def plot_explanation(result: Explanation, out: Path, force: bool = False) -> Path:
    """`explain --plot`: measured vs predicted over time; returns the file."""
    require_plot_file(out, force)
    return write_plot(_draw_explanation(result), out, force)


DESIGN_STYLE = {"per_packet": "C3", "batched": "C0", "contiguous": "C2"}


def draw_capture(d: FigureData, cfg: ReportConfig) -> plt.Figure:
    """Capture and forwarding Gb/s per design against frame size (bands: the spread); this
    machine's runs against the model's prediction of each, where there are runs."""
    runs = d.extra["runs"]
    fig, axes = _figure(14 if runs is not None else 9, 5, ncols=2 if runs is not None else 1)
    ax, f = axes[0], d.frame
    x = f["frame_bytes"]
    for column, colour in DESIGN_STYLE.items():
        label = column.replace("_", "-")
        ax.plot(x, f[f"{column}_capture_gbps"], color=colour, label=f"{label}: captured")
        ax.fill_between(
            x, f[f"{column}_capture_gbps_low"], f[f"{column}_capture_gbps_high"],
            color=colour, alpha=0.15, linewidth=0,
        )  # fmt: skip
        ax.plot(x, f[f"{column}_fwd_gbps"], "--", color=colour, label=f"{label}: forwarded")
    _frame_axes(ax, "Gb/s on the wire (2 x 10 GbE)", "pdump study's setup: XL710, 2 lcores, "
                "one capture core, /dev/null", 3)  # fmt: skip
    if runs is not None:
        right = axes[1]
        for (writer, sink), group in runs.groupby(["writer", "sink"]):
            shown = right.plot(
                group["frame_bytes"], group["capture_mpps"], "o", label=f"{writer} to {sink}"
            )
            right.plot(
                group["frame_bytes"], group["predicted_mpps"], "x", color=shown[0].get_color()
            )
        _frame_axes(right, "Records written (Mpps)", "this machine's runs: measured (o), "
                    "predicted (x)", 2)  # fmt: skip
    return fig


def _frame_axes(ax: plt.Axes, ylabel: str, title: str, ncol: int) -> None:
    """Frame size along x, `ylabel` from 0, a grid and the legend below."""
    ax.set(xlabel="Frame size (B)", ylabel=ylabel, ylim=(0, None), title=title)
    ax.grid(alpha=0.3)
    _legend_below(ax, ncol=ncol)


DRAW: dict[str, Callable[[FigureData, ReportConfig], plt.Figure]] = {
    "fig1_nic_models": draw_fig1,
    "dma_effective": draw_dma,
    "dpdk_forwarding": draw_dpdk_forwarding,
    "iommu_rings": draw_iommu,
    "trace_demand": draw_trace,
    "fig2_latency": draw_latency,
    "concurrency": draw_concurrency,
    "counters": draw_counters,
    "capture": draw_capture,
}
"""Each report figure's drawing, by its slug."""


def save_figure(fig: plt.Figure, out: Path, slug: str) -> None:
    """PNG (the page's) and SVG (vector, for papers) of a report figure, then closed. The
    layout is worked out once, not once per file (it is a third of the report's time)."""
    _freeze_layout(fig)
    fig.savefig(out / f"{slug}.png", dpi=120)
    fig.savefig(out / f"{slug}.svg", metadata={"Date": None})
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Validation (pcieperf validate --plot) and advice (pcieperf iommu advise --plot)


def plot_validation(matched: Matched, out: Path, force: bool = False) -> Path:
    """Measured vs predicted bandwidth, one colour per result-file family; returns the file."""
    require_plot_file(out, force)
    fig, ax = plt.subplots(figsize=(6, 6), layout="constrained")
    families = np.array([f.rsplit("_", 1)[0] if "win_sweep" in f else f for f in matched.file])
    for family in np.unique(families):
        keep = families == family
        ax.scatter(matched.measured[keep], matched.predicted[keep], s=8, label=family)
    top = float(max(matched.measured.max(), matched.predicted.max())) * 1.05
    ax.plot([0, top], [0, top], color="black", linewidth=0.8)
    ax.set(xlabel="Measured (Gb/s)", ylabel="Predicted (Gb/s)", xlim=(0, top), ylim=(0, top))
    ax.set_title(f"MAPE {100 * matched.error.mean():.1f} % over {matched.error.size} points")
    ax.legend(fontsize=6)
    return write_plot(fig, out, force)


def plot_advice(advice: Advice, out: Path, force: bool = False) -> Path:
    """Bar chart of `iommu advise`'s sweep: packet rate per single change, target marked."""
    require_plot_file(out, force)
    options = advice.options
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(options) + 1.8), layout="constrained")
    labels = ["current"] + [c.description for c, _ in options]
    rates = [advice.current.mpps_iommu] + [r.mpps_iommu for _, r in options]
    colors = ["grey"] + ["tab:green" if advice.choice is c else "tab:blue" for c, _ in options]
    ax.barh(labels, rates, color=colors)
    ax.axvline(advice.target_mpps, color="black", linestyle="--", label="without IOMMU")
    ax.invert_yaxis()
    ax.set(xlabel="Forwarded rate, IOMMU on (Mpps)", title="iommu advise: single changes")
    ax.legend(fontsize=8)
    return write_plot(fig, out, force, dpi=None)

"""`pcieperf data plot`: measured pcie-bench results from the store, one line per system, in the
house style of `plots` (its palette, its legends outside the data)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from pcieperf.errors import UsageError, require_plot_file
from pcieperf.measure.store import Store
from pcieperf.pciebench.bench import CACHE_STATES
from pcieperf.report.plots import legend_outside, write_plot

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
    fig = draw(store, names, size, direction)
    if not any(ax.has_data() for ax in fig.axes):  # e.g. a --size the store has no rows of
        plt.close(fig)
        raise UsageError(
            f"nothing to plot: the store has no {view} data for size {size} B, direction "
            f"{direction}; `pcieperf data show SYSTEM` lists what is there"
        )
    legend_outside(fig.axes[-1], widen=True)
    return write_plot(fig, out, force)


def _short(name: str) -> str:
    return name.split("_", 1)[-1]


def _plot_size(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True, layout="constrained")
    for ax, test in zip(axes, ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW"), strict=True):
        for name in names:
            rows = store.rows("bw", name, test=test, file="bw_dma_sz_sweep.csv")
            ax.plot(rows["size_bytes"], rows["bw_gbps"], marker=".", label=_short(name))
        ax.set(title=test, xlabel="Transfer size (B)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    return fig


def _plot_window(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    file = f"bw_dma_win_sweep_{direction}_rnd_{size}.csv"
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.5), sharey=True, layout="constrained")
    measured = {name: store.rows("bw", name, file=file) for name in names}
    for ax, cache in zip(axes, CACHE_STATES, strict=True):
        for name, rows in measured.items():
            keep = rows["cache"] == cache
            ax.plot(
                rows["window_bytes"][keep], rows["bw_gbps"][keep], marker=".", label=_short(name)
            )
        ax.set(title=f"{cache}, {size} B random {direction}", xlabel="Window (B)", xscale="log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    return fig


def _plot_offset(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True, layout="constrained")
    for name in names:
        rows = store.rows("bw", name, file=f"bw_dma_off_{direction}.csv")
        keep = rows["size_bytes"] == size
        half = int(keep.sum()) // 2  # the host-offset sweep comes first, then the device one
        ho, do, bw = rows["host_offset"][keep], rows["dev_offset"][keep], rows["bw_gbps"][keep]
        axes[0].plot(ho[:half], bw[:half], marker=".", label=_short(name))
        axes[1].plot(do[half:], bw[half:], marker=".", label=_short(name))
    for ax, what in zip(axes, ("Host offset", "Device offset"), strict=True):
        ax.set(title=f"{what} sweep, {size} B {direction}", xlabel=f"{what} (B)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Bandwidth (Gb/s)")
    return fig


def _plot_cdf(store: Store, names: list[str], size: int, direction: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
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
    ax.set(
        title=f"DMA latency CDF, {size} B",
        xlabel="Latency (ns)",
        ylabel="Share of transfers at most that long",
        xscale="log",
    )
    ax.grid(alpha=0.3)
    return fig

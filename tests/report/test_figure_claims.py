"""Figures show what their words say (issue 44): every number a figure's bullets quote in Mpps,
Gb/s or bytes lies inside the range of an axis in that unit, the report's link keeps its
saw-teeth visible, legends stay inside the figure, each series has a style of its own, and the
counter section's bullets carry their units and say each diagnosis once."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

import pcieperf as pp
from pcieperf.report import data, plots
from tests.helpers import TESTS_DATA

QUOTED = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(Mpps|Gb/s|B)\b")
PCM = TESTS_DATA / "counters" / "pcm-iio-skx.csv"


def quoted(texts: list[str]) -> list[tuple[float, str]]:
    """The numbers with a plotted unit in `texts`: (value, unit)."""
    return [(float(v.replace(",", "")), u) for t in texts for v, u in QUOTED.findall(t)]


def within_an_axis(fig: plt.Figure, value: float, unit: str) -> bool | None:
    """Whether some axis labelled in `unit` spans `value` (None: no axis is in that unit)."""
    token = f"({unit})"
    spans = [ax.get_xlim() for ax in fig.axes if token in ax.get_xlabel()]
    spans += [ax.get_ylim() for ax in fig.axes if token in ax.get_ylabel()]
    if not spans:
        return None
    return any(min(s) <= value <= max(s) for s in spans)


def drawn(make) -> tuple[data.FigureData, plt.Figure]:
    cfg = data.ReportConfig()
    found = make(cfg)
    return found, plots.DRAW[found.slug](found, cfg)


def unshown(found: data.FigureData, fig: plt.Figure) -> list[tuple[float, str]]:
    """The bullets' numbers that no axis of their unit spans."""
    return [(v, u) for v, u in quoted(found.facts) if within_an_axis(fig, v, u) is False]


FAST = [data.fig1, data.dma, data.dpdk_forwarding, data.fig2_latency, data.concurrency]


@pytest.mark.parametrize("make", FAST, ids=lambda m: m.__name__)
def test_the_axes_span_what_the_bullets_quote(make):
    found, fig = drawn(make)
    try:
        assert quoted(found.facts), "no number checked"
        assert unshown(found, fig) == []
    finally:
        plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("make", [data.iommu_rings, data.trace_demand, data.capture])
def test_the_slower_figures_span_what_their_bullets_quote(make):
    found, fig = drawn(make)
    try:
        assert unshown(found, fig) == []
    finally:
        plt.close(fig)


def test_the_dpdk_figure_is_of_64_byte_frames_and_reaches_past_its_limit():
    found, fig = drawn(data.dpdk_forwarding)
    try:
        # every command's default frame: 64 B incl. FCS, 60 B DMA'd (docs/units.md)
        assert found.extra["pkt_bytes"] == 60
        limits = [v for v, u in quoted(found.facts) if u == "Mpps"]
        assert max(limits) > 40  # Gen3 x8 carries 42.4 Mpps of it (hand-checked, README)
        assert fig.axes[0].get_xlim()[1] > max(limits)
    finally:
        plt.close(fig)


def test_the_report_links_saw_teeth_are_visible():
    # A write of one byte past the MPS (256 B) takes a second TLP: Gen3 x8's bandwidth drops
    # there; on its own panel the drop is a visible share of the axis, not a pixel.
    _, fig = drawn(data.dma)
    try:
        alone = [ax for ax in fig.axes if ax.get_title() == "DMA write, Gen3 x8 alone"]
        (ax,) = alone
        y = ax.get_lines()[0].get_ydata()
        low, high = ax.get_ylim()
        assert float(np.max(-np.diff(y))) / (high - low) > 0.05
    finally:
        plt.close(fig)


def test_a_legend_of_many_series_stays_inside_the_figure():
    fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
    for k in range(120):
        ax.plot([1, 2], [k, k + 1], label=f"host-{k:03d} LAT_DMA_RD 8 KiB HWarm")
    plots.legend_outside(ax, widen=True)
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent()
    try:
        assert box.y0 >= 0
        assert box.y1 <= fig.bbox.height
        assert box.x1 <= fig.bbox.width
        assert ax.get_legend().get_texts()[-1].get_text().startswith("... and ")
    finally:
        plt.close(fig)


def test_each_series_has_a_style_of_its_own():
    styles = [(s["color"], s["linestyle"]) for s in plots.CYCLE]
    assert len(set(styles)) == len(styles) >= 16  # `data plot --view window`: 16 hosts
    assert {c for c, _ in styles} == set(plots.OKABE_ITO)


def test_a_counter_axis_reads_in_a_unit_that_shows_its_numbers():
    # 190 IOTLB misses/s (tests/data/counters/pcm-iio-skx.csv) read 190 /s, not 0.0002 M/s.
    assert plots._rate_unit(190.0, "1/s") == (1, "/s")
    assert plots._rate_unit(1.19e9, "B/s") == (8 / 1e9, "Gb/s")


def test_counter_bullets_carry_units_and_say_each_diagnosis_once():
    explained = pp.explain(counters=PCM, pps="7M", frame=64)
    found = data.counters(data.ReportConfig(explanation=explained.explanation))
    metrics = [f for f in found.facts if ": measured " in f]
    assert metrics
    assert all("B/pkt" in f or "per packet" in f for f in metrics)
    diagnoses = [f.split(": ", 1)[1] for f in found.facts if ": measured " not in f]
    assert len(diagnoses) == len(set(diagnoses))

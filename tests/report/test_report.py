"""The report (issue 16 item 4): every figure loads in a real browser, figures of the same
quantity agree in their CSVs, every CSV column carries its unit, coinciding curves are told
apart, and `pp.report` is what `pcieperf report` runs."""

from __future__ import annotations

import csv
import json
import os
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.pcie.link import Link
from pcieperf.report import data, plots
from pcieperf.report.api import ReportResult
from tests.helpers.cli import run_cli

CHROMIUM = "/usr/bin/chromium"
# The model figures in page order, as their files are named.
SLUGS = (
    "fig1_nic_models",
    "dma_effective",
    "dpdk_forwarding",
    "iommu_rings",
    "trace_demand",
    "fig2_latency",
    "concurrency",
    "capture",
)
# Reports what each <img> decoded to, once the page and every image have loaded.
PROBE = (
    "<script>window.addEventListener('load', () => {const p = document.createElement('pre');"
    "p.id = 'probe'; p.textContent = [...document.images].map(i => i.complete + ':' + "
    "i.naturalWidth + 'x' + i.naturalHeight).join(' '); document.body.append(p);});</script>"
)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> ReportResult:
    """The default report, written once through the public API."""
    return pp.report(out=tmp_path_factory.mktemp("report") / "r")


@pytest.fixture(scope="module")
def report(written) -> Path:
    """The default report's folder."""
    return written.index.parent


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (PNG spec §11.2.2: bytes 16-24, big-endian)."""
    return struct.unpack(">II", path.read_bytes()[16:24])


def _render(page: Path, profile: Path) -> str:
    """The DOM headless Chromium builds from `page`, scripts run, images decoded."""
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=30000",  # virtual time: the load event, not a wall-clock wait
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason=f"{CHROMIUM} is absent (Debian package chromium; .ci/run installs it as root)",
)
def test_every_figure_loads_in_headless_chromium(report, tmp_path):
    html = (report / "index.html").read_text(encoding="utf-8")
    probed = tmp_path / "index.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _render(probed, tmp_path / "profile")
    found = re.search(r"<pre id=\"probe\">([^<]*)</pre>", dom)
    assert found, dom[-2000:]
    decoded = found.group(1).split()
    # One <img> per model figure, each decoded to exactly its PNG's pixel size (a broken image
    # has naturalWidth 0): e.g. Figure 1 is 10 in x 4.8 in at 120 dpi = 1200 x 576 px.
    expected = [f"true:{w}x{h}" for w, h in (_png_size(report / f"{s}.png") for s in SLUGS)]
    assert decoded == expected
    assert expected[0] == "true:1200x576"


def test_the_page_is_self_contained_and_says_what_to_read(report):
    html = (report / "index.html").read_text(encoding="utf-8")
    assert html.count("<img src='data:image/png;base64,") == len(data.MAKERS) == len(SLUGS)
    assert html.count("<p class='read'>Read ") == len(SLUGS)  # one sentence per figure
    assert "Understanding PCIe performance for end host networking" in html  # paper in full
    assert " us " not in html  # microseconds spelled as such
    assert "µs" in html


def _csv(report: Path, slug: str) -> pd.DataFrame:
    return pd.read_csv(report / f"{slug}.csv")


def test_figures_of_the_same_quantity_agree(report):
    # Figure 1's fourth curve is the XL710 testpmd-fwd profile: its frame throughput at a
    # frame size, divided by the frame's bits, is the packet rate (Gb/s / bit = Gpps).
    fig1 = _csv(report, "fig1_nic_models").set_index("frame_bytes")["testpmd_fwd_achievable_gbps"]
    rings = _csv(report, "iommu_rings")
    mpps_at = lambda frame: fig1[frame] * 1e3 / (8 * frame)  # noqa: E731
    # The IOMMU figure's mix "64" is a 64 B frame: its `nic` model rate is Figure 1's.
    for mix in ("64", "128", "256"):
        row = rings[(rings["mix"].astype(str) == mix) & (rings["page"] == "2m")].iloc[0]
        assert row["nic_mpps"] == pytest.approx(mpps_at(int(mix)), rel=1e-9)
    # Hand-checked value (report of main, 2026-11): 42.44 Mpps for 64 B frames, Gen3 x8.
    assert mpps_at(64) == pytest.approx(42.44, abs=0.01)
    # The DPDK forwarding figure's 64 B frames are 60 B DMA'd (every command's default frame):
    # the most its busier wire line allows on the link is Figure 1's rate at 64 B.
    fwd = _csv(report, "dpdk_forwarding").iloc[-1]
    per_mpps = max(fwd["pcie_up_gbps"], fwd["pcie_down_gbps"]) / (fwd["pps"] / 1e6)
    assert Link().tlp_gbps / per_mpps == pytest.approx(mpps_at(64), rel=1e-9)


def _cli_names():
    """The column names of the commands the report's figures redraw, as the API's DataFrames
    (and so `--format csv`) give them: figure name -> names."""
    nic = pp.nic(sizes=[64]).to_frame()
    latency = pp.latency(sizes=[64]).to_frame()
    return {
        "fig1_nic_models": {*nic, *pp.dma(sizes=[64]).to_frame(), "frame_bytes"},
        "dma_effective": set(pp.dma(sizes=[64]).to_frame()),
        "dpdk_forwarding": set(pp.dpdk_forwarding().to_frame()),
        "fig2_latency": {*latency, "frame_bytes"},
        "concurrency": {*latency, "frame_bytes"},
        "capture": set(pp.capture_model(sizes=[64]).to_frame()),
        "iommu_rings": set(pp.iommu.sim().to_frame()),
    }


def test_report_csvs_name_quantities_as_the_commands_do(report):
    # One name per quantity (issue 27): a figure's column is the name the command it redraws
    # gives that quantity (`nic`'s line_rate_gbps, `latency`'s pcie_share), or that name after
    # a label of the curve (a profile, an op and link, a design, an Ethernet rate).
    for slug, names in _cli_names().items():
        for column in _csv(report, slug).columns:
            assert column in names or any(column.endswith(f"_{n}") for n in names), (slug, column)
    with (report / "concurrency.csv").open() as fh:
        header = next(csv.reader(fh))
    assert header[:3] == ["frame_bytes", "eth10_inflight_needed_up", "eth10_tags_needed"]
    # The demand figure's per-window series has no command column: its names carry the unit.
    with (report / "trace_demand.csv").open() as fh:
        assert next(csv.reader(fh)) == ["t_ms", "up_gbps", "down_gbps", "capacity_gbps"]


def test_the_cli_prints_the_api_result(written, report, capsys):
    # One code path: `pcieperf report --json` prints what pp.report returns (same folder).
    files = sorted(p.name for p in report.iterdir())
    assert len(files) == 3 * len(SLUGS) + 1  # PNG, SVG and CSV per figure, and index.html
    assert written.to_json() == {"index": str(report / "index.html"), "files": files}
    assert written.to_text() == f"report written to {report / 'index.html'}"
    assert list(written.to_frame()["file"]) == files
    code, out, err = run_cli(capsys, "report", "-o", str(report), "--force", "--json")
    assert code == 0, err
    assert json.loads(out) == written.to_json()


def test_bad_eth_is_a_usage_error(tmp_path):
    with pytest.raises(pp.UsageError, match="eth 0 is not allowed"):
        pp.report(out=tmp_path / "r", eth=0)


# --- coinciding curves ----------------------------------------------------------------------


def test_coinciding_curves_are_drawn_once():
    # Within 2 % (the IOMMU sweep's noise is +-1 %): a and b coincide, c does not.
    curves = {"a": np.array([1.0, 2.0]), "b": np.array([1.01, 2.0]), "c": np.array([3.0, 4.0])}
    assert plots._coinciding(curves) == [["a", "b"], ["c"]]


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0.1, 100), max_size=8))
def test_every_curve_is_in_exactly_one_group(levels):
    curves = {name: np.array([level, 2 * level]) for name, level in levels.items()}
    groups = plots._coinciding(curves)
    assert sorted(n for g in groups for n in g) == sorted(curves)
    for group in groups:  # members agree with their group's first curve
        assert all(np.allclose(curves[group[0]], curves[n], rtol=0.02) for n in group)


def _ring_frame(misses: list[float]) -> pd.DataFrame:
    """A small IOMMU sweep: two mixes per page over 3 ring sizes, `misses` for every mix."""
    rows = [
        {"mix": mix, "page": page, "rxd": rxd, "mpps_iommu": 10.0, "iotlb_misses_per_pkt": m}
        for mix in data.IOMMU_MIXES
        for page in ("4k", "2m")
        for rxd, m in zip((64, 128, 256), misses, strict=True)
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("misses", "panels"), [([1.0, 1.0, 1.0], 1), ([1.0, 1.0, 2.0], 2)])
def test_the_misses_panel_only_where_it_shows_a_difference(misses, panels):
    figure = data.FigureData("iommu_rings", "", "", "", _ring_frame(misses), [])
    figure.extra["iotlb_entries"] = 96
    fig = plots.draw_iommu(figure, data.ReportConfig())
    assert len(fig.axes) == panels
    # Every mix has the same rate here: one line per page size, labelled with all four mixes.
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == [f"64 B = 128 B = 256 B = imix, {page}" for page in ("4 KiB", "2 MiB")]

"""The report on disk: every figure (PNG + SVG), its data (CSV) and one self-contained
index.html, whose images are embedded as data URIs so the page travels as one file."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import matplotlib.pyplot as plt

from pcieperf import outputs, progress
from pcieperf.report import data, plots
from pcieperf.report.data import FigureData, ReportConfig

STYLE = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
    "figure{margin:1em 0}img{max-width:100%;height:auto}"
    "p.read{font-weight:bold}figcaption{color:#444}"
)


def _write_figure(d: FigureData, cfg: ReportConfig, out: Path) -> None:
    """One figure's PNG, SVG and CSV."""
    plots.save_figure(plots.DRAW[d.slug](d, cfg), out, d.slug)
    d.frame.to_csv(out / f"{d.slug}.csv", index=False)


def _section(d: FigureData, out: Path) -> str:
    """One figure's heading, what to read from it, the image, caption and facts."""
    png = base64.b64encode((out / f"{d.slug}.png").read_bytes()).decode("ascii")
    facts = "".join(f"<li>{html.escape(f)}</li>" for f in d.facts)
    return (
        f"<h2 id='{d.slug}'>{html.escape(d.title)}</h2>"
        f"<p class='read'>{html.escape(d.read)}</p><figure>"
        f"<img src='data:image/png;base64,{png}' alt='{html.escape(d.title, quote=True)}'>"
        f"<figcaption>{html.escape(d.caption)} Data: <a href='{d.slug}.csv'>{d.slug}.csv</a>, "
        f"vector: <a href='{d.slug}.svg'>{d.slug}.svg</a></figcaption></figure><ul>{facts}</ul>"
    )


def page(cfg: ReportConfig, figures: list[FigureData], out: Path) -> str:
    """index.html: the link's numbers, then every figure's section."""
    link = cfg.link
    head = (
        "<!doctype html><html><head><meta charset='utf-8'><title>pcieperf report</title>"
        f"<style>{STYLE}</style></head><body><h1>pcieperf report</h1>"
        f"<p>PCIe Gen{link.gen} x{link.lanes}: raw {link.raw_gbps:.2f} Gb/s, after encoding "
        f"{link.encoded_gbps:.2f} Gb/s, usable by TLPs {link.tlp_gbps:.2f} Gb/s per direction; "
        f"MPS {link.mps} B, MRRS {link.mrrs} B, RCB {link.rcb} B; {cfg.eth_gbps:g} GbE. Figures "
        "of the same quantity come from one device model, so they agree where they overlap; "
        f"Figures 1 and 2 are redrawn from {html.escape(data.PAPER)}.</p>"
    )
    return "\n".join([head, *(_section(d, out) for d in figures), "</body></html>"])


def write_report(cfg: ReportConfig, out: Path, force: bool = False) -> list[Path]:
    """Write every figure, its CSV and index.html into `out`; returns the files written.

    Everything is written into a temporary folder beside `out` first and published only once
    the whole report succeeded (pcieperf.outputs.folder), so a failure leaves no half-written
    report behind.
    """
    plt.rcParams["svg.hashsalt"] = "pcieperf"  # stable SVG ids across runs
    makers = data.MAKERS + ((data.counters,) if cfg.explanation else ())
    with outputs.folder(out, force) as work:
        figures = []
        for make in progress.wrap(makers, "report", "figure"):
            figures.append(make(cfg))
            _write_figure(figures[-1], cfg, work)
        (work / "index.html").write_text(page(cfg, figures, work), encoding="utf-8")
        made = sorted(work.iterdir())
    return [out / path.name for path in made]

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
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
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


DEVICE_CELLS = ("bdf", "class", "name", "link", "max", "mps", "mrrs", "tags", "numa_node", "driver")
NIC_CELLS = ("bdf", "nic", "profile", "eth_gbps", "ceiling_mpps_64", "ceiling_mpps_64_capable")


def _cells(names: tuple[str, ...], rows: list[dict]) -> str:
    """An HTML table of `names` over `rows` (missing values as -)."""
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_shown(r.get(n)))}</td>" for n in names) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _shown(value: object) -> str:
    """A cell: floats with 2 decimals, None as -."""
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def devices_section(devices: list[dict], title: str) -> str:
    """The devices (`pp.devices`), the network controllers priced, their findings; `title`
    says whose they are."""
    rows = [
        r
        | {
            "link": f"Gen{r['gen']} x{r['lanes']}" if r["lanes"] else "-",
            "max": f"Gen{r['gen_cap']} x{r['lanes_cap']}" if r["lanes_cap"] else "-",
        }
        for r in devices
    ]
    nics = [r for r in rows if "advice" in r]
    findings = "".join(
        f"<li>{html.escape(r['bdf'])}: {html.escape(line)}</li>"
        for r in nics
        for line in r["advice"]
    )
    return (
        f"<h2 id='devices'>PCI devices</h2><p>{html.escape(title)}</p><p class='read'>Read each "
        "network controller's 64 B ceiling on the link it has against the one it could train "
        "to, then the findings.</p>"
        + _cells(DEVICE_CELLS, rows)
        + (
            f"<h3>Network controllers</h3>{_cells(NIC_CELLS, nics)}<ul>{findings}</ul>"
            if nics
            else ""
        )
        + "<p>Data: <a href='devices.csv'>devices.csv</a> (pcieperf devices --format csv)</p>"
    )


def page(cfg: ReportConfig, figures: list[FigureData], out: Path) -> str:
    """index.html: the link's numbers, this machine's devices where asked, then every figure's
    section."""
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
    found = cfg.devices
    devices = [] if found is None else [devices_section(_rows(found.to_json()), found.title)]
    return "\n".join([head, *devices, *(_section(d, out) for d in figures), "</body></html>"])


def _rows(data: object) -> list[dict]:
    """`pp.devices`'s JSON: its rows."""
    return data if isinstance(data, list) else []


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
        if cfg.devices is not None:
            (work / "devices.csv").write_text(cfg.devices.to_csv(), encoding="utf-8")
        (work / "index.html").write_text(page(cfg, figures, work), encoding="utf-8")
        made = sorted(work.iterdir())
    return [out / path.name for path in made]

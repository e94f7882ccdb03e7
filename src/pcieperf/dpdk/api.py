"""The public functions of the DPDK forwarding model (`pp.dpdk_forwarding`): keyword
arguments named as the CLI's options, with its defaults; results that print as the CLI prints
them (pcieperf.results). A packet size is an Ethernet frame incl. FCS (`frame`); `pkt` counts
the bytes the NIC DMAs, the frame less its FCS (docs/units.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pcieperf.errors import UsageError, warn
from pcieperf.net.wire import FCS_BYTES
from pcieperf.pcie.api import make_link
from pcieperf.results import Column, Table
from pcieperf.units import parse_batch_histogram, parse_rate

if TYPE_CHECKING:
    from pcieperf.dpdk.forwarding import ForwardingConfig
    from pcieperf.pcie.link import Link

DEFAULT_PKT = 64  # bytes DMA'd per packet (a 68-byte frame) where no size is given
DEFAULT_PPS = 10e6
BatchHistogram = str | dict[int, float]
"""An Rx batch histogram: `"0:1000,4:5000"` or {batch size: rx_burst calls}."""


def packet_size(frame: int | None, pkt: int | None) -> int | None:
    """The bytes DMA'd per packet that `frame` (incl. FCS) or `pkt` (DMA'd) gives; one of
    them, or None for neither."""
    if frame is not None and pkt is not None:
        raise UsageError(f"frame {frame} and pkt {pkt} both give the packet size; give one")
    return pkt if frame is None else frame - FCS_BYTES


def forwarding_config(
    *,
    pkt: int = DEFAULT_PKT,
    rx_desc: int = 32,
    tx_desc: int = 16,
    rs_thresh: int = 32,
    rx_free_thresh: int = 32,
    batch: float | None = None,
    batch_hist: BatchHistogram | None = None,
    doorbell_bytes: int = 4,
    tx_wb_full_line: bool = False,
) -> ForwardingConfig:
    """A forwarding setup from the CLI's forwarding options (`--rx-desc`, `--batch`, ...),
    same defaults; `batch_hist` gives the mean batch where `batch` is not given."""
    from pcieperf.dpdk import forwarding

    hist = parse_batch_histogram(batch_hist) if isinstance(batch_hist, str) else batch_hist
    if hist is not None and batch is not None:
        raise UsageError(f"batch {batch:g} and a batch histogram both give the batch; give one")
    return forwarding.ForwardingConfig(
        pkt_bytes=pkt,
        rx_desc_bytes=rx_desc,
        tx_desc_bytes=tx_desc,
        rs_thresh=rs_thresh,
        rx_free_thresh=rx_free_thresh,
        batch=forwarding.batch_from_args(batch, hist),
        doorbell_bytes=doorbell_bytes,
        full_line_tx_writeback=tx_wb_full_line,
    )


METRIC_COLUMNS = (Column("metric", "metric"), Column("gbps", "Gb/s"), Column("gBps", "GB/s"))
TERM_COLUMNS = (
    Column("term", "term"),
    Column("metric", "metric"),
    Column("data_bytes_per_pkt", "data B/pkt"),
    Column("data_gbps", "data Gb/s"),
    Column("wire_up_gbps", "wire up Gb/s"),
    Column("wire_down_gbps", "wire down Gb/s"),
)


def dpdk_forwarding(
    *,
    pps: float | str = DEFAULT_PPS,
    frame: int | None = None,
    pkt: int | None = None,
    mix: str | None = None,
    eth: int = 40,
    profile: str | None = None,
    from_run: int | None = None,
    **options: object,
) -> Table:
    """What DPDK forwarding at `pps` puts on PCIe, term by term, and the highest rate an `eth`
    port forwards with what limits it (`pcieperf dpdk-fwd`, the VTune recipe). The packet is a
    `frame` (incl. FCS), `pkt` bytes DMA'd (default 64) or a frame-size `mix`; `options` are
    `forwarding_config`'s and `make_link`'s; `from_run` names the stored `dpdk run` the rate
    and histogram came from, as the result records."""
    from pcieperf.dpdk import forwarding
    from pcieperf.net.ethernet import Ethernet, parse_mix
    from pcieperf.nic.nic import load_profile

    size = packet_size(frame, pkt)
    if mix is not None and size is not None:
        raise UsageError("--mix sets the frame sizes; drop --frame/--pkt")
    link, cfg = link_and_config(size, **options)
    rate = parse_rate(str(pps))
    frames = parse_mix(mix) if mix is not None else None
    loaded = load_profile(profile or forwarding.FORWARDING_PROFILE)
    est = forwarding.estimate(cfg, link, rate, loaded, frames)
    best = forwarding.forwarding_rate(cfg, link, Ethernet(eth), loaded, frames)
    if rate > est.max_pps:
        warn(
            f"{rate / 1e6:.6g} Mpps needs {float(est.wire_up_gbps):.1f} Gb/s up and "
            f"{float(est.wire_down_gbps):.1f} Gb/s down, but Gen{link.gen} x{link.lanes} carries "
            f"{link.tlp_gbps:.1f} Gb/s per direction: at most {est.max_pps / 1e6:.2f} Mpps"
        )
    per_pkt = None if frames else cfg.pkt_bytes
    to_gbps = rate * 8 / 1e9
    data = {
        **({"from_run": from_run} if from_run else {}),
        "pps": rate,
        "pkt": per_pkt,
        "frame_bytes": None if per_pkt is None else per_pkt + FCS_BYTES,
        "frames": best.label[0],
        "mean_frame_bytes": float(best.mean_frame_bytes[0]),
        "mean_batch": cfg.batch,
        **{f"{m}_gbps": float(est.metric_gbps(m)) for m in forwarding.METRICS},
        "pcie_up_gbps": float(est.wire_up_gbps),
        "pcie_down_gbps": float(est.wire_down_gbps),
        "link_tlp_gbps": link.tlp_gbps,
        "pcie_max_pps": est.max_pps,
        "line_pps": float(best.line_pps[0]),
        "max_pps": float(best.max_pps[0]),
        "bottleneck": str(best.bottleneck[0]),
        "limited_by": best.limited_by[0],
        "profile": loaded.name,
        "terms": [
            {
                "term": t.name,
                "metric": t.metric,
                "initiator": t.initiator,
                "data_bytes_per_pkt": t.data_bytes,
                "data_gbps": t.data_bytes * to_gbps,
                "wire_up_bytes_per_pkt": t.wire_up_bytes,
                "wire_down_bytes_per_pkt": t.wire_down_bytes,
                "wire_up_gbps": t.wire_up_bytes * to_gbps,
                "wire_down_gbps": t.wire_down_bytes * to_gbps,
            }
            for t in est.terms
        ],
    }
    return _forwarding_table(data, link, eth, est.max_pps, frames.name if frames else None)


def link_and_config(pkt: int | None, **options: object) -> tuple[Link, ForwardingConfig]:
    """The link and the forwarding setup of `pkt` bytes DMA'd (default 64) that `options`
    (`make_link`'s and `forwarding_config`'s keywords) give."""
    link_keys = make_link.__kwdefaults__ or {}
    link = make_link(**{k: v for k, v in options.items() if k in link_keys})  # type: ignore[arg-type]
    rest = {k: v for k, v in options.items() if k not in link_keys}
    return link, forwarding_config(pkt=DEFAULT_PKT if pkt is None else pkt, **rest)  # type: ignore[arg-type]


def _forwarding_table(
    data: dict, link: Link, eth: int, pcie_max_pps: float, mix_name: str | None
) -> Table:
    """`dpdk-fwd`'s text: the setup, each metric's Gb/s, each term, the wire and the limit."""
    from pcieperf.dpdk.forwarding import METRICS

    frames = (
        f"{mix_name} frames" if mix_name else f"{data['pkt']} B packets ({data['frames']} B frames)"
    )
    head = (
        f"DPDK forwarding ({data['profile']}) at {data['pps'] / 1e6:.3f} Mpps, {frames}, mean "
        f"batch {data['mean_batch']:.2f}, Gen{link.gen} x{link.lanes}"
    )
    metrics = [
        {"metric": m, "gbps": data[f"{m}_gbps"], "gBps": data[f"{m}_gbps"] / 8} for m in METRICS
    ]
    wire = (
        f"PCIe wire: up {data['pcie_up_gbps']:.2f} Gb/s, down {data['pcie_down_gbps']:.2f} "
        f"Gb/s of {data['link_tlp_gbps']:.2f}; the link carries at most "
        f"{pcie_max_pps / 1e6:.2f} Mpps"
    )
    limit = (
        f"on {eth:g} GbE at most {data['max_pps'] / 1e6:.2f} Mpps, limited by "
        f"{' + '.join(data['limited_by'])} (bottleneck {data['bottleneck']})"
    )
    # The metrics table above the terms, a blank line between them.
    title = f"{head}\n{Table(metrics, METRIC_COLUMNS).to_text()}\n"
    footer = f"{wire}\n{limit}"
    return Table(data, TERM_COLUMNS, title=title, footer=footer, text_rows=data["terms"])

"""The public functions of the DPDK forwarding estimate (`pp.dpdk_forwarding`,
`pp.dpdk_fwd_trace`). Keyword arguments are named as the CLI's options; results print as the
CLI prints them (pcieperf.results). A packet size is an Ethernet frame incl. FCS (`frame`);
`pkt` counts the bytes the NIC DMAs, the frame less its FCS (docs/units.md)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pcieperf._keywords import forwards
from pcieperf.dpdk.port import DEFAULT_PORT
from pcieperf.errors import UsageError, param, warn
from pcieperf.net.ethernet import Ethernet, check_frame, parse_mix
from pcieperf.net.wire import DEFAULT_FRAME_BYTES, DEFAULT_PPS, FCS_BYTES, frames_text
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pcie.api import make_link
from pcieperf.results import Column, Table
from pcieperf.units import parse_batch_histogram, parse_duration_ns, parse_rate

if TYPE_CHECKING:
    from pcieperf.dpdk.forwarding import ForwardingConfig
    from pcieperf.pcie.link import Link
    from pcieperf.results import Report

DEFAULT_PKT = DEFAULT_FRAME_BYTES - FCS_BYTES  # bytes DMA'd where no size is given
BatchHistogram = str | dict[int, float]
"""An Rx batch histogram: `"0:1000,4:5000"` or {batch size: rx_burst calls}."""


def packet_size(frame: int | None, pkt: int | None) -> int | None:
    """The bytes DMA'd per packet that `frame` (incl. FCS) or `pkt` (DMA'd) gives; one of
    them, or None for neither."""
    if frame is not None and pkt is not None:
        raise UsageError(f"frame {frame} and pkt {pkt} both give the packet size; give one")
    if frame is None and pkt is not None:  # checked as the frame it is
        frame = pkt + FCS_BYTES if type(pkt) is int else pkt
    return None if frame is None else check_frame(frame) - FCS_BYTES


def forwarding_config(
    *,
    pkt: int = DEFAULT_PKT,
    rx_desc: int = DEFAULT_PORT.rx_desc_bytes,
    tx_desc: int = DEFAULT_PORT.tx_desc_bytes,
    rs_thresh: int = DEFAULT_PORT.rs_thresh,
    rx_free_thresh: int = DEFAULT_PORT.rx_free_thresh,
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
TERM_DROP = ("data_gbps", "data_bytes_per_pkt", "metric", "wire_down_gbps")
"""The terms' columns a narrow terminal leaves out, least wanted first (the term and its wire
bytes up stay)."""


@forwards(forwarding_config, make_link, skip=("pkt",))
def dpdk_fwd_trace(
    trace: str | os.PathLike[str],
    *,
    window: str = "1ms",
    poll: str = "1us",
    profile: str | None = None,
    skip_bad: bool = False,
    frame: int | None = None,
    pkt: int | None = None,
    **options: object,
) -> Report:
    """DPDK forwarding of a capture (`pcieperf dpdk-fwd --trace`): Rx batches from its
    arrivals with the PMD polling every `poll`, each packet at its own size, and the PCIe
    Gb/s per `window` up and down (`nic.captures.demand_report`); `options` as
    `dpdk_forwarding` takes them; `source` is the `Demand`, for a plot of it."""
    from pcieperf.dpdk.forwarding import trace_forwarding
    from pcieperf.net.trace.timeline import timeline
    from pcieperf.nic.captures import demand_report
    from pcieperf.nic.profile import load_profile

    link, cfg = link_and_config(packet_size(frame, pkt), **options)
    window_ns = parse_duration_ns(window, "window")
    poll_ns = parse_duration_ns(poll, "poll period")
    loaded = load_profile(profile or DEFAULT_PROFILE)
    captured = timeline(trace, skip_bad=skip_bad)
    fwd = trace_forwarding(cfg, link, captured, window_ns, poll_ns, loaded)
    extra = {
        "poll_ns": poll_ns,
        "mean_batch": fwd.mean_batch,
        "batch_hist": {str(k): v for k, v in sorted(fwd.batch_hist.items())},
    }
    for metric, rates in fwd.metric_rates.items():  # the windows' rule, as for the wire demand
        extra[f"{metric}_gbps"] = rates.mean
        extra[f"peak_{metric}_gbps"] = rates.peak
    note = f"mean Tx batch {fwd.mean_batch:.2f} (PMD polling every {poll_ns} ns)\n"
    return demand_report(captured, fwd.demand, link, extra, note)


@forwards(forwarding_config, make_link, skip=("pkt",))
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
    from pcieperf.nic.profile import load_profile

    size = packet_size(frame, pkt)
    if mix is not None and size is not None:
        raise UsageError(
            f"{param('mix')} sets the frame sizes; drop {param('frame')}/{param('pkt')}"
        )
    link, cfg = link_and_config(size, **options)
    rate = parse_rate(str(pps))
    frames = parse_mix(mix) if mix is not None else None
    loaded = load_profile(profile or DEFAULT_PROFILE)
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
    given = {k: v for k, v in options.items() if k in link_keys}
    link = make_link(**given)  # type: ignore[arg-type]  # make_link checks each keyword
    rest = {k: v for k, v in options.items() if k not in link_keys}
    size = DEFAULT_PKT if pkt is None else pkt
    return link, forwarding_config(pkt=size, **rest)  # type: ignore[arg-type]  # checked there


def _forwarding_table(
    data: dict[str, Any], link: Link, eth: int, pcie_max_pps: float, mix_name: str | None
) -> Table:
    """`dpdk-fwd`'s text: the setup, each metric's Gb/s, each term, the wire and the limit."""
    from pcieperf.dpdk.forwarding import METRICS

    frames = f"{mix_name} frames" if mix_name else frames_text(data["pkt"])
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
        f"{' + '.join(data['limited_by'])}"
    )
    # The metrics table, then the terms' (a blank line between them), the wire and the limit.
    terms = Table(
        data["terms"], TERM_COLUMNS, title="\nterm by term:", footer=f"{wire}\n{limit}",
        optional=TERM_DROP,
    )  # fmt: skip
    return Table(data, METRIC_COLUMNS, title=head, text_rows=metrics, details=[terms], expand=False)

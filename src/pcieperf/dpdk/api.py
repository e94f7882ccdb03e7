"""The public functions of the DPDK models: the IOMMU port model (`pp.iommu.sim/gain/advise`),
the platforms (`pp.platforms`) and the forwarding estimate (`pp.dpdk_forwarding`). Keyword
arguments are named as the CLI's options (`iommu sim --rxd 512` is `sim(rxd=512)`), with the
defaults of the one port setup (`pcieperf.dpdk.port.PortSetup`); results print as the CLI
prints them (pcieperf.results). A packet size is an Ethernet frame incl. FCS (`frame`); `pkt`
counts the bytes the NIC DMAs, the frame less its FCS (docs/units.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf.dpdk import platforms as platform_profiles
from pcieperf.dpdk import setups
from pcieperf.dpdk.iommu.advise import advise as advise_rings
from pcieperf.dpdk.iommu.advise import gain as ring_gains
from pcieperf.dpdk.iommu.model import Model
from pcieperf.dpdk.iommu.platform import Platform, Traffic, load_platform
from pcieperf.dpdk.port import PortSetup, parse_page
from pcieperf.errors import UsageError, param, warn
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.net.wire import DEFAULT_FRAME_BYTES, DEFAULT_PPS, FCS_BYTES, frames_text
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pcie.api import make_link
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION
from pcieperf.results import Column, Report, Table
from pcieperf.units import parse_batch_histogram, parse_duration_ns, parse_rate

if TYPE_CHECKING:
    from pcieperf.dpdk.forwarding import ForwardingConfig
    from pcieperf.pcie.link import Link

PORT = PortSetup()  # the defaults every option below takes
GAIN_SIZES = ("64", "128", "256", "imix")  # `iommu gain --sizes`


@dataclass(frozen=True)
class Inputs:
    """What the `iommu` options describe: the platform, the port setup, the traffic and the
    packets simulated per run (None: runs end once their rate is steady, `iommu.Model`)."""

    platform: Platform
    setup: PortSetup
    traffic: Traffic
    packets: int | None
    platform_profile: platform_profiles.PlatformProfile  # where the IOMMU, LLC and core come from
    testbed: setups.Testbed | None = None  # `--setup`: what it fixes, named in every output

    def model(self) -> Model:
        """The model of this platform and traffic."""
        return Model(self.platform, self.traffic, self.packets)

    def with_setup(self, payload: dict[str, Any]) -> dict[str, Any]:
        """`payload` with a `setup` block (`Testbed.as_dict`) where a setup was given; without
        one it is unchanged, so outputs without `--setup` stay as they were."""
        return payload if self.testbed is None else {**payload, "setup": self.testbed.as_dict()}

    def setup_line(self) -> str:
        """The line naming the setup and the parameters it fixes; empty without a setup."""
        return "" if self.testbed is None else self.testbed.inferred_text()


def inputs(
    *,
    page: str = PORT.page,
    rxd: int = PORT.rxd,
    txd: int | None = None,
    pool: int = PORT.pool,
    cache: int = PORT.cache,
    queues: int = PORT.queues,
    ports: int = PORT.ports,
    cross_port: bool = PORT.cross_port,
    rx_desc: int = PORT.rx_desc_bytes,
    tx_desc: int = PORT.tx_desc_bytes,
    rx_free_thresh: int = PORT.rx_free_thresh,
    tx_free_thresh: int = PORT.tx_free_thresh,
    rs_thresh: int = PORT.rs_thresh,
    burst: int = PORT.burst,
    layout: str = PORT.layout,
    iova: str = PORT.iova,
    poll_delay: float = PORT.poll_delay_us,
    platform: str | Path = platform_profiles.DEFAULT_PLATFORM,
    frame: str | int = "64",
    eth: int = 40,
    pace: float | None = None,
    gen: int = 3,
    lanes: int = 8,
    iotlb: int | None = None,
    iotlb_ways: int | None = None,
    replacement: str | None = None,
    pwc: int | None = None,
    profile: str = DEFAULT_PROFILE,
    calibration: str | Path = DEFAULT_CALIBRATION,
    packets: int | None = None,
    setup: str | Path | None = None,
    offered: str | float = "line",
    overload: str = "tx-full",
) -> Inputs:
    """The `iommu` commands' options (same names, same defaults) as model inputs: `frame` is
    an Ethernet frame incl. FCS, a mix (`imix`) or `size:count,...`; `txd` defaults to
    `rxd`; `iotlb`, `iotlb_ways`, `replacement` and `pwc` override the platform's IOMMU.
    `setup` (a shipped testbed or a setup TOML, `pcieperf.dpdk.setups`) sets the ports, pool,
    cache, pages, IOVA mode, link and Ethernet rate its command line and NICs fix; `offered` is
    the load the generator offers: `line`, a share of line rate (`70%`) or Mpps over all ports;
    `overload` where a port whose walks outrun the walkers queues (`iommu.OVERLOADS`)."""
    testbed = None if setup is None else setups.load_testbed(setup)
    if testbed is not None:
        gen, lanes, eth = testbed.gen, testbed.lanes, testbed.eth_gbps
    loaded = load_platform(
        Path(calibration),
        gen=gen,
        lanes=lanes,
        platform=platform,
        iotlb_entries=iotlb,
        iotlb_ways=iotlb_ways,
        replacement=replacement,
        pwc_entries=pwc,
        profile=profile,
    )
    port = PortSetup(
        page=parse_page(page),
        rxd=rxd,
        txd=rxd if txd is None else txd,
        pool=pool,
        cache=cache,
        queues=queues,
        ports=ports,
        cross_port=cross_port,
        rx_desc_bytes=rx_desc,
        tx_desc_bytes=tx_desc,
        rx_free_thresh=rx_free_thresh,
        tx_free_thresh=tx_free_thresh,
        rs_thresh=rs_thresh,
        burst=burst,
        layout=layout,
        iova=iova,
        poll_delay_us=poll_delay,
    )
    loaded = replace(loaded, overload=overload)
    if testbed is not None:
        loaded, port = testbed.platform(loaded), testbed.port_setup(port)
    share, offer_mpps = parse_offered(offered)
    traffic = Traffic(parse_mix(str(frame)), Ethernet(eth), pace, share, offer_mpps)
    profile_of = platform_profiles.load_platform_profile(platform, Path(calibration))
    return Inputs(loaded, port, traffic, packets, profile_of, testbed)


def parse_offered(text: str | float) -> tuple[float, float | None]:
    """`--offered`: `line` (1.0, None), a share of line rate `P%` (P / 100, None) or Mpps over
    all ports (1.0, Mpps)."""
    token = str(text).strip().lower()
    try:
        if token == "line":
            return 1.0, None
        if token.endswith("%"):
            return float(token[:-1]) / 100, None
        return 1.0, float(token)
    except ValueError:
        raise UsageError(
            f"offered load {text!r} is not allowed; use line, a share of line rate (70%) or Mpps"
        ) from None


# --- iommu sim ------------------------------------------------------------------------------

_STATE_WORDS = {
    "light": "near empty",
    "rx-full": "Rx ring full: the lcores poll slower than the NIC receives",
    "tx-full": "Tx ring full: page walks hold the NIC's Tx DMA back; the lcores drop "
    "what tx_burst refuses",
    "both-full": "Rx and Tx rings full: the lcores poll slower than the NIC receives and "
    "still faster than it transmits",
}


def sim(**options: object) -> Report:
    """IOTLB misses per packet and the packet rate with and without the IOMMU for one setup
    (`pcieperf iommu sim`); `options` as `inputs` takes them."""
    given = inputs(**options)  # type: ignore[arg-type]
    result = given.with_setup(given.model().evaluate(given.setup).as_dict())
    text = sim_text(result)
    return Report(result, "\n".join(part for part in (given.setup_line(), text) if part))


def sim_text(r: dict[str, Any]) -> str:
    """The report of one evaluated setup (`iommu sim`)."""
    bounds = ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(r["bounds_mpps"].items(), key=lambda kv: kv[1])
    )
    return "\n".join(
        [
            f"{r['mix']} B frames, {r['page']} pages, rxd/txd {r['rxd']}/{r['txd']}, pool "
            f"{r['pool']}, IOVA as {r['iova'].upper()}: {r['working_set_pages']} pages touched, "
            f"{r['iotlb_entries']}-entry IOTLB ({r['platform']})",
            f"  NIC                      {r['device']} ({r['profile']}, "
            f"{r['read_requests']} read requests)",
            f"  rings                    {_STATE_WORDS[r['state']]}",
            f"  IOTLB misses per packet  {r['iotlb_misses_per_pkt']:.3f} received, "
            f"{r['iotlb_misses_per_fwd_pkt']:.3f} forwarded",
            f"  line rate                {r['line_mpps']:.2f} Mpps",
            f"  nic model                {r['nic_mpps']:.2f} Mpps (`nic --profile {r['profile']}`: "
            "line and PCIe only)",
            f"  without IOMMU            {r['mpps_no_iommu']:.2f} Mpps, limited by "
            f"{' + '.join(r['limited_by_no_iommu']) or 'nothing reached'}",
            f"  with IOMMU               {r['mpps_iommu']:.2f} Mpps "
            f"(x{r['throughput_ratio']:.2f}, +{r['added_latency_ns']:.0f} ns per DMA, walkers "
            f"{100 * r['walker_utilization']:.0f} % busy)",
            f"  bottleneck               {r['bottleneck']}",
            f"  limited by               {' + '.join(r['limited_by']) or 'nothing reached'}",
            f"  bounds (Mpps)            {bounds}",
        ]
    )


# --- iommu gain -----------------------------------------------------------------------------

GAIN_COLUMNS = (
    Column("size", "size"),
    Column("mpps_from", "from (Mpps)"),
    Column("mpps_to", "to (Mpps)"),
    Column("gain_pct", "gain (%)"),
    Column("misses_per_pkt_from", "from (misses/pkt)"),
    Column("misses_per_pkt_to", "to (misses/pkt)"),
    Column("state_from", "from (rings)"),
    Column("state_to", "to (rings)"),
)


def gain(
    *,
    from_rxd: int = PORT.rxd,
    from_txd: int | None = None,
    to_rxd: int = 128,
    to_txd: int | None = None,
    sizes: Iterable[str | int] = GAIN_SIZES,
    **options: object,
) -> Table:
    """Packet rate with the IOMMU before and after shrinking the rings from `from_rxd` to
    `to_rxd` (each `*_txd` defaults to its rxd), one row per frame size or mix
    (`pcieperf iommu gain`); `options` as `inputs` takes them, less `rxd`, `txd`, `frame`."""
    given = inputs(**options)  # type: ignore[arg-type]
    setup = replace(given.setup, rxd=from_rxd, txd=from_txd or from_rxd)
    rows = ring_gains(
        given.platform,
        given.traffic.eth,
        setup,
        to_rxd,
        to_txd or to_rxd,
        [parse_mix(str(size)) for size in sizes],
        given.packets,
        offer_from=given.traffic,
    )
    return Table([given.with_setup(row) for row in rows], GAIN_COLUMNS, title=given.setup_line())


# --- iommu advise ---------------------------------------------------------------------------

ADVICE_COLUMNS = (
    Column("change", "change"),
    Column("mpps_iommu", "Mpps"),
    Column("iotlb_misses_per_pkt", "misses/pkt"),
)


def advise(
    *, progress: Callable[[list[Any]], Iterable[Any]] | None = None, **options: object
) -> Report:
    """The smallest single change (rings, pool, pages, Rx pacing) that restores the IOMMU-free
    rate, and the sweep behind it (`pcieperf iommu advise`); `options` as `inputs` takes them;
    `progress` wraps the sweep (the CLI's progress bar); `source` is the model's `Advice`."""
    given = inputs(**options)  # type: ignore[arg-type]
    advice = advise_rings(
        given.platform,
        given.traffic,
        given.setup,
        given.packets,
        progress=progress or (lambda items: items),
    )
    payload = given.with_setup(advice.as_dict())
    setup_line = given.setup_line() and f"{given.setup_line()}\n"
    table = Table(
        payload,
        ADVICE_COLUMNS,
        title=f"{setup_line}recommendation: {payload['recommendation']}\n{payload['reason']}",
        text_rows=payload["options"],
    )
    return Report(payload, table.to_text(), source=advice)


# --- platforms -----------------------------------------------------------------------------------

PLATFORM_COLUMNS = (
    Column("name", "platform"),
    Column("title", "title"),
    Column("iotlb", "IOTLB (entries)"),
    Column("walkers", "walkers"),
    Column("evidence", "evidence"),
)
PARAMETER_COLUMNS = (
    Column("parameter", "parameter"),
    Column("value", "value"),
    Column("range", "range"),
    Column("kind", "kind"),
    Column("source", "source"),
)


def platforms(name: str | None = None, *, calibration: str | Path = DEFAULT_CALIBRATION) -> Table:
    """The platform IOMMU profiles with their evidence (`pcieperf platforms`), or one of them
    (a name or a .toml file) parameter by parameter: value, the range the evidence leaves open,
    kind of evidence, source."""
    load = platform_profiles.load_platform_profile
    if name:
        profile = load(name, Path(calibration))
        rows = [
            {
                "parameter": k,
                "value": f"{p.value:g}",
                "range": f"{p.low:g}-{p.high:g}",
                "kind": p.kind,
                "source": p.source,
            }
            for k, p in profile.params.items()
        ]
        title = f"{profile.name}: {profile.title}\n"
        return Table(profile.as_dict(), PARAMETER_COLUMNS, title=title, text_rows=rows)
    profiles = [load(n, Path(calibration)) for n in platform_profiles.builtin_platforms()]
    rows = [
        {
            "name": p.name,
            "title": p.title,
            "iotlb": f"{p.value('iommu.iotlb_entries')}",
            "walkers": f"{p.value('iommu.walkers')}",
            "evidence": ", ".join(sorted({q.kind for q in p.params.values()})),
        }
        for p in profiles
    ]
    return Table([p.as_dict() for p in profiles], PLATFORM_COLUMNS, text_rows=rows)


# --- forwarding ----------------------------------------------------------------------------------

DEFAULT_PKT = DEFAULT_FRAME_BYTES - FCS_BYTES  # bytes DMA'd where no size is given
BatchHistogram = str | dict[int, float]
"""An Rx batch histogram: `"0:1000,4:5000"` or {batch size: rx_burst calls}."""


def packet_size(frame: int | None, pkt: int | None) -> int | None:
    """The bytes DMA'd per packet that `frame` (incl. FCS) or `pkt` (DMA'd) gives; one of
    them, or None for neither."""
    if frame is not None and pkt is not None:
        raise UsageError(f"frame {frame} and pkt {pkt} both give the packet size; give one")
    if frame is None:
        return pkt
    from pcieperf.dpdk.forwarding import MAX_PKT_BYTES

    if not (isinstance(frame, int) and FCS_BYTES < frame <= MAX_PKT_BYTES + FCS_BYTES):
        raise UsageError(
            f"frame {frame!r} is not allowed; use {FCS_BYTES + 1} to "
            f"{MAX_PKT_BYTES + FCS_BYTES} bytes (incl. its {FCS_BYTES} B FCS)"
        )
    return frame - FCS_BYTES


def forwarding_config(
    *,
    pkt: int = DEFAULT_PKT,
    rx_desc: int = PORT.rx_desc_bytes,
    tx_desc: int = PORT.tx_desc_bytes,
    rs_thresh: int = PORT.rs_thresh,
    rx_free_thresh: int = PORT.rx_free_thresh,
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
    from pcieperf.net.trace.files import read
    from pcieperf.nic.captures import demand_report
    from pcieperf.nic.profile import load_profile

    link, cfg = link_and_config(packet_size(frame, pkt), **options)
    captured = read(trace, skip_bad=skip_bad)
    window_ns = parse_duration_ns(window, "window")
    poll_ns = parse_duration_ns(poll, "poll period")
    loaded = load_profile(profile or DEFAULT_PROFILE)
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
    link = make_link(**{k: v for k, v in options.items() if k in link_keys})  # type: ignore[arg-type]
    rest = {k: v for k, v in options.items() if k not in link_keys}
    return link, forwarding_config(pkt=DEFAULT_PKT if pkt is None else pkt, **rest)  # type: ignore[arg-type]


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
        f"{' + '.join(data['limited_by'])} (bottleneck {data['bottleneck']})"
    )
    # The metrics table above the terms, a blank line between them.
    title = f"{head}\n{Table(metrics, METRIC_COLUMNS).to_text()}\n"
    footer = f"{wire}\n{limit}"
    return Table(
        data, TERM_COLUMNS, title=title, footer=footer, text_rows=data["terms"], expand=False
    )

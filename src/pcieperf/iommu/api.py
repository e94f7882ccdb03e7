"""The public functions of the IOMMU port model: `pp.iommu.sim/gain/advise` and the platforms
(`pp.platforms`). Keyword arguments are named as the CLI's options (`iommu sim --rxd 512` is
`sim(rxd=512)`), with the defaults of the one port setup (`pcieperf.dpdk.port.PortSetup`);
results print as the CLI prints them (pcieperf.results). A packet size is an Ethernet frame
incl. FCS (`frame`; docs/units.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pcieperf._keywords import forwards
from pcieperf.dpdk.port import DEFAULT_PORT, PortSetup, parse_page
from pcieperf.errors import UsageError
from pcieperf.iommu import profiles as platform_profiles
from pcieperf.iommu import setups
from pcieperf.iommu.advice import advise as advise_rings
from pcieperf.iommu.advice import gain as ring_gains
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import Platform, Traffic, load_platform
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION
from pcieperf.results import Column, Report, Table
from pcieperf.text import pairs
from pcieperf.units import decimal

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
    page: str = DEFAULT_PORT.page,
    rxd: int = DEFAULT_PORT.rxd,
    txd: int | None = None,
    pool: int = DEFAULT_PORT.pool,
    cache: int = DEFAULT_PORT.cache,
    queues: int = DEFAULT_PORT.queues,
    ports: int = DEFAULT_PORT.ports,
    cross_port: bool = DEFAULT_PORT.cross_port,
    rx_desc: int = DEFAULT_PORT.rx_desc_bytes,
    tx_desc: int = DEFAULT_PORT.tx_desc_bytes,
    rx_free_thresh: int = DEFAULT_PORT.rx_free_thresh,
    tx_free_thresh: int = DEFAULT_PORT.tx_free_thresh,
    rs_thresh: int = DEFAULT_PORT.rs_thresh,
    burst: int = DEFAULT_PORT.burst,
    layout: str = DEFAULT_PORT.layout,
    iova: str = DEFAULT_PORT.iova,
    poll_delay: float = DEFAULT_PORT.poll_delay_us,
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
    `setup` (a shipped testbed or a setup TOML, `pcieperf.iommu.setups`) sets the ports, pool,
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


@forwards(inputs)
def sim(**options: object) -> Report:
    """IOTLB misses per packet and the packet rate with and without the IOMMU for one setup
    (`pcieperf iommu sim`); `options` as `inputs` takes them."""
    given = inputs(**options)  # type: ignore[arg-type]  # inputs() checks each keyword
    result = given.with_setup(given.model().evaluate(given.setup).as_dict())
    return Report(
        result, lambda: "\n".join(part for part in (given.setup_line(), sim_text(result)) if part)
    )


def sim_text(r: dict[str, Any]) -> str:
    """The report of one evaluated setup (`iommu sim`)."""
    bounds = ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(r["bounds_mpps"].items(), key=lambda kv: kv[1])
    )
    head = (
        f"{r['mix']} B frames, {r['page']} pages, rxd/txd {r['rxd']}/{r['txd']}, pool "
        f"{r['pool']}, IOVA as {r['iova'].upper()}: {r['working_set_pages']} pages touched, "
        f"{r['iotlb_entries']}-entry IOTLB ({r['platform']})"
    )
    return "\n".join(
        [
            head,
            pairs(
                [
                    ("NIC", f"{r['device']} ({r['profile']}, {r['read_requests']} read requests)"),
                    ("rings", _STATE_WORDS[r["state"]]),
                    (
                        "IOTLB misses per packet",
                        f"{decimal(r['iotlb_misses_per_pkt'], 3)} received, "
                        f"{decimal(r['iotlb_misses_per_fwd_pkt'], 3)} forwarded",
                    ),
                    ("line rate", f"{r['line_mpps']:.2f} Mpps"),
                    (
                        "nic model",
                        f"{r['nic_mpps']:.2f} Mpps (`nic --profile {r['profile']}`: line and "
                        "PCIe only)",
                    ),
                    (
                        "without IOMMU",
                        f"{r['mpps_no_iommu']:.2f} Mpps, limited by "
                        f"{' + '.join(r['limited_by_no_iommu']) or 'nothing reached'}",
                    ),
                    (
                        "with IOMMU",
                        f"{r['mpps_iommu']:.2f} Mpps (x{r['throughput_ratio']:.2f}, "
                        f"+{r['added_latency_ns']:.0f} ns per DMA, walkers "
                        f"{100 * r['walker_utilization']:.0f} % busy)",
                    ),
                    ("limited by", " + ".join(r["limited_by"]) or "nothing reached"),
                    ("bounds (Mpps)", bounds),
                ]
            ),
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


@forwards(inputs)
def gain(
    *,
    from_rxd: int = DEFAULT_PORT.rxd,
    from_txd: int | None = None,
    to_rxd: int = 128,
    to_txd: int | None = None,
    sizes: Iterable[str | int] = GAIN_SIZES,
    **options: object,
) -> Table:
    """Packet rate with the IOMMU before and after shrinking the rings from `from_rxd` to
    `to_rxd` (each `*_txd` defaults to its rxd), one row per frame size or mix
    (`pcieperf iommu gain`); `options` as `inputs` takes them, less `rxd`, `txd`, `frame`."""
    given = inputs(**options)  # type: ignore[arg-type]  # inputs() checks each keyword
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
    return Table(
        [given.with_setup(row) for row in rows],
        GAIN_COLUMNS,
        title=given.setup_line(),
        optional=("misses_per_pkt_from", "misses_per_pkt_to"),
    )


# --- iommu advise ---------------------------------------------------------------------------

ADVICE_COLUMNS = (
    Column("change", "change"),
    Column("mpps_iommu", "Mpps"),
    Column("iotlb_misses_per_pkt", "misses/pkt"),
)


@forwards(inputs)
def advise(
    *, progress: Callable[[list[Any]], Iterable[Any]] | None = None, **options: object
) -> Report:
    """The smallest single change (rings, pool, pages, Rx pacing) that restores the IOMMU-free
    rate, and the sweep behind it (`pcieperf iommu advise`); `options` as `inputs` takes them;
    `progress` wraps the sweep (the CLI's progress bar); `source` is the model's `Advice`."""
    given = inputs(**options)  # type: ignore[arg-type]  # inputs() checks each keyword
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
    return Report(payload, table.to_text, source=advice)


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
    return Table(
        [p.as_dict() for p in profiles], PLATFORM_COLUMNS, text_rows=rows, optional=("evidence",)
    )

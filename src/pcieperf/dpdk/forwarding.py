"""The PCIe bandwidth of DPDK packet forwarding, term by term (Intel VTune cookbook recipe
"PCIe Traffic in DPDK Apps", 2020, whose equations this module writes out).

At packet rate R, for every forwarded packet the NIC reads an Rx descriptor, a Tx descriptor and
the packet (inbound reads); writes the packet and the Rx descriptor write-back, and a Tx
descriptor write-back once every RS-threshold packets (inbound writes); the core writes the Rx
tail once per max(Rx-free threshold, batch) packets and the Tx tail once per tx_burst call
(outbound writes). A poll-mode driver never reads device registers (no outbound reads).
The platform moves whole 64-byte cache lines, so packet data counts as CL(pkt) = ceil(pkt/64)*64.
The operations themselves are the `testpmd-fwd` NIC profile, evaluated with this module's
parameters, so `pcieperf nic --profile testpmd-fwd` and `pcieperf dpdk-fwd` never disagree.

Each term is given twice: as data bytes (what uncore counters such as VTune's report) and as
PCIe wire bytes per direction (TLP headers, framing, completions), from `pcieperf.pcie.tlp`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf.dpdk.port import DEFAULT_PORT, DESCRIPTOR_BYTES, PortSetup
from pcieperf.errors import UsageError, param, require_choice, require_positive
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.net.trace.bandwidth import Demand, Rates
from pcieperf.net.trace.timeline import Timeline
from pcieperf.net.wire import FCS_BYTES, MIN_FRAME_BYTES
from pcieperf.nic.nic import NicResult, evaluate, per_packet_wire_bytes, price_packets
from pcieperf.nic.pricing import price_operations
from pcieperf.nic.profile import (
    CACHE_LINE_BYTES,
    DEFAULT_PROFILE,
    Initiator,
    NicProfile,
    load_profile,
)
from pcieperf.pcie.link import Link

Metric = Literal["inbound_read", "inbound_write", "outbound_read", "outbound_write"]
METRICS: tuple[Metric, ...] = ("inbound_read", "inbound_write", "outbound_read", "outbound_write")


def mean_tx_batch(hist: dict[int, float]) -> float:
    """Mean Tx batch from an Rx batch histogram {batch size: rx_burst calls}.

    testpmd forwards what each rx_burst returned with one tx_burst, and skips tx_burst when
    rx_burst returned nothing; each tx_burst writes the Tx tail once. Doorbells per packet are
    therefore (non-empty calls) / (packets), so the batch that counts doorbells is packets per
    non-empty call: empty polls must not dilute it, and weighting by packets is what makes the
    recipe's peaks at 8, 10 and 12 average to 11.
    """
    sizes = np.array(list(hist), dtype=np.float64)
    calls = np.array(list(hist.values()), dtype=np.float64)
    packets = float(sizes @ calls)
    busy_calls = float(calls[sizes > 0].sum())
    if packets <= 0 or busy_calls <= 0:
        raise UsageError("batch histogram has no packets; it needs a batch size > 0 with calls > 0")
    return packets / busy_calls


MAX_PKT_BYTES = 65535  # bytes DMA'd per packet: the most a 16-bit length field holds


@dataclass(frozen=True)
class ForwardingConfig:
    """A DPDK forwarding setup; `batch` is the mean Tx batch (see `mean_tx_batch`). Its port
    fields (descriptor sizes, thresholds) default to the one port setup's (`PortSetup`):
    `port` and `from_port` convert."""

    pkt_bytes: int = 64
    rx_desc_bytes: int = DEFAULT_PORT.rx_desc_bytes
    tx_desc_bytes: int = DEFAULT_PORT.tx_desc_bytes
    rs_thresh: int = DEFAULT_PORT.rs_thresh
    rx_free_thresh: int = DEFAULT_PORT.rx_free_thresh
    batch: float = float(DEFAULT_PORT.burst)
    doorbell_bytes: int = 4
    full_line_tx_writeback: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.pkt_bytes, int) and 1 <= self.pkt_bytes <= MAX_PKT_BYTES):
            raise UsageError(
                f"packet size {self.pkt_bytes!r} is not allowed; use 1 to {MAX_PKT_BYTES} bytes"
            )
        require_choice("Rx descriptor size", self.rx_desc_bytes, DESCRIPTOR_BYTES)
        require_choice("Tx descriptor size", self.tx_desc_bytes, DESCRIPTOR_BYTES)
        for name in ("rs_thresh", "rx_free_thresh", "batch", "doorbell_bytes"):
            require_positive(param(name), getattr(self, name))

    @classmethod
    def from_port(cls, setup: PortSetup, **forwarding: object) -> ForwardingConfig:
        """The forwarding setup of a port: its descriptors, thresholds and burst (as the mean
        batch), and the `forwarding` fields given."""
        return cls(
            rx_desc_bytes=setup.rx_desc_bytes,
            tx_desc_bytes=setup.tx_desc_bytes,
            rs_thresh=setup.rs_thresh,
            rx_free_thresh=setup.rx_free_thresh,
            batch=float(setup.burst),
            **forwarding,  # type: ignore[arg-type]  # ForwardingConfig's own fields
        )

    def port(self, setup: PortSetup = DEFAULT_PORT) -> PortSetup:
        """`setup` (pages, rings, pool: the port's defaults unless given) with this forwarding
        setup's descriptor sizes and thresholds."""
        return replace(
            setup,
            rx_desc_bytes=self.rx_desc_bytes,
            tx_desc_bytes=self.tx_desc_bytes,
            rx_free_thresh=self.rx_free_thresh,
            rs_thresh=self.rs_thresh,
        )


METRIC_OF_INITIATOR: dict[Initiator, Metric] = {
    "dma_read": "inbound_read",
    "dma_write": "inbound_write",
    "interrupt": "inbound_write",  # an MSI-X message is a device write into host space
    "host_mmio_write": "outbound_write",
    "host_mmio_read": "outbound_read",
}
# The parameters a forwarding setup sets in a profile.
FORWARDING_PARAMS = (
    "rx_desc",
    "tx_desc",
    "rs_thresh",
    "tx_wb_counted",
    "rx_tail_every",
    "batch",
    "doorbell",
)


@dataclass(frozen=True)
class Term:
    """One contribution to the forwarding traffic, per packet."""

    name: str
    metric: Metric
    initiator: Initiator
    data_bytes: float
    wire_up_bytes: float
    wire_down_bytes: float


def forwarding_profile(cfg: ForwardingConfig, profile: NicProfile | None = None) -> NicProfile:
    """The forwarding profile with its parameters (`FORWARDING_PARAMS`) set from `cfg`; a
    profile that does not use one of them is priced as it stands. Descriptor fetch and
    write-back batching stay the profile's `[device]` facts."""
    base = profile or load_profile(DEFAULT_PROFILE)
    params = {
        **base.params,
        "rx_desc": cfg.rx_desc_bytes,
        "tx_desc": cfg.tx_desc_bytes,
        "rs_thresh": cfg.rs_thresh,
        "tx_wb_counted": CACHE_LINE_BYTES if cfg.full_line_tx_writeback else cfg.tx_desc_bytes,
        "rx_tail_every": max(cfg.rx_free_thresh, cfg.batch),
        "batch": cfg.batch,
        "doorbell": cfg.doorbell_bytes,
    }
    return replace(base, params={k: float(v) for k, v in params.items()})


def packet_mix(cfg: ForwardingConfig) -> PacketMix:
    """The one frame size `cfg.pkt_bytes` stands for (it counts bytes DMA'd, without FCS)."""
    frame = cfg.pkt_bytes + FCS_BYTES
    return PacketMix(str(frame), np.array([frame]), np.ones(1))


def forwarding_terms(
    cfg: ForwardingConfig,
    link: Link,
    profile: NicProfile | None = None,
    mix: PacketMix | None = None,
) -> list[Term]:
    """Per-packet terms of rx -> tx forwarding: counted data bytes and PCIe wire bytes, the mean
    over `mix` (frame sizes incl. FCS) or of `cfg.pkt_bytes`."""
    frames = mix or packet_mix(cfg)
    shares = price_operations(link, forwarding_profile(cfg, profile), frames.sizes)
    return [
        Term(
            s.op.what,
            METRIC_OF_INITIATOR[s.op.initiator],
            s.op.initiator,
            float(frames.mean(s.counted_bytes)),
            float(frames.mean(s.up_bytes)),
            float(frames.mean(s.down_bytes)),
        )
        for s in shares
    ]


def forwarding_rate(
    cfg: ForwardingConfig,
    link: Link,
    eth: Ethernet,
    profile: NicProfile | None = None,
    mix: PacketMix | Sequence[PacketMix] | None = None,
) -> NicResult:
    """The highest forwarding rate on an `eth` port and what limits it, at `mix` (several: a
    row each) or `cfg.pkt_bytes`: the `nic` model of the same profile with `cfg`'s parameters,
    so `dpdk-fwd`, `nic` and `capture model` cannot disagree."""
    mixes = [mix] if isinstance(mix, PacketMix) else list(mix or [packet_mix(cfg)])
    return evaluate(forwarding_profile(cfg, profile), link, eth, mixes)


@dataclass(frozen=True)
class ForwardingEstimate:
    """Bandwidth of every metric at each packet rate (arrays over `pps`)."""

    pps: NDArray[np.float64]
    terms: list[Term]
    link: Link

    def metric_gbps(self, metric: Metric) -> NDArray[np.float64]:
        """Data bandwidth of one counter metric, in Gb/s."""
        per_packet = sum(t.data_bytes for t in self.terms if t.metric == metric)
        return self.pps * per_packet * 8 / 1e9

    @property
    def wire_up_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth device to host, in Gb/s."""
        return self.pps * sum(t.wire_up_bytes for t in self.terms) * 8 / 1e9

    @property
    def wire_down_gbps(self) -> NDArray[np.float64]:
        """PCIe wire bandwidth host to device, in Gb/s."""
        return self.pps * sum(t.wire_down_bytes for t in self.terms) * 8 / 1e9

    @property
    def max_pps(self) -> float:
        """Highest forwarding rate the link carries (busier direction binds)."""
        per_packet = max(
            sum(t.wire_up_bytes for t in self.terms), sum(t.wire_down_bytes for t in self.terms)
        )
        return self.link.tlp_bytes_per_s / per_packet


def estimate(
    cfg: ForwardingConfig,
    link: Link,
    pps: ArrayLike,
    profile: NicProfile | None = None,
    mix: PacketMix | None = None,
) -> ForwardingEstimate:
    """Forwarding traffic of `cfg` (or of the frame-size `mix`) on `link` at the packet
    rate(s) given."""
    rate = np.asarray(pps, dtype=np.float64)
    if np.any(~np.isfinite(rate)) or np.any(rate < 0):
        raise UsageError(f"packet rate {rate.ravel()[0]!r} is not allowed; use a rate >= 0")
    return ForwardingEstimate(rate, forwarding_terms(cfg, link, profile, mix), link)


def batch_from_args(batch: float | None, hist: dict[int, float] | None) -> float:
    """The mean Tx batch from either a fixed batch or an Rx batch histogram."""
    if hist is not None:
        return mean_tx_batch(hist)
    value = 32.0 if batch is None else batch
    require_positive(param("batch"), value)
    return float(value)


RX_BURST = 32  # testpmd's default --burst: packets one rx_burst call may return


@dataclass(frozen=True)
class TraceForwarding:
    """Forwarding a trace: the Rx batches a polling PMD would see, the PCIe wire demand per
    window, and each counter metric's data bandwidth per window (Gb/s)."""

    demand: Demand
    batch_hist: dict[int, float]
    mean_batch: float
    metric_rates: dict[Metric, Rates]


def trace_forwarding(
    cfg: ForwardingConfig,
    link: Link,
    timeline: Timeline,
    window_ns: int,
    poll_ns: int,
    profile: NicProfile | None = None,
) -> TraceForwarding:
    """Forward a capture's packets at their capture times: batches come from the arrival
    pattern (`Timeline.poll_batches`), each packet is priced at its own size; the capture is
    read as it streams, once per pass."""
    hist = timeline.poll_batches(poll_ns, RX_BURST)
    batched = replace(cfg, batch=mean_tx_batch(hist))
    fwd = forwarding_profile(batched, profile)
    shares, index = price_packets(fwd, link, np.maximum(timeline.frame_sizes(), MIN_FRAME_BYTES))
    up, down = per_packet_wire_bytes(shares, index)
    metric_bytes = []
    for metric in METRICS:
        counted = [s.counted_bytes for s in shares if METRIC_OF_INITIATOR[s.op.initiator] == metric]
        metric_bytes.append(np.sum(counted, axis=0)[index] if counted else np.zeros(index.size))
    windows, frame_bytes = timeline.windows((up, down, *metric_bytes), window_ns)
    found = Demand(windows, link.tlp_bytes_per_s * 8 / 1e9, frame_bytes)
    return TraceForwarding(
        found,
        hist,
        batched.batch,
        dict(zip(METRICS, found.windows.series[2:], strict=True)),
    )

"""A port's DMA stream: the load state it runs in, the Rust core's parameters for it, its
IOTLB/DDIO miss counts, and what each transaction class costs (priced as `nic` prices it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

import numpy as np

from pcieperf._native import core
from pcieperf.dpdk import forwarding
from pcieperf.dpdk.port import DATA_OFFSET, ELEMENT_BYTES, LINE, PortSetup
from pcieperf.errors import param, require_positive
from pcieperf.iommu.platform import (
    HOST_MEMORY,
    LCORE,
    CoreCosts,
    IommuParams,
    Memory,
    Platform,
    Traffic,
)
from pcieperf.net.ethernet import dma_bytes
from pcieperf.nic.pricing import OpShare, price_operations, read_hold_bytes, tag_hold_ns
from pcieperf.nic.profile import NicProfile, Operation
from pcieperf.pciebench.sim import cache_lines

PACKETS = 200_000  # simulated per run after warm-up; +-1 % run to run (tests/iommu/test_iommu.py)
# A run of no fixed length (the default) ends once its rate's relative standard error (batch
# means, rust/core/src/port.rs RatePrecision) is at most this, after at least twice the pool
# and at most PACKETS packets (docs/iommu.md, "Run length").
REL_ERROR = 0.005


@dataclass(frozen=True)
class Load:
    """Where a port's packets wait and what its lcore drops: the state a load puts it in.

    `light`: both rings near empty. `rx-full`: the lcore polls slower than the NIC receives, so
    packets wait a full Rx ring and the NIC drops the excess before any DMA. `tx-full`: the
    NIC's Tx DMA falls behind, packets wait a full Tx ring and the lcore frees what tx_burst
    refuses (`drop_per_fwd` per forwarded packet, after their Rx DMA). `both-full`: both."""

    state: str = "light"
    rx_backlog: int = 0
    tx_backlog: int = 0
    drop_per_fwd: float = 0.0
    admit_mpps: float | None = None  # Rx DMA rate; None: the traffic's offered rate


LIGHT = Load()


def core_mpps(setup: PortSetup, lcore: CoreCosts) -> float:
    """Most packets per second the lcores take when every poll returns a full burst: burst per
    (poll delay + poll cost + burst x per-packet cost), per lane."""
    period_ns = setup.poll_delay_us * 1e3 + lcore.poll_ns + setup.burst * lcore.packet_ns
    return setup.lanes * setup.burst / period_ns * 1e3


def poll_batch(setup: PortSetup, traffic: Traffic, lcore: CoreCosts) -> int:
    """Packets per poll. Without a poll delay: full bursts (testpmd's saturated loop, as before
    pacing was modelled). With one: what arrives in a poll period P = delay + poll cost +
    batch x per-packet cost, i.e. b = rate (delay + poll) / (1 - rate x per-packet), at most a
    burst."""
    if not setup.poll_delay_us:
        return setup.burst
    rate = traffic.offered_mpps(setup.ports) / setup.lanes * 1e-3  # packets per ns per lane
    busy = 1.0 - rate * lcore.packet_ns
    if busy <= 0:
        return setup.burst
    batch = rate * (setup.poll_delay_us * 1e3 + lcore.poll_ns) / busy
    return max(1, min(setup.burst, round(batch)))


def port_params(
    setup: PortSetup,
    traffic: Traffic,
    iommu: IommuParams,
    packets: int,
    seed: int = 1,
    *,
    load: Load = LIGHT,
    memory: Memory = HOST_MEMORY,
    lcore: CoreCosts = LCORE,
    rel_error: float = 0.0,
) -> dict[str, object]:
    """The Rust core's parameters for a port stream in a load state and its IOMMU caches; a
    timed run with `rel_error` > 0 ends once its rate is that precise (at most `packets`)."""
    # Warm-up, and a measured window long enough that every mbuf that cycles at all (the whole
    # pool when buffers pass through the common ring) is seen twice: the working set is then
    # every page the stream ever reuses. A run of no fixed length warms up just that long: its
    # caches then hold what the cycling buffers left (the fixed 50 000 keep their old results).
    cycle = 2 * setup.pool
    warmup = cycle if rel_error else max(50_000, cycle)
    packets = max(packets, cycle)
    admit = load.admit_mpps or traffic.offered_mpps(setup.ports)
    skip = ("page", "poll_delay_us")
    return {
        **{k: v for k, v in asdict(setup).items() if k not in skip},
        "elt_bytes": ELEMENT_BYTES,
        "data_offset": DATA_OFFSET,
        "page_bytes": setup.page_bytes,
        "host_pages": max(int(memory.memory_gib * 2**30) // setup.page_bytes, 1),
        "rx_backlog": load.rx_backlog,
        "tx_backlog": load.tx_backlog,
        "drop_per_fwd": load.drop_per_fwd,
        "poll_batch": setup.burst if load.state != "light" else poll_batch(setup, traffic, lcore),
        "llc": memory.llc.shape() if memory.llc else None,
        "sizes": [int(s) for s in np.asarray(dma_bytes(traffic.mix.sizes))],
        "weights": [float(w) for w in traffic.mix.weights],
        "ns_per_packet": 1e3 / admit,
        "wire_shares": wire_shares(traffic),
        "seed": seed,
        **asdict(iommu),
        "warmup": warmup,
        "packets": packets,
        "rel_error": rel_error,
        "min_packets": cycle,
    }


def wire_shares(traffic: Traffic) -> list[float]:
    """Each size's wire time relative to the mix's mean (frame, preamble and inter-frame gap:
    `Ethernet.wire_bytes`): packets of a mix arrive back to back at the line's pace, a 64 B
    frame 84 B of wire time after the one before, not at the mix's mean spacing."""
    wire = traffic.eth.wire_bytes(traffic.mix.sizes)
    return [float(w) for w in wire / traffic.mix.mean(wire)]


@dataclass(frozen=True)
class MissCounts:
    """IOTLB and DDIO behaviour of a port's stream after warm-up, per packet the NIC wrote into
    host memory and per packet forwarded (they differ when the lcore drops at a full Tx ring)."""

    misses_per_pkt: float
    pwc_misses_per_pkt: float
    transactions_per_pkt: float
    working_set_pages: int
    misses_per_fwd_pkt: float = 0.0
    ddio_read_miss_fraction: float = 0.0


def count_misses(
    setup: PortSetup,
    traffic: Traffic,
    iommu: IommuParams,
    packets: int = PACKETS,
    seed: int = 1,
    *,
    load: Load = LIGHT,
    memory: Memory = HOST_MEMORY,
    lcore: CoreCosts = LCORE,
) -> MissCounts:
    """IOTLB misses per packet, pages touched and DDIO losses, from the address stream alone
    (no timing)."""
    require_positive(param("packets"), packets)
    params = port_params(
        setup, traffic, iommu, packets, seed, load=load, memory=memory, lcore=lcore
    )
    return per_packet_counts(core().port_misses(params))


def per_packet_counts(out: Mapping[str, Any]) -> MissCounts:
    """Per-packet counts of a Rust port run (`port_misses` or `port_simulate`)."""
    n, fwd = out["packets"], max(out["forwarded"], 1)
    return MissCounts(
        misses_per_pkt=out["iotlb_misses"] / n,
        pwc_misses_per_pkt=out["pwc_misses"] / n,
        transactions_per_pkt=out["transactions"] / n,
        working_set_pages=int(out["pages_touched"]),
        misses_per_fwd_pkt=out["iotlb_misses"] / fwd,
        ddio_read_miss_fraction=out["ddio_read_misses"] / max(out["ddio_reads"], 1),
    )


def forwarding_nic(setup: PortSetup, platform: Platform) -> NicProfile:
    """The platform's NIC profile with the setup's descriptors, thresholds and burst: exactly
    what `dpdk-fwd` prices for the same values."""
    cfg = forwarding.ForwardingConfig.from_port(setup)
    return forwarding.forwarding_profile(cfg, platform.device)


# The stream's descriptor classes (rust/core/src/dataplane.rs numbers them 0..3), by the path and
# initiator of the profile operations whose bytes they carry.
_DESCRIPTOR_CLASS = {
    ("rx", "dma_read"): 0,
    ("rx", "dma_write"): 1,
    ("tx", "dma_read"): 2,
    ("tx", "dma_write"): 3,
}


def _stream_class(path: str, op: Operation) -> int | None:
    """The descriptor class that carries an operation, or None for the path's packet DMA
    (the packet itself, and host MMIO and interrupts, which the stream does not emit)."""
    return None if op.moves_packet else _DESCRIPTOR_CLASS.get((path, op.initiator))


def _packets_per_occurrence(setup: PortSetup) -> list[int]:
    """How many packets pass per transaction of each descriptor class in the stream: a 64 B
    line of Rx descriptors read and written back, a line of Tx descriptors, an RS write-back."""
    rx_line, tx_line = LINE // setup.rx_desc_bytes, LINE // setup.tx_desc_bytes
    return [rx_line, rx_line, tx_line, setup.rs_thresh]


def burst_transactions(setup: PortSetup) -> int:
    """Transactions of one burst: a packet write and read per packet plus the descriptor
    classes. The simulator lets the Rx queue run this far ahead of the stream, so the NIC's Rx
    DMA fills the next burst while its Tx DMA sends the one the core has just handed over."""
    per_packet = 2 + sum(1 / n for n in _packets_per_occurrence(setup))
    return int(np.ceil(setup.burst * per_packet))


def transaction_classes(
    setup: PortSetup, traffic: Traffic, platform: Platform, costs: np.ndarray | None = None
) -> list[TransactionClass]:
    """Costs of each transaction class, in the order `rust/core/src/dataplane.rs` numbers them:
    Rx descriptor line read, Rx write-back line, Tx descriptor line read, Tx RS write-back,
    then a packet write and a packet read per size of the mix.

    The stream gives the addresses and the order; the bytes are the NIC profile's, priced as
    `nic` prices them: each operation's per-packet wire bytes, read requests and root-complex
    time ride on the class that carries it, times the packets that pass per transaction of that
    class, so a packet costs exactly what `nic` charges (MMIO doorbells and interrupts ride on
    the path's packet DMA). `costs`: `costs_per_packet` of the same, if already priced.
    """
    sizes = traffic.mix.sizes.size
    occurrences = np.array([*_packets_per_occurrence(setup), *[1] * (2 * sizes)], dtype=float)
    if costs is None:
        costs = costs_per_packet(setup, traffic, platform)
    per_occurrence = costs * occurrences[:, None, None]
    # Descriptor classes carry the mix's mean; packet class 4 + 2k (write) and 5 + 2k (read)
    # the k-th size's cost.
    per_class = [traffic.mix.weights @ per_occurrence[cls] for cls in range(4)]
    per_class += [per_occurrence[cls, (cls - 4) // 2] for cls in range(4, 4 + 2 * sizes)]
    return [
        _class(platform, _is_read(cls), _is_tx(cls), *cost[:HOLD])
        for cls, cost in enumerate(per_class)
    ]


def _is_read(cls: int) -> bool:
    """Whether a stream class is a read: descriptor line reads (0, 2) and packet reads."""
    return cls in (0, 2) or (cls >= 4 and cls % 2 == 1)


def _is_tx(cls: int) -> bool:
    """Whether a stream class is Tx DMA: Tx descriptors (2, 3) and packet reads."""
    return cls in (2, 3) or (cls >= 4 and cls % 2 == 1)


UP, DOWN, REQUESTS, RC_NS, HOLD = range(5)  # the cost axis of `costs_per_packet`


def costs_per_packet(setup: PortSetup, traffic: Traffic, platform: Platform) -> np.ndarray:
    """Per stream class and packet size, what a packet of that size costs through that class:
    up bytes, down bytes, read requests, root-complex ns and the bytes the requests hold their
    tags across (`UP`, `DOWN`, `REQUESTS`, `RC_NS`, `HOLD`). Only the setup's descriptors,
    thresholds and burst matter (`pricing_key`)."""
    shares = price_operations(platform.link, forwarding_nic(setup, platform), traffic.mix.sizes)
    sizes = traffic.mix.sizes.size
    per_packet = np.zeros((4 + 2 * sizes, sizes, 5))
    for share in shares:
        requests = _requests(share)
        costs = np.stack(
            [
                share.up_bytes,
                share.down_bytes,
                requests,
                _root_complex_ns(share, platform),
                _hold_bytes(share, requests),
            ],
            axis=-1,
        )
        cls = _stream_class(share.path, share.op)
        if cls is not None:
            per_packet[cls] += costs
            continue
        for k in range(sizes):
            per_packet[4 + 2 * k + (share.path == "tx"), k] += costs[k]
    return per_packet


def pricing_key(setup: PortSetup) -> tuple[int | float, ...]:
    """What of a setup its `costs_per_packet` depend on: the forwarding profile's descriptor
    sizes, thresholds and burst (`forwarding.ForwardingConfig.from_port`)."""
    return (
        setup.rx_desc_bytes,
        setup.tx_desc_bytes,
        setup.rs_thresh,
        setup.rx_free_thresh,
        setup.burst,
    )


def resource_bounds(
    setup: PortSetup, traffic: Traffic, platform: Platform, costs: np.ndarray | None = None
) -> dict[str, float]:
    """The packet rate (Mpps) each resource alone would allow, from the mean cost per packet:
    the line (all ports), the Rx pacing, each link direction (what `nic` computes), the root
    complex's write retirement, and the read requests (tags held for the platform's LLC
    latency plus the read's bytes on the link: `tag_hold_ns`, the rule of `nic`). `costs`:
    `costs_per_packet`, if priced."""
    per_packet = costs_per_packet(setup, traffic, platform) if costs is None else costs
    mean = np.einsum("csm,s->cm", per_packet, traffic.mix.weights)  # per class, per packet
    capacity = platform.link.tlp_bytes_per_s / 1e9  # bytes per ns
    reads = np.array([_is_read(cls) for cls in range(len(mean))])
    held_ns = tag_hold_ns(
        mean[reads, REQUESTS].sum(), platform.llc_latency_ns, mean[reads, HOLD].sum(), capacity
    )
    total = mean.sum(axis=0)
    bounds = {
        "ethernet": traffic.line_mpps(setup.ports),
        "pcie_up": 1e3 * capacity / total[UP],
        "pcie_down": 1e3 * capacity / total[DOWN],
        "root_complex": 1e3 / total[RC_NS] if total[RC_NS] else np.inf,
        "read_requests": 1e3 * platform.facts.read_requests / held_ns,
    }
    if traffic.pace_mpps is not None:
        bounds["rx_pacing"] = traffic.pace_mpps
    if traffic.offer_limited:
        bounds["offered"] = min(
            traffic.line_mpps(setup.ports) * traffic.offer_share, traffic.offer_mpps or np.inf
        )
    return {name: float(b) for name, b in bounds.items()}


def _hold_bytes(share: OpShare, requests: np.ndarray) -> np.ndarray:
    """Per packet, the bytes one operation's read requests hold their tags across
    (`read_hold_bytes`, which takes one read's values: per packet / occurrences per packet)."""
    occurrences = np.where(share.per_packet > 0, share.per_packet, 1.0)
    per_read = [a / occurrences for a in (requests, share.up_bytes, share.down_bytes)]
    return np.asarray(read_hold_bytes(*per_read) * occurrences, dtype=np.float64)


def _requests(share: OpShare) -> np.ndarray:
    """Read requests per packet (one tag each): the device's reads' request TLPs."""
    return share.up_tlps if share.op.initiator == "dma_read" else np.zeros_like(share.up_tlps)


def _root_complex_ns(share: OpShare, platform: Platform) -> np.ndarray:
    """Root-complex time per packet to retire the device's posted writes of one operation."""
    if share.op.initiator not in ("dma_write", "interrupt"):
        return np.zeros_like(share.per_packet)
    size = np.rint(share.data_bytes / share.per_packet).astype(np.int64)
    lines, partial = cache_lines(share.op.offset, size)
    return share.per_packet * (platform.write_line_ns * lines + platform.partial_line_ns * partial)


class TransactionClass(TypedDict):
    """What the simulator takes of a transaction class (rust/core/src/dataplane.rs)."""

    read: bool
    queue: int
    tags: int
    issue_ns: float
    datapath_ns: float
    up_bytes: float
    down_bytes: float
    write_ns: float
    hit_ns: float
    miss_ns: float


def _class(
    platform: Platform,
    read: bool,
    tx: bool,
    up: float,
    down: float,
    requests: float,
    rc_ns: float,
) -> TransactionClass:
    """One class for the simulator: Rx and Tx DMA are separate in-order queues, a NIC's DMA is
    pipelined (no per-transaction engine cost), a read holds a tag per request and its data are
    LLC hits (descriptors written by the core, packets written through DDIO moments before), a
    posted write holds no tag."""
    return {
        "read": read,
        "queue": int(tx),
        "tags": max(1, int(np.ceil(requests - 1e-9))) if read else 0,
        "issue_ns": 0.0,
        "datapath_ns": 0.0,
        "up_bytes": float(up),
        "down_bytes": float(down),
        "write_ns": 0.0 if read else float(rc_ns),
        "hit_ns": platform.llc_latency_ns,
        "miss_ns": platform.llc_latency_ns,
    }

"""IOMMU and page size in DPDK data planes: IOTLB misses per packet and what they cost.

A DPDK port's DMA stream (descriptor rings, the mbuf pool laid out as DPDK populates it, its
per-lcore LIFO caches, thresholds, polls; `rust/core/src/dataplane.rs`) runs through the same
IOTLB and simulator that reproduce pcie-bench's window sweeps (`rust/core/src/iotlb.rs`,
`sim.rs`). The IOMMU, the LLC's DDIO ways and the polling core come from a platform profile
(`platforms.py`): `e5-v4` is the shipped pcie-bench calibration unchanged, the others cite
their numbers or carry ranges. The device is the NIC of a forwarding profile (default
`testpmd-fwd`): the same operations, bytes and `[device]` facts that `nic` and `dpdk-fwd`
price, so without IOMMU, latency limit or pacing the three agree; every bound the run reaches is
named in `limited_by`. Where packets wait (Rx ring, Tx ring) follows from the load: see
`Model.evaluate` and docs/iommu.md. Nothing here is fitted to DPDK results.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from pcieperf._native import core
from pcieperf.dpdk import forwarding
from pcieperf.dpdk.platforms import DEFAULT_PLATFORM, PlatformProfile, load_platform_profile
from pcieperf.errors import (
    ProfileError,
    UsageError,
    require_choice,
    require_positive,
    require_power_of_two,
)
from pcieperf.net.ethernet import Ethernet, PacketMix, dma_bytes
from pcieperf.nic import nic
from pcieperf.pcie.link import Link
from pcieperf.pciebench.calibrate import DEFAULT_CALIBRATION, load_calibration
from pcieperf.pciebench.sim import cache_lines
from pcieperf.progress import wrap as with_progress

PAGE_SIZES = {"4k": 4096, "2m": 2 << 20, "1g": 1 << 30}  # x86-64 page sizes (SDM vol. 3 §4.5)
RING_MIN, RING_MAX = 64, 4096  # ixgbe/i40e descriptor-ring limits (IXGBE/I40E_MIN/MAX_RING_DESC)
DESCRIPTOR_BYTES = (16, 32)  # Intel 16 B legacy/advanced and 32 B Rx descriptor formats
POOL_MAX = 1 << 24  # 16 M mbufs: 32 GiB of 2 KiB buffers, beyond any one DPDK port's pool
TLB_MAX = 1 << 20  # IOTLBs and walk caches hold tens to thousands of entries (VT-d spec §6)
# DPDK's populate rule (no object crosses a page; rte_mempool_ops_default.c check_obj_bounds)
# or objects packed back to back (pools flagged RTE_MEMPOOL_F_NO_IOVA_CONTIG).
LAYOUTS = ("dpdk", "packed")
IOVA_MODES = ("va", "pa")  # EAL --iova-mode
POLL_DELAY_MAX_US = 1e6  # a poll per second is already no data plane
REPLACEMENTS = ("lru", "random")
# An mbuf pool object (DPDK defaults): 64 B mempool header (cache-line aligned), 128 B struct
# rte_mbuf, RTE_PKTMBUF_HEADROOM 128 B, RTE_MBUF_DEFAULT_DATAROOM 2048 B. The NIC writes packet
# data right after the headroom.
MEMPOOL_HEADER_BYTES, MBUF_BYTES, HEADROOM_BYTES, DATAROOM_BYTES = 64, 128, 128, 2048
ELEMENT_BYTES = MEMPOOL_HEADER_BYTES + MBUF_BYTES + HEADROOM_BYTES + DATAROOM_BYTES
DATA_OFFSET = MEMPOOL_HEADER_BYTES + MBUF_BYTES + HEADROOM_BYTES
LINE = 64  # descriptors move a 64 B cache line at a time
PACKETS = 200_000  # simulated per run after warm-up; +-1 % run to run (tests/test_iommu.py)


@dataclass(frozen=True)
class PortSetup:
    """How a DPDK application sets up its ports, rings and mbuf pool (testpmd's defaults)."""

    page: str = "4k"
    rxd: int = 1024
    txd: int = 1024
    pool: int = 8192
    cache: int = 256
    queues: int = 1
    ports: int = 1
    cross_port: bool = False
    rx_desc_bytes: int = 32
    tx_desc_bytes: int = 16
    rx_free_thresh: int = 32
    tx_free_thresh: int = 32
    rs_thresh: int = 32
    burst: int = 32
    layout: str = "dpdk"
    iova: str = "va"
    poll_delay_us: float = 0.0  # the lcore waits this long after each poll (Rx pacing)

    def __post_init__(self) -> None:
        require_choice("page size", self.page, PAGE_SIZES)
        require_choice("mbuf layout", self.layout, LAYOUTS)
        require_choice("IOVA mode", self.iova, IOVA_MODES)
        delay = self.poll_delay_us
        if not isinstance(delay, int | float) or not 0 <= delay <= POLL_DELAY_MAX_US:
            raise UsageError(
                f"poll delay {delay!r} us is not allowed; use 0 to {POLL_DELAY_MAX_US:g}"
            )
        for name in ("rxd", "txd"):
            require_power_of_two(name, getattr(self, name), RING_MIN, RING_MAX)
        for name in ("rx_desc_bytes", "tx_desc_bytes"):
            require_choice(name.replace("_", " "), getattr(self, name), DESCRIPTOR_BYTES)
        for name in ("burst", "rx_free_thresh", "rs_thresh"):
            _require_count(name, getattr(self, name), 1, RING_MAX)
        _require_count("queues", self.queues, 1, 1024)  # RTE_MAX_QUEUES_PER_PORT
        _require_count("ports", self.ports, 1, 1024)  # RTE_MAX_ETHPORTS is 32 by default
        _require_count("pool", self.pool, 1, POOL_MAX)
        _require_count("tx_free_thresh", self.tx_free_thresh, 0, RING_MAX)
        _require_count("cache", self.cache, 0, 512)  # RTE_MEMPOOL_CACHE_MAX_SIZE
        self._check_thresholds()
        if self.pool < self.min_pool:
            raise UsageError(
                f"pool {self.pool} is smaller than the rings and caches hold; {self.ports} port(s)"
                f" x {self.queues} queue(s) with rxd {self.rxd}, txd {self.txd}, burst "
                f"{self.burst} and cache {self.cache} need at least {self.min_pool} mbufs"
            )

    def _check_thresholds(self) -> None:
        """DPDK's own rules (ixgbe/i40e rx/tx queue setup), so no impossible ring is modelled."""
        if self.rxd % self.rx_free_thresh or self.rx_free_thresh + self.burst > self.rxd:
            raise UsageError(
                f"rx_free_thresh {self.rx_free_thresh} must divide rxd {self.rxd} and leave room "
                f"for a burst of {self.burst}"
            )
        if self.txd % self.rs_thresh or self.rs_thresh > max(self.tx_free_thresh, self.burst):
            raise UsageError(
                f"rs_thresh {self.rs_thresh} must divide txd {self.txd} and not exceed "
                f"tx_free_thresh {self.tx_free_thresh} (or the burst)"
            )
        if max(self.tx_free_thresh, self.burst) + self.rs_thresh > self.txd:
            raise UsageError(
                f"txd {self.txd} leaves no room for tx_free_thresh {self.tx_free_thresh} or burst "
                f"{self.burst} plus rs_thresh {self.rs_thresh}"
            )

    @property
    def page_bytes(self) -> int:
        """Bytes per page."""
        return PAGE_SIZES[self.page]

    @property
    def lanes(self) -> int:
        """(port, queue) pairs, each polled by its own lcore."""
        return self.ports * self.queues

    @property
    def max_rx_backlog(self) -> int:
        """Most packets that wait in a full Rx ring (less a refill and a poll in flight)."""
        return max(self.rxd - self.rx_free_thresh - self.burst, 0)

    @property
    def max_tx_backlog(self) -> int:
        """Most packets that wait in a full Tx ring: room stays for the PMD to free
        rs_thresh sent mbufs and enqueue a burst (ixgbe/i40e tx_free_thresh logic)."""
        return max(self.txd - 1 - max(self.tx_free_thresh, self.burst) - self.rs_thresh, 0)

    @property
    def min_pool(self) -> int:
        """Fewest mbufs that never run dry: per lane both rings, a burst and the cache's peak
        (rte_mempool flushes a cache at 1.5 x its size and refills it to size + request)."""
        peak = max(-(-3 * self.cache // 2), self.cache + self.rx_free_thresh) if self.cache else 0
        return self.ports * self.queues * (self.rxd + self.txd + self.burst + peak)


def _require_count(name: str, value: int, low: int, high: int | None = None) -> None:
    if not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f"{low} to {high}" if high is not None else f"a whole number >= {low}"
        raise UsageError(f"{name} {value!r} is not allowed; use {allowed}")


def parse_page(text: str) -> str:
    """Normalise a page-size option: 4k, 4K, 4096, 2m, 2M, 1g ..."""
    token = text.strip().lower().removesuffix("b").removesuffix("i")
    by_bytes = {str(v): k for k, v in PAGE_SIZES.items()}
    page = by_bytes.get(token, token)
    require_choice("page size", page, PAGE_SIZES)
    return page


@dataclass(frozen=True)
class IommuParams:
    """The IOMMU: IOTLB shape and replacement, walk timing and an optional page-walk cache."""

    iotlb_entries: int
    walk_ns: float
    walk_busy_ns: float
    walkers: int
    iotlb_ways: int = 0  # 0: fully associative
    replacement: str = "lru"  # as in the pcie-bench simulator that reproduces the knees
    pwc_entries: int = 0

    def __post_init__(self) -> None:
        require_choice("IOTLB replacement", self.replacement, REPLACEMENTS)
        _require_count("IOTLB entries", self.iotlb_entries, 1, TLB_MAX)
        _require_count("IOTLB ways", self.iotlb_ways, 0, TLB_MAX)
        _require_count("page-walk cache entries", self.pwc_entries, 0, TLB_MAX)
        if self.iotlb_ways and self.iotlb_entries % self.iotlb_ways:
            raise UsageError(
                f"IOTLB entries {self.iotlb_entries} must be a multiple of its ways "
                f"{self.iotlb_ways}"
            )


DEFAULT_PROFILE = forwarding.FORWARDING_PROFILE


@dataclass(frozen=True)
class Llc:
    """The LLC as DDIO sees it: sets, slices, the ways device writes allocate into, and what a
    device read of a line DDIO lost adds (DRAM instead of LLC)."""

    sets_per_slice: int
    slices: int
    ways: int
    ddio_ways: int
    dram_extra_ns: float

    @property
    def ddio_bytes(self) -> int:
        """Bytes the DDIO ways hold in all."""
        return self.sets_per_slice * self.slices * self.ddio_ways * LINE

    def shape(self) -> dict[str, int]:
        """The Rust core's LLC parameters."""
        return {
            "sets_per_slice": self.sets_per_slice,
            "slices": self.slices,
            "ddio_ways": self.ddio_ways,
        }


@dataclass(frozen=True)
class Memory:
    """Where pages live: how much host memory IOVA-as-PA draws frames from, and the LLC."""

    memory_gib: float = 64.0
    llc: Llc | None = None


@dataclass(frozen=True)
class CoreCosts:
    """What one lcore's poll costs: a fixed part (rx_burst + tx_burst) and a part per packet."""

    poll_ns: float = 60.0
    packet_ns: float = 18.0


@dataclass(frozen=True)
class Platform:
    """The NIC (a forwarding profile with its `[device]` facts), link, host, IOMMU, LLC and
    core the model runs on: link and host from a calibration file, the IOMMU, LLC and core from
    a platform profile."""

    device: nic.NicProfile
    link: Link
    llc_latency_ns: float
    write_line_ns: float
    partial_line_ns: float
    posted_credits: int
    iommu: IommuParams
    name: str = DEFAULT_PLATFORM
    memory: Memory = Memory()
    core: CoreCosts = CoreCosts()


def platform_parts(profile: PlatformProfile) -> tuple[IommuParams, Memory, CoreCosts]:
    """The IOMMU, memory/LLC and core a platform profile describes."""
    v = profile.value
    iommu = IommuParams(
        iotlb_entries=v("iommu.iotlb_entries"),
        walk_ns=v("iommu.walk_ns"),
        walk_busy_ns=v("iommu.walk_busy_ns"),
        walkers=v("iommu.walkers"),
        pwc_entries=v("iommu.pwc_entries"),
    )
    llc = (
        Llc(
            sets_per_slice=v("llc.sets_per_slice"),
            slices=v("llc.slices"),
            ways=v("llc.ways"),
            ddio_ways=v("llc.ddio_ways"),
            dram_extra_ns=v("llc.dram_extra_ns"),
        )
        if profile.has_llc
        else None
    )
    return (
        iommu,
        Memory(v("host.memory_gib"), llc),
        CoreCosts(v("core.poll_ns"), v("core.packet_ns")),
    )


def load_platform(
    path: Path = DEFAULT_CALIBRATION,
    *,
    gen: int = 3,
    lanes: int = 8,
    profile: str | nic.NicProfile = DEFAULT_PROFILE,
    platform: str | Path = DEFAULT_PLATFORM,
    **iommu: object,
) -> Platform:
    """The calibrated link and host on a `gen` x `lanes` link with the NIC of `profile` (a name,
    a .toml path or a loaded profile) and a platform profile's IOMMU, LLC and core (a built-in
    name or a file); `iommu` overrides IOMMU fields."""
    calibration = load_calibration(path)
    ref, shared = calibration.reference, calibration.shared
    if ref is None:
        raise ProfileError(
            f"{path}: the calibration has no [reference_host] table (it needs a steady 4 KiB-page "
            "IOMMU host); re-run `pcieperf bench calibrate` with one"
        )
    device = nic.load_profile(profile) if isinstance(profile, str) else profile
    missing = [name for name in forwarding.FORWARDING_PARAMS if name not in device.params]
    if missing or device.device is None:
        lacks = f"the parameters {', '.join(missing)}" if missing else "a [device] table"
        raise UsageError(
            f"profile {device.name!r} lacks {lacks}; the DPDK port model needs a descriptor-ring "
            f"forwarding profile with [device] and {', '.join(forwarding.FORWARDING_PARAMS)}, "
            f"such as {DEFAULT_PROFILE}"
        )
    platform_profile = load_platform_profile(platform, path)
    params, memory, core = platform_parts(platform_profile)
    return Platform(
        device=device,
        link=Link(
            gen=gen,
            lanes=lanes,
            mps=ref.mps,
            mrrs=ref.mrrs,
            completion_policy=shared.completion_policy,
        ),
        llc_latency_ns=ref.llc_latency_ns,
        write_line_ns=shared.write_line_ns,
        partial_line_ns=shared.partial_line_ns,
        posted_credits=shared.posted_credits,
        iommu=replace(params, **{k: v for k, v in iommu.items() if v is not None}),
        name=platform_profile.name,
        memory=memory,
        core=core,
    )


@dataclass(frozen=True)
class Traffic:
    """What arrives: a packet-size mix at an Ethernet rate on every port, optionally paced."""

    mix: PacketMix
    eth: Ethernet
    pace_mpps: float | None = None

    def __post_init__(self) -> None:
        if self.pace_mpps is not None:
            require_positive("Rx pacing (Mpps)", self.pace_mpps)

    def line_mpps(self, ports: int) -> float:
        """Line-rate packet rate of the mix over all ports."""
        wire = self.mix.mean(self.eth.wire_bytes(self.mix.sizes))
        return float(ports * self.eth.rate_gbps * 1e3 / (8 * wire))

    def offered_mpps(self, ports: int) -> float:
        """What reaches the NIC's DMA: line rate, or the pace if the core limits Rx below it."""
        line = self.line_mpps(ports)
        return line if self.pace_mpps is None else min(line, self.pace_mpps)


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
    memory: Memory = Memory(),
    lcore: CoreCosts = CoreCosts(),
) -> dict[str, object]:
    """The Rust core's parameters for a port stream in a load state and its IOMMU caches."""
    # Warm-up, and a measured window long enough that every mbuf that cycles at all (the whole
    # pool when buffers pass through the common ring) is seen twice: the working set is then
    # every page the stream ever reuses.
    warmup = max(50_000, 2 * setup.pool)
    packets = max(packets, 2 * setup.pool)
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
        "sizes": [int(s) for s in dma_bytes(traffic.mix.sizes)],
        "weights": [float(w) for w in traffic.mix.weights],
        "ns_per_packet": 1e3 / admit,
        "wire_shares": wire_shares(traffic),
        "seed": seed,
        **asdict(iommu),
        "warmup": warmup,
        "packets": packets,
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
    memory: Memory = Memory(),
    lcore: CoreCosts = CoreCosts(),
) -> MissCounts:
    """IOTLB misses per packet, pages touched and DDIO losses, from the address stream alone
    (no timing)."""
    require_positive("packets", packets)
    params = port_params(
        setup, traffic, iommu, packets, seed, load=load, memory=memory, lcore=lcore
    )
    return _miss_counts(core().port_misses(params))


def _miss_counts(out: dict[str, object]) -> MissCounts:
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


def forwarding_nic(setup: PortSetup, platform: Platform) -> nic.NicProfile:
    """The platform's NIC profile with the setup's descriptors, thresholds and burst: exactly
    what `dpdk-fwd` prices for the same values."""
    cfg = forwarding.ForwardingConfig(
        rx_desc_bytes=setup.rx_desc_bytes,
        tx_desc_bytes=setup.tx_desc_bytes,
        rs_thresh=setup.rs_thresh,
        rx_free_thresh=setup.rx_free_thresh,
        batch=float(setup.burst),
    )
    return forwarding.forwarding_profile(cfg, platform.device)


# The stream's descriptor classes (rust/core/src/dataplane.rs numbers them 0..3), by the path and
# initiator of the profile operations whose bytes they carry.
_DESCRIPTOR_CLASS = {
    ("rx", "dma_read"): 0,
    ("rx", "dma_write"): 1,
    ("tx", "dma_read"): 2,
    ("tx", "dma_write"): 3,
}


def _stream_class(path: str, op: nic.Operation) -> int | None:
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
    setup: PortSetup, traffic: Traffic, platform: Platform
) -> list[dict[str, object]]:
    """Costs of each transaction class, in the order `rust/core/src/dataplane.rs` numbers them:
    Rx descriptor line read, Rx write-back line, Tx descriptor line read, Tx RS write-back,
    then a packet write and a packet read per size of the mix.

    The stream gives the addresses and the order; the bytes are the NIC profile's, priced as
    `nic` prices them: each operation's per-packet wire bytes, read requests and root-complex
    time ride on the class that carries it, times the packets that pass per transaction of that
    class, so a packet costs exactly what `nic` charges (MMIO doorbells and interrupts ride on
    the path's packet DMA).
    """
    sizes = traffic.mix.sizes.size
    occurrences = np.array([*_packets_per_occurrence(setup), *[1] * (2 * sizes)], dtype=float)
    per_occurrence = _costs_per_packet(setup, traffic, platform) * occurrences[:, None, None]
    # Descriptor classes carry the mix's mean; packet class 4 + 2k (write) and 5 + 2k (read)
    # the k-th size's cost.
    costs = [traffic.mix.weights @ per_occurrence[cls] for cls in range(4)]
    costs += [per_occurrence[cls, (cls - 4) // 2] for cls in range(4, 4 + 2 * sizes)]
    return [_class(platform, _is_read(cls), _is_tx(cls), *cost) for cls, cost in enumerate(costs)]


def _is_read(cls: int) -> bool:
    """Whether a stream class is a read: descriptor line reads (0, 2) and packet reads."""
    return cls in (0, 2) or (cls >= 4 and cls % 2 == 1)


def _is_tx(cls: int) -> bool:
    """Whether a stream class is Tx DMA: Tx descriptors (2, 3) and packet reads."""
    return cls in (2, 3) or (cls >= 4 and cls % 2 == 1)


UP, DOWN, REQUESTS, RC_NS = range(4)  # the cost axis of `_costs_per_packet`


def _costs_per_packet(setup: PortSetup, traffic: Traffic, platform: Platform) -> np.ndarray:
    """Per stream class and packet size, what a packet of that size costs through that class:
    up bytes, down bytes, read requests and root-complex ns (`UP`, `DOWN`, `REQUESTS`, `RC_NS`)."""
    shares = nic.price_operations(platform.link, forwarding_nic(setup, platform), traffic.mix.sizes)
    sizes = traffic.mix.sizes.size
    per_packet = np.zeros((4 + 2 * sizes, sizes, 4))
    for share in shares:
        costs = np.stack(
            [share.up_bytes, share.down_bytes, _requests(share), _root_complex_ns(share, platform)],
            axis=-1,
        )
        cls = _stream_class(share.path, share.op)
        if cls is not None:
            per_packet[cls] += costs
            continue
        for k in range(sizes):
            per_packet[4 + 2 * k + (share.path == "tx"), k] += costs[k]
    return per_packet


def resource_bounds(setup: PortSetup, traffic: Traffic, platform: Platform) -> dict[str, float]:
    """The packet rate (Mpps) each resource alone would allow, from the mean cost per packet:
    the line (all ports), the Rx pacing, each link direction (what `nic` computes), the root
    complex's write retirement, and the read requests (tags held for the host's read latency
    plus the request and completion on the link)."""
    per_packet = _costs_per_packet(setup, traffic, platform)
    mean = np.einsum("csm,s->cm", per_packet, traffic.mix.weights)  # per class, per packet
    capacity = platform.link.tlp_bytes_per_s / 1e9  # bytes per ns
    reads = np.array([_is_read(cls) for cls in range(len(mean))])
    held_ns = (
        mean[reads, REQUESTS].sum() * platform.llc_latency_ns
        + (mean[reads, UP].sum() + mean[reads, DOWN].sum()) / capacity
    )
    total = mean.sum(axis=0)
    bounds = {
        "ethernet": traffic.line_mpps(setup.ports),
        "pcie_up": 1e3 * capacity / total[UP],
        "pcie_down": 1e3 * capacity / total[DOWN],
        "root_complex": 1e3 / total[RC_NS] if total[RC_NS] else np.inf,
        "read_requests": 1e3 * platform.device.device.read_requests / held_ns,
    }
    if traffic.pace_mpps is not None:
        bounds["rx_pacing"] = traffic.pace_mpps
    return {name: float(b) for name, b in bounds.items()}


def _requests(share: nic.OpShare) -> np.ndarray:
    """Read requests per packet (one tag each): the device's reads' request TLPs."""
    return share.up_tlps if share.op.initiator == "dma_read" else np.zeros_like(share.up_tlps)


def _root_complex_ns(share: nic.OpShare, platform: Platform) -> np.ndarray:
    """Root-complex time per packet to retire the device's posted writes of one operation."""
    if share.op.initiator not in ("dma_write", "interrupt"):
        return np.zeros_like(share.per_packet)
    size = np.rint(share.data_bytes / share.per_packet).astype(np.int64)
    lines, partial = cache_lines(share.op.offset, size)
    return share.per_packet * (platform.write_line_ns * lines + platform.partial_line_ns * partial)


def _class(
    platform: Platform,
    read: bool,
    tx: bool,
    up: float,
    down: float,
    requests: float,
    rc_ns: float,
) -> dict[str, object]:
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


@dataclass(frozen=True)
class Run:
    """One timed run of a port's stream: packet rate, mean DMA latency, how busy each resource
    was (fraction of the run), and the IOTLB misses the walkers served in it.

    The misses are counted in the order the IOMMU saw the transactions in this run (link
    order), not in the stream's order: the NIC's Rx and Tx queues interleave up to a burst
    apart, which can move an mbuf's Tx read closer to its Rx write than the stream has it (at
    rxd 128 on e5-v4 that turns every Tx read into a hit). Rate and misses then come from one
    run, so the rate never exceeds what the walkers can do for those misses."""

    mpps: float
    mean_latency_ns: float
    utilization: dict[str, float]
    counts: MissCounts


def cold_read_classes(
    setup: PortSetup, traffic: Traffic, platform: Platform, classes: list[dict[str, object]]
) -> list[dict[str, object]]:
    """A packet read per size whose lines DDIO lost: its class with DRAM latency (they follow
    the packet classes: rust/core/src/dataplane.rs cold_read_class)."""
    llc = platform.memory.llc
    extra = llc.dram_extra_ns if llc else 0.0
    reads = classes[5 : 5 + 2 * len(traffic.mix.sizes) : 2]
    return [{**c, "hit_ns": c["hit_ns"] + extra, "miss_ns": c["miss_ns"] + extra} for c in reads]


def _timed_run(
    setup: PortSetup,
    traffic: Traffic,
    platform: Platform,
    iommu: bool,
    packets: int,
    seed: int,
    load: Load = LIGHT,
) -> Run:
    # The IOMMU-less reference is the light state's (cached without pages and rings): no packet
    # waits there long enough for DDIO to lose it, so it runs without the LLC model.
    memory = platform.memory if iommu else replace(platform.memory, llc=None)
    params = port_params(
        setup,
        traffic,
        platform.iommu,
        packets,
        seed,
        load=load,
        memory=memory,
        lcore=platform.core,
    )
    device, link = platform.device.device, platform.link
    classes = transaction_classes(setup, traffic, platform)
    _check_tags(classes, device, traffic)
    classes += cold_read_classes(setup, traffic, platform, classes)
    params |= {
        "iommu": iommu,
        "tags": device.read_requests,
        "fixed_latency_ns": 0.0,
        "up_bytes_per_ns": link.tlp_bytes_per_s / 1e9,
        "down_bytes_per_ns": link.tlp_bytes_per_s / 1e9,
        "posted_credits": platform.posted_credits,
        "lookahead": burst_transactions(setup),
    }
    out = core().port_simulate(params, classes)
    elapsed = out["elapsed_ns"]
    return Run(
        mpps=out["forwarded"] / elapsed * 1e3,
        mean_latency_ns=float(np.mean(out["latencies_ns"])),
        utilization={
            "pcie_up": out["up_busy_ns"] / elapsed,
            "pcie_down": out["down_busy_ns"] / elapsed,
            "read_requests": out["tag_busy_ns"] / (elapsed * device.read_requests),
            "root_complex": out["rc_busy_ns"] / elapsed,
        },
        counts=_miss_counts(out),
    )


def _check_tags(
    classes: list[dict[str, object]], device: nic.DeviceFacts, traffic: Traffic
) -> None:
    """A packet read needing more read requests than the device may hold cannot be issued."""
    need = max(int(c["tags"]) for c in classes)
    if need > device.read_requests:
        raise UsageError(
            f"a {int(traffic.mix.sizes.max())} B frame is read in {need} requests, more than the "
            f"{device.read_requests} read requests {device.name} may hold; use a larger MRRS or "
            "smaller frames"
        )


@dataclass(frozen=True)
class IommuResult:
    """What the IOMMU costs one setup: misses, working set, packet rate with and without it."""

    page: str
    rxd: int
    txd: int
    pool: int
    mix: str
    pace_mpps: float | None
    iotlb_entries: int
    iotlb_misses_per_pkt: float
    pwc_misses_per_pkt: float
    working_set_pages: int
    line_mpps: float
    mpps_no_iommu: float
    mpps_iommu: float
    throughput_ratio: float
    added_latency_ns: float
    walker_utilization: float
    bottleneck: str
    limited_by: list[str]
    limited_by_no_iommu: list[str]
    profile: str
    device: str
    read_requests: int
    nic_mpps: float
    bounds_mpps: dict[str, float]
    utilization: dict[str, float]
    platform: str = DEFAULT_PLATFORM
    iova: str = "va"
    poll_delay_us: float = 0.0
    state: str = "light"
    iotlb_misses_per_fwd_pkt: float = 0.0
    drops_per_fwd_pkt: float = 0.0
    ddio_read_miss_fraction: float = 0.0
    core_mpps: float = 0.0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return asdict(self)


SATURATED = 0.99  # a rate within 1 % of a bound counts as reaching it (simulation noise)
# A resource whose own bound is within 5 % of the simulated rate is named as a limit: where two
# resources are nearly saturated at once, queueing between them costs the run a few percent.
NEAR_BOUND = 0.05
UNLIMITED_READS = 4096  # more read requests than any run can use (10-bit tags allow 768)
# What can limit the simulated rate (`limited_by`), and how `bottleneck` names it.
LIMITS = {
    "iommu_walks": "IOMMU page walks",
    "rx_pacing": "Rx pacing",
    "ethernet": "line rate",
    "pcie_up": "PCIe up",
    "pcie_down": "PCIe down",
    "read_requests": "device read requests",
    "root_complex": "root-complex writes",
    "lcores": "lcore polling",
}


class Model:
    """One platform and traffic; evaluates port setups, caching the IOMMU-less runs."""

    def __init__(self, platform: Platform, traffic: Traffic, packets: int = PACKETS) -> None:
        """Remember the platform, traffic and run length."""
        require_positive("packets", packets)
        self.platform, self.traffic, self.packets = platform, traffic, packets
        self._baseline: dict[tuple[float, ...], Run] = {}
        self._baseline_limits: dict[tuple[float, ...], list[str]] = {}

    @staticmethod
    def _key(setup: PortSetup) -> tuple[float, ...]:
        """What sets the transactions per packet and their timing without IOMMU (addresses do
        not matter then): ports, queues, descriptor sizes, thresholds, burst, poll delay."""
        return (
            setup.queues,
            setup.ports,
            setup.rx_desc_bytes,
            setup.tx_desc_bytes,
            setup.rs_thresh,
            setup.rx_free_thresh,
            setup.burst,
            setup.poll_delay_us,
        )

    def no_iommu(self, setup: PortSetup) -> Run:
        """The run without IOMMU."""
        key = self._key(setup)
        if key not in self._baseline:
            self._baseline[key] = _timed_run(
                setup, self.traffic, self.platform, False, self.packets, seed=1
            )
        return self._baseline[key]

    def no_iommu_limits(self, setup: PortSetup, bounds: dict[str, float]) -> list[str]:
        """What holds the run without IOMMU. When no bound is near and no resource saturated,
        the read requests bind in bursts (a Tx burst asks for more than the tags, then the tags
        idle during Rx): it is named if the same run with unlimited read requests is faster."""
        key = self._key(setup)
        if key not in self._baseline_limits:
            base = self.no_iommu(setup)
            limits = _limits(bounds, base.mpps, base.utilization, base.mpps)
            if not limits and self._unlimited_reads(setup).mpps > base.mpps / SATURATED:
                limits = ["read_requests"]
            self._baseline_limits[key] = limits
        return self._baseline_limits[key]

    def _unlimited_reads(self, setup: PortSetup) -> Run:
        nic_device = self.platform.device
        facts = replace(nic_device.device, read_requests=UNLIMITED_READS)
        platform = replace(self.platform, device=replace(nic_device, device=facts))
        return _timed_run(setup, self.traffic, platform, False, self.packets, seed=1)

    def run_in(self, setup: PortSetup, load: Load, seed: int = 1) -> Run:
        """The timed run with the IOMMU in a given load state (for what-ifs; evaluate picks
        the state itself)."""
        return _timed_run(setup, self.traffic, self.platform, True, self.packets, seed, load)

    def counts(self, setup: PortSetup, load: Load = LIGHT, seed: int = 1) -> MissCounts:
        """The misses of a load state in the stream's own order (no timing; `evaluate` reports
        those of its timed run, in link order)."""
        p = self.platform
        return count_misses(
            setup,
            self.traffic,
            p.iommu,
            self.packets,
            seed,
            load=load,
            memory=p.memory,
            lcore=p.core,
        )

    def walk_load(self, rate_mpps: float, counts: MissCounts) -> float:
        """Walker utilisation a rate would need: walks per second x busy time per walk /
        walkers (a page-walk-cache miss walks twice)."""
        iommu = self.platform.iommu
        walks = counts.misses_per_fwd_pkt + counts.pwc_misses_per_pkt * (
            counts.misses_per_fwd_pkt / max(counts.misses_per_pkt, 1e-12)
        )
        return rate_mpps * 1e-3 * walks * iommu.walk_busy_ns / iommu.walkers

    def load_state(self, setup: PortSetup, base: Run, seed: int = 1) -> tuple[Load, Run]:
        """Where packets wait under this traffic, and the timed run in that state.

        If the lcores take fewer packets than the NIC could receive (a poll delay, or a slow
        core), the Rx ring fills and the NIC drops the rest at the wire (`rx_full`). Else the
        rings stay near empty, unless the walks the light state needs at the IOMMU-free rate
        exceed what the walkers do (utilisation >= 1: the walk queue grows without bound).
        Then posted writes wait in the root complex for walks, reads (which hold the NIC's
        outstanding-read slots, posted writes only credits) fall behind, the Tx ring fills,
        and every Tx read comes a full ring after its packet's Rx write (`tx_full`)."""
        lcores = core_mpps(setup, self.platform.core)
        if lcores < SATURATED * min(self.traffic.offered_mpps(setup.ports), base.mpps):
            return self._rx_full(setup, lcores, seed)
        light = self.run_in(setup, LIGHT, seed)
        if self.walk_load(base.mpps, light.counts) < 1.0:
            return LIGHT, light
        return self._tx_full(setup, seed)

    def _rx_full(self, setup: PortSetup, lcores: float, seed: int) -> tuple[Load, Run]:
        """The lcores' rate admitted through a full Rx ring. If the DMA cannot forward even
        that, the Tx ring fills too and the lcores drop what tx_burst refuses; the drops settle
        where the NIC's Rx DMA (forwarded plus dropped) matches the lcores' rate, found by
        bisection between no drops and the drops of an unpaced full Tx ring."""
        full_rx = setup.max_rx_backlog
        load = Load("rx-full", rx_backlog=full_rx, admit_mpps=lcores)
        run = self.run_in(setup, load, seed)
        if run.mpps >= SATURATED * lcores:
            return load, run
        unpaced = self._tx_full(setup, seed)
        if unpaced[1].mpps * (1 + unpaced[0].drop_per_fwd) <= lcores:
            return unpaced  # the lcores poll faster than the NIC's Rx DMA delivers
        low, high = 0.0, unpaced[0].drop_per_fwd
        for _ in range(DROP_BISECTIONS):
            drops = (low + high) / 2
            load = Load("both-full", full_rx, setup.max_tx_backlog, drops, lcores)
            run = self.run_in(setup, load, seed)
            low, high = (drops, high) if run.mpps * (1 + drops) < lcores else (low, drops)
        return load, run

    def _tx_full(self, setup: PortSetup, seed: int) -> tuple[Load, Run]:
        """The Tx ring full, the Rx ring empty, and the lcores dropping at tx_burst."""
        load = Load(
            "tx-full",
            tx_backlog=setup.max_tx_backlog,
            drop_per_fwd=drops_at_full_tx_ring(self.platform),
        )
        return load, self.run_in(setup, load, seed)

    def best_poll_delay(self, setup: PortSetup, seed: int = 1) -> float | None:
        """The poll delay (us, rounded up to 0.1) at which the lcores take what the DMA can
        forward through a full Rx ring: slower polling forwards less, faster polling fills the
        Tx ring too and the NIC spends DMA and walks on packets the lcores then drop. None when
        the full Rx ring forwards no more than the state the port is in without a delay."""
        full = Load("rx-full", rx_backlog=setup.max_rx_backlog, admit_mpps=UNPACED_MPPS)
        capacity = self.run_in(setup, full, seed).mpps
        if capacity <= self.evaluate(replace(setup, poll_delay_us=0.0), seed).mpps_iommu:
            return None
        lcore = self.platform.core
        period_ns = setup.lanes * setup.burst / capacity * 1e3
        delay_ns = period_ns - lcore.poll_ns - setup.burst * lcore.packet_ns
        return math.ceil(delay_ns / 100) / 10 if delay_ns > 0 else None

    def evaluate(self, setup: PortSetup, seed: int = 1) -> IommuResult:
        """Misses, working set and packet rates of one setup, in the state its load puts it,
        and what limits them."""
        platform, traffic = self.platform, self.traffic
        device = platform.device
        if setup.queues > device.device.queues:
            raise UsageError(
                f"queues {setup.queues} is more than {device.device.name} has "
                f"({device.device.queues} queue pairs)"
            )
        base = self.no_iommu(setup)
        lcores = core_mpps(setup, platform.core)
        load, with_iommu = self.load_state(setup, base, seed)
        counts = with_iommu.counts
        line = traffic.line_mpps(setup.ports)
        iommu = platform.iommu
        reference = min(base.mpps, lcores)  # without IOMMU the lcores still cap the rate
        mpps = min(with_iommu.mpps, reference)  # the IOMMU never speeds a device up
        bounds = {**resource_bounds(setup, traffic, platform), "lcores": lcores}
        walks_per_mpps = self.walk_load(1.0, counts)  # walker utilisation per Mpps forwarded
        walk_bound = {"iommu_walks": 1.0 / walks_per_mpps} if walks_per_mpps else {}
        base_limits = self.no_iommu_limits(setup, bounds)
        limits = _limits({**bounds, **walk_bound}, mpps, with_iommu.utilization, reference)
        if not limits and mpps >= SATURATED * reference:
            limits = base_limits
        return IommuResult(
            page=setup.page,
            rxd=setup.rxd,
            txd=setup.txd,
            pool=setup.pool,
            mix=traffic.mix.name,
            pace_mpps=traffic.pace_mpps,
            iotlb_entries=iommu.iotlb_entries,
            iotlb_misses_per_pkt=counts.misses_per_pkt,
            pwc_misses_per_pkt=counts.pwc_misses_per_pkt,
            working_set_pages=counts.working_set_pages,
            line_mpps=line,
            mpps_no_iommu=reference,
            mpps_iommu=mpps,
            throughput_ratio=mpps / reference,
            added_latency_ns=max(with_iommu.mean_latency_ns - base.mean_latency_ns, 0.0),
            walker_utilization=min(self.walk_load(mpps, counts), 1.0),
            bottleneck=LIMITS[limits[0]] if limits else "none reached",
            limited_by=limits,
            limited_by_no_iommu=base_limits,
            profile=device.name,
            device=device.device.name,
            read_requests=device.device.read_requests,
            nic_mpps=min(bounds["ethernet"], bounds["pcie_up"], bounds["pcie_down"]),
            bounds_mpps={**bounds, **walk_bound},
            utilization=with_iommu.utilization,
            platform=platform.name,
            iova=setup.iova,
            poll_delay_us=setup.poll_delay_us,
            state=load.state,
            iotlb_misses_per_fwd_pkt=counts.misses_per_fwd_pkt,
            drops_per_fwd_pkt=load.drop_per_fwd,
            ddio_read_miss_fraction=counts.ddio_read_miss_fraction,
            core_mpps=lcores,
        )


UNPACED_MPPS = 1e6  # arrivals "as fast as the device takes them" for a capacity run
DROP_BISECTIONS = 6  # drops of a both-full state to 1/64 of the unpaced full-Tx-ring drops


def drops_at_full_tx_ring(platform: Platform) -> float:
    """Packets the lcores drop per forwarded packet when the Tx ring is full and the Rx ring is
    not: the NIC keeps writing received packets, and when page walks are the bottleneck each
    direction gets walks in proportion to the requests it keeps waiting for one. Posted writes
    wait up to the root port's posted credits (calibration [host] posted_credits), reads up to
    the NIC's outstanding read requests (the profile's [device] read_requests), so
    Rx : Tx = credits : read requests."""
    return max(platform.posted_credits / platform.device.device.read_requests - 1.0, 0.0)


def _limits(
    bounds: dict[str, float], mpps: float, utilization: dict[str, float], no_iommu: float
) -> list[str]:
    """What limits a run's rate (`LIMITS` keys), the one that explains it first: the IOMMU if
    it cost throughput, every resource whose own bound is within `NEAR_BOUND` of the rate
    (tightest first), then any other resource busy at least 99 % of the run."""
    names = ["iommu_walks"] if mpps < SATURATED * no_iommu else []
    near = sorted((b, n) for n, b in bounds.items() if b <= mpps * (1 + NEAR_BOUND))
    names += [n for _, n in near if n not in names]
    busy = sorted(((u, n) for n, u in utilization.items() if u >= SATURATED), reverse=True)
    return names + [n for _, n in busy if n not in names]


def gain(
    platform: Platform,
    eth: Ethernet,
    setup: PortSetup,
    to_rxd: int,
    to_txd: int,
    mixes: list[PacketMix],
    packets: int = PACKETS,
) -> list[dict[str, object]]:
    """Packet rate with the IOMMU before and after a ring-size change, per packet size or mix."""
    after = replace(setup, rxd=to_rxd, txd=to_txd)
    rows = []
    for mix in with_progress(mixes, "simulating", "size"):
        model = Model(platform, Traffic(mix, eth), packets)
        before, then = model.evaluate(setup), model.evaluate(after)
        rows.append(
            {
                "size": mix.name,
                "mpps_from": before.mpps_iommu,
                "mpps_to": then.mpps_iommu,
                "gain_pct": 100 * (then.mpps_iommu / before.mpps_iommu - 1),
                "misses_per_pkt_from": before.iotlb_misses_per_pkt,
                "misses_per_pkt_to": then.iotlb_misses_per_pkt,
                "mpps_no_iommu": before.mpps_no_iommu,
                "state_from": before.state,
                "state_to": then.state,
            }
        )
    return rows


@dataclass(frozen=True)
class Candidate:
    """One single change to a setup, in the order a user would rather make them."""

    knob: str
    description: str
    setup: PortSetup


def candidates(setup: PortSetup, poll_delays: tuple[float, ...] = ()) -> list[Candidate]:
    """Single changes, smallest first: shrink both rings one step at a time, shrink the pool
    (matters once mbufs cycle through the common ring), then larger pages, then Rx pacing
    (a poll delay)."""
    out = []
    ring = min(setup.rxd, setup.txd) // 2
    while ring >= RING_MIN:
        with suppress(UsageError):  # thresholds that no longer fit a ring this small
            out.append(Candidate("rings", f"rxd/txd {ring}", replace(setup, rxd=ring, txd=ring)))
        ring //= 2
    pool = setup.pool // 2
    while pool >= setup.min_pool:
        out.append(Candidate("pool", f"pool {pool} mbufs", replace(setup, pool=pool)))
        pool //= 2
    for page in ("2m", "1g"):
        if PAGE_SIZES[page] > setup.page_bytes:
            out.append(Candidate("page", f"{page.upper()} pages", replace(setup, page=page)))
    for delay in poll_delays:
        paced = replace(setup, poll_delay_us=delay)
        out.append(Candidate("pacing", f"Rx poll delay {delay:g} us", paced))
    return out


@dataclass(frozen=True)
class Advice:
    """The sweep behind a recommendation and the recommendation itself."""

    current: IommuResult
    target_mpps: float
    options: list[tuple[Candidate, IommuResult]]
    choice: Candidate | None
    chosen: IommuResult
    restores: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return {
            "current": self.current.as_dict(),
            "target_mpps": self.target_mpps,
            "recommendation": self.choice.description if self.choice else "no change",
            "knob": self.choice.knob if self.choice else None,
            "restores_line_rate": self.restores,
            "reason": self.reason,
            "result": self.chosen.as_dict(),
            "options": [
                {"knob": c.knob, "change": c.description, **r.as_dict()} for c, r in self.options
            ],
        }


def advise(
    platform: Platform,
    traffic: Traffic,
    setup: PortSetup,
    packets: int = PACKETS,
    progress: Callable[[list[Candidate]], object] = lambda items: items,
) -> Advice:
    """Sweep single changes and pick the first (smallest) that restores the IOMMU-free rate,
    else the one with the best rate."""
    model = Model(platform, traffic, packets)
    current = model.evaluate(setup)
    target = current.mpps_no_iommu
    best = model.best_poll_delay(setup) if not setup.poll_delay_us else None
    delays = (best, 2 * best) if best else ()
    options = [(c, model.evaluate(c.setup)) for c in progress(candidates(setup, delays))]
    if current.mpps_iommu >= SATURATED * target:
        return Advice(current, target, options, None, current, True, _reason_ok(current))
    restoring = [(c, r) for c, r in options if r.mpps_iommu >= SATURATED * target]
    # max() keeps the first of equals, so ties go to the smaller change.
    choice, chosen = restoring[0] if restoring else max(options, key=lambda o: o[1].mpps_iommu)
    return Advice(
        current,
        target,
        options,
        choice,
        chosen,
        bool(restoring),
        _reason(current, choice, chosen, bool(restoring)),
    )


def _traffic_name(mix: str) -> str:
    return f"{mix} B" if mix.isdigit() else mix


def _reason_ok(current: IommuResult) -> str:
    return (
        f"With {current.page.upper()} pages and rxd/txd {current.rxd}/{current.txd} the IOMMU "
        f"costs {current.iotlb_misses_per_pkt:.2f} page walks per packet, which the walkers "
        f"absorb at {current.mpps_iommu:.1f} Mpps, so nothing needs to change."
    )


def _reason(current: IommuResult, choice: Candidate, chosen: IommuResult, restores: bool) -> str:
    verdict = (
        f"restores {chosen.mpps_iommu:.1f} Mpps"
        if restores
        else f"is the best found at {chosen.mpps_iommu:.1f} Mpps "
        f"(without IOMMU {current.mpps_no_iommu:.1f})"
    )
    return (
        f"{current.working_set_pages} pages in flight against {current.iotlb_entries} IOTLB "
        f"entries cost {current.iotlb_misses_per_fwd_pkt:.2f} page walks per forwarded packet"
        f"{_state_note(current)} and cap {_traffic_name(current.mix)} forwarding at "
        f"{current.mpps_iommu:.1f} Mpps; {choice.description} cuts that to "
        f"{chosen.iotlb_misses_per_fwd_pkt:.2f} walks per forwarded packet "
        f"({chosen.working_set_pages} pages) and {verdict}."
    )


def _state_note(result: IommuResult) -> str:
    """Why walks per forwarded packet exceed one per packet, if a ring is full."""
    if result.state == "tx-full":
        return (
            " (the walks outrun the walkers, so the Tx ring fills, every Tx read misses again "
            f"and the lcore drops {result.drops_per_fwd_pkt:.2f} received packets per "
            "forwarded one)"
        )
    if result.state in ("rx-full", "both-full"):
        return " (the lcores poll slower than packets arrive, so packets wait a full Rx ring)"
    return ""


RING_SWEEP = (64, 128, 256, 512, 1024, 2048, 4096)


def ring_sweep(
    platform: Platform,
    eth: Ethernet,
    mixes: list[PacketMix],
    pages: tuple[str, ...] = ("4k", "2m"),
    rings: tuple[int, ...] = RING_SWEEP,
    packets: int = PACKETS,
    progress: Callable[[list[PacketMix]], object] = lambda items: items,
) -> list[IommuResult]:
    """Every (mix, page size, rxd = txd) of the sweep; the pool grows when the rings need it."""
    rows = []
    for mix in progress(mixes):
        model = Model(platform, Traffic(mix, eth), packets)
        for page in pages:
            for ring in rings:
                shape = PortSetup(page=page, rxd=ring, txd=ring, pool=1 << 20)
                rows.append(model.evaluate(replace(shape, pool=max(8192, shape.min_pool))))
    return rows

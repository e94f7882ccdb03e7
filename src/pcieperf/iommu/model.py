"""Timed runs of a port's stream with and without the IOMMU, the load state they settle in,
and what limits them (`Model.evaluate` -> `IommuResult`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from pcieperf._cache import cached
from pcieperf._native import core
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError, param, require_positive
from pcieperf.iommu.platform import Platform, Traffic
from pcieperf.iommu.profiles import DEFAULT_PLATFORM
from pcieperf.iommu.stream import (
    LIGHT,
    PACKETS,
    REL_ERROR,
    Load,
    MissCounts,
    TransactionClass,
    burst_transactions,
    core_mpps,
    costs_per_packet,
    count_misses,
    per_packet_counts,
    port_params,
    pricing_key,
    resource_bounds,
    transaction_classes,
)
from pcieperf.nic.profile import DeviceFacts


@dataclass(frozen=True)
class Run:
    """One timed run of a port's stream: packet rate, mean DMA latency, how busy each resource
    was (fraction of the run), and the IOTLB misses the walkers served in it.

    The misses are counted in the order the IOMMU saw the transactions in this run (link
    order), not in the stream's order: the NIC's Rx and Tx queues interleave up to a burst
    apart, which can move an mbuf's Tx read closer to its Rx write than the stream has it (at
    rxd 128 on e5-v4 that turns every Tx read into a hit). Rate and misses then come from one
    run, so the rate never exceeds what the walkers can do for those misses. `mpps_stderr`:
    the rate's standard error (batch means, rust/core/src/port.rs RatePrecision)."""

    mpps: float
    mean_latency_ns: float
    utilization: dict[str, float]
    counts: MissCounts
    mpps_stderr: float = 0.0


def cold_read_classes(
    setup: PortSetup, traffic: Traffic, platform: Platform, classes: list[TransactionClass]
) -> list[TransactionClass]:
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
    length: tuple[int, float],
    seed: int,
    load: Load = LIGHT,
    costs: np.ndarray | None = None,
) -> Run:
    """One timed run; `length` is (packets, relative error): at most that many packets, ending
    once the rate is that precise (0: exactly that many); `costs` as `costs_per_packet`
    gives them, if already priced."""
    packets, rel_error = length
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
        rel_error=rel_error,
    )
    device, link = platform.facts, platform.link
    classes = transaction_classes(setup, traffic, platform, costs)
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
    mpps = out["forwarded"] / elapsed * 1e3
    return Run(
        mpps=mpps,
        mean_latency_ns=float(np.mean(out["latencies_ns"])),
        utilization={
            "pcie_up": out["up_busy_ns"] / elapsed,
            "pcie_down": out["down_busy_ns"] / elapsed,
            "read_requests": out["tag_busy_ns"] / (elapsed * device.read_requests),
            "root_complex": out["rc_busy_ns"] / elapsed,
        },
        counts=per_packet_counts(out),
        mpps_stderr=mpps * out["rate_rel_stderr"],
    )


def _check_tags(classes: list[TransactionClass], device: DeviceFacts, traffic: Traffic) -> None:
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
    # Standard errors of the two rates (batch means), reported by runs of no fixed length
    # only: a run of --packets N reports exactly what it did before they existed.
    mpps_iommu_stderr: float | None = None
    mpps_no_iommu_stderr: float | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields (the standard errors only where the runs had them)."""
        return {k: v for k, v in asdict(self).items() if v is not None or k not in _STDERRS}


_STDERRS = ("mpps_iommu_stderr", "mpps_no_iommu_stderr")


SATURATED = 0.99  # a rate within 1 % of a bound counts as reaching it (simulation noise)
# A resource whose own bound is within 5 % of the simulated rate is named as a limit: where two
# resources are nearly saturated at once, queueing between them costs the run a few percent.
NEAR_BOUND = 0.05
UNLIMITED_READS = 4096  # more read requests than any run can use (10-bit tags allow 768)
# What can limit the simulated rate (`limited_by`), and how `bottleneck` names it.
LIMITS = {
    "iommu_walks": "IOMMU page walks",
    "rx_pacing": "Rx pacing",
    "offered": "offered load",
    "ethernet": "line rate",
    "pcie_up": "PCIe up",
    "pcie_down": "PCIe down",
    "read_requests": "device read requests",
    "root_complex": "root-complex writes",
    "lcores": "lcore polling",
}


@dataclass
class _Priced:
    """Costs per packet worked out once and shared: held by `_costs`, a cached function of
    their whole key."""

    value: np.ndarray | None = None


Length = tuple[int, float]  # (most packets, relative error) of a timed run


@dataclass
class _Reference:
    """The run without IOMMU and what holds it, each worked out once."""

    run: Run | None = None
    limits: list[str] | None = None


@cached(1024)
def _reference(platform: Platform, traffic: Traffic, length: Length, key: object) -> _Reference:
    """The run without IOMMU and its limits of a platform, traffic, run length and
    `Model._key` (every model of them shares it: a sweep's points along rxd or page run it
    once)."""
    return _Reference()


@cached(256)
def _costs(platform: Platform, traffic: Traffic, key: object) -> _Priced:
    """`costs_per_packet` of a platform, traffic and `pricing_key`, shared by every model."""
    return _Priced()


class Model:
    """One platform and traffic; evaluates port setups (each once), sharing with every model
    of the same platform, traffic and run length its runs without IOMMU and costs per packet."""

    def __init__(
        self,
        platform: Platform,
        traffic: Traffic,
        packets: int | None = None,
        rel_error: float | None = None,
    ) -> None:
        """Remember the platform, traffic and run length: at most `packets` per timed run
        (None: `PACKETS`), ending once the rate's relative standard error is `rel_error` (None:
        `REL_ERROR` without `packets`, else 0, exactly `packets`). Runs with a target report
        the rates' standard errors."""
        if packets is not None:
            require_positive(param("packets"), packets)
        if rel_error is None:
            rel_error = 0.0 if packets else REL_ERROR
        self.platform, self.traffic, self.packets = platform, traffic, packets
        self._length: Length = (packets or PACKETS, rel_error)
        self._evaluated: dict[tuple[PortSetup, int], IommuResult] = {}

    @staticmethod
    def _key(setup: PortSetup) -> tuple[object, ...]:
        """What the run without IOMMU depends on: ports, queues, descriptor sizes, thresholds,
        burst, poll delay, and where the mbufs lie (pool, cache, layout; with physical IOVAs
        the page size), which moves it a little. Not the ring sizes, nor the page size with
        virtual IOVAs: no packet waits in the light state (tests/iommu check both)."""
        return (
            setup.queues,
            setup.ports,
            setup.rx_desc_bytes,
            setup.tx_desc_bytes,
            setup.rs_thresh,
            setup.rx_free_thresh,
            setup.burst,
            setup.poll_delay_us,
            setup.pool,
            setup.cache,
            setup.layout,
            setup.iova,
            setup.page if setup.iova == "pa" else None,
        )

    def no_iommu(self, setup: PortSetup) -> Run:
        """The run without IOMMU."""
        shared = _reference(self.platform, self.traffic, self._length, self._key(setup))
        if shared.run is None:
            costs = self.costs(setup)
            shared.run = _timed_run(
                setup, self.traffic, self.platform, False, self._length, 1, LIGHT, costs
            )
        return shared.run

    def no_iommu_limits(self, setup: PortSetup, bounds: dict[str, float]) -> list[str]:
        """What holds the run without IOMMU. When no bound is near and no resource saturated,
        the read requests bind in bursts (a Tx burst asks for more than the tags, then the tags
        idle during Rx): it is named if the same run with unlimited read requests is faster."""
        shared = _reference(self.platform, self.traffic, self._length, self._key(setup))
        if shared.limits is None:
            base = self.no_iommu(setup)
            limits = _limits(bounds, base.mpps, base.utilization, base.mpps)
            if not limits and self._unlimited_reads(setup).mpps > base.mpps / SATURATED:
                limits = ["read_requests"]
            shared.limits = limits
        return shared.limits

    def _unlimited_reads(self, setup: PortSetup) -> Run:
        facts = replace(self.platform.facts, read_requests=UNLIMITED_READS)
        platform = replace(self.platform, device=replace(self.platform.device, device=facts))
        return _timed_run(setup, self.traffic, platform, False, self._length, seed=1)

    def run_in(self, setup: PortSetup, load: Load, seed: int = 1) -> Run:
        """The timed run with the IOMMU in a given load state (for what-ifs; evaluate picks
        the state itself)."""
        costs = self.costs(setup)
        return _timed_run(setup, self.traffic, self.platform, True, self._length, seed, load, costs)

    def costs(self, setup: PortSetup) -> np.ndarray:
        """`costs_per_packet` of a setup on this model's platform and traffic, priced once per
        descriptor and threshold setting (`pricing_key`)."""
        slot = _costs(self.platform, self.traffic, pricing_key(setup))
        if slot.value is None:
            costs = costs_per_packet(setup, self.traffic, self.platform)
            costs.flags.writeable = False  # shared
            slot.value = costs
        return slot.value

    def counts(self, setup: PortSetup, load: Load = LIGHT, seed: int = 1) -> MissCounts:
        """The misses of a load state in the stream's own order (no timing; `evaluate` reports
        those of its timed run, in link order)."""
        p = self.platform
        return count_misses(
            setup,
            self.traffic,
            p.iommu,
            self._length[0],
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
        if self.platform.overload == "wire-drop" or self.walk_load(base.mpps, light.counts) < 1:
            return LIGHT, light  # a wire-drop port stays light at its walker-bound rate
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
        and what limits them (each setup simulated once per model: `advise` asks again)."""
        key = (setup, seed)
        if key not in self._evaluated:
            self._evaluated[key] = self._evaluate(setup, seed)
        return self._evaluated[key]

    def _evaluate(self, setup: PortSetup, seed: int) -> IommuResult:
        platform, traffic = self.platform, self.traffic
        device = platform.facts
        if setup.queues > device.queues:
            raise UsageError(
                f"queues {setup.queues} is more than {device.name} has "
                f"({device.queues} queue pairs)"
            )
        base = self.no_iommu(setup)
        lcores = core_mpps(setup, platform.core)
        load, with_iommu = self.load_state(setup, base, seed)
        counts = with_iommu.counts
        line = traffic.line_mpps(setup.ports)
        iommu = platform.iommu
        reference = min(base.mpps, lcores)  # without IOMMU the lcores still cap the rate
        mpps = min(with_iommu.mpps, reference)  # the IOMMU never speeds a device up
        costs = self.costs(setup)
        bounds = {**resource_bounds(setup, traffic, platform, costs), "lcores": lcores}
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
            profile=platform.device.name,
            device=device.name,
            read_requests=device.read_requests,
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
            **self._stderrs(base, with_iommu, reference),
        )

    def _stderrs(self, base: Run, with_iommu: Run, reference: float) -> dict[str, float]:
        """The rates' standard errors, for runs of no fixed length: each rate's run's, 0 where
        the rate is the lcores' bound (computed, not simulated)."""
        if not self._length[1]:
            return {}
        no_iommu = base.mpps_stderr if base.mpps <= reference else 0.0
        iommu = with_iommu.mpps_stderr if with_iommu.mpps <= reference else no_iommu
        return {"mpps_iommu_stderr": iommu, "mpps_no_iommu_stderr": no_iommu}


UNPACED_MPPS = 1e6  # arrivals "as fast as the device takes them" for a capacity run
DROP_BISECTIONS = 6  # drops of a both-full state to 1/64 of the unpaced full-Tx-ring drops


def drops_at_full_tx_ring(platform: Platform) -> float:
    """Packets the lcores drop per forwarded packet when the Tx ring is full and the Rx ring is
    not: the NIC keeps writing received packets, and when page walks are the bottleneck each
    direction gets walks in proportion to the requests it keeps waiting for one. Posted writes
    wait up to the root port's posted credits (calibration [host] posted_credits), reads up to
    the NIC's outstanding read requests (the profile's [device] read_requests), so
    Rx : Tx = credits : read requests."""
    return max(platform.posted_credits / platform.facts.read_requests - 1.0, 0.0)


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

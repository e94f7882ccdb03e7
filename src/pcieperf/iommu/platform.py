"""The platform an IOMMU run models: the NIC (a forwarding profile), the calibrated link and
host, and a platform profile's IOMMU, LLC (DDIO) and polling core; and the traffic offered."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pcieperf.dpdk import forwarding
from pcieperf.dpdk.port import LINE, require_count
from pcieperf.errors import ProfileError, UsageError, require_choice, require_positive
from pcieperf.iommu.profiles import DEFAULT_PLATFORM, PlatformProfile, load_platform_profile
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.nic.profile import DEFAULT_PROFILE, DeviceFacts, NicProfile, load_profile
from pcieperf.pcie.link import Link
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION, load_calibration

if TYPE_CHECKING:
    from typing import Unpack

TLB_MAX = 1 << 20  # IOTLBs and walk caches hold tens to thousands of entries (VT-d spec §6)
REPLACEMENTS = ("lru", "random")
# Where a port whose walks outrun the walkers queues its excess (docs/iommu.md, "The talk's
# setup: mechanisms"): `tx-full`, the Tx DMA falls behind and the Tx ring fills (every Tx read
# then misses); `wire-drop`, Rx and Tx DMA slow together (a read request may not pass the
# NIC's earlier posted writes, PCIe Base 3.0 §2.4.1, and those wait for their walks), the rings
# stay light and the NIC drops the excess at the wire.
OVERLOADS = ("tx-full", "wire-drop")


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
        require_count("IOTLB entries", self.iotlb_entries, 1, TLB_MAX)
        require_count("IOTLB ways", self.iotlb_ways, 0, TLB_MAX)
        require_count("page-walk cache entries", self.pwc_entries, 0, TLB_MAX)
        if self.iotlb_ways and self.iotlb_entries % self.iotlb_ways:
            raise UsageError(
                f"IOTLB entries {self.iotlb_entries} must be a multiple of its ways "
                f"{self.iotlb_ways}"
            )


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


HOST_MEMORY = Memory()  # no LLC model, 64 GiB: what a stream runs with unless told
LCORE = CoreCosts()  # the default lcore


@dataclass(frozen=True)
class Platform:
    """The NIC (a forwarding profile with its `[device]` facts), link, host, IOMMU, LLC and
    core the model runs on: link and host from a calibration file, the IOMMU, LLC and core from
    a platform profile."""

    device: NicProfile
    link: Link
    llc_latency_ns: float
    write_line_ns: float
    partial_line_ns: float
    posted_credits: int
    iommu: IommuParams
    name: str = DEFAULT_PLATFORM
    memory: Memory = HOST_MEMORY
    core: CoreCosts = LCORE
    overload: str = "tx-full"

    def __post_init__(self) -> None:
        require_choice("overload mechanism", self.overload, OVERLOADS)

    @property
    def facts(self) -> DeviceFacts:
        """The NIC's `[device]` facts, which a platform's NIC has (`load_platform` checks)."""
        assert self.device.device is not None, "a platform's NIC has a [device] table"
        return self.device.device


def platform_parts(profile: PlatformProfile) -> tuple[IommuParams, Memory, CoreCosts]:
    """The IOMMU, memory/LLC and core a platform profile describes."""
    v, count = profile.value, profile.count
    iommu = IommuParams(
        iotlb_entries=count("iommu.iotlb_entries"),
        walk_ns=v("iommu.walk_ns"),
        walk_busy_ns=v("iommu.walk_busy_ns"),
        walkers=count("iommu.walkers"),
        pwc_entries=count("iommu.pwc_entries"),
    )
    llc = (
        Llc(
            sets_per_slice=count("llc.sets_per_slice"),
            slices=count("llc.slices"),
            ways=count("llc.ways"),
            ddio_ways=count("llc.ddio_ways"),
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


class IommuOverrides(TypedDict, total=False):
    """`IommuParams` fields a run sets instead of its platform profile (None: the profile's)."""

    iotlb_entries: int | None
    walk_ns: float | None
    walk_busy_ns: float | None
    walkers: int | None
    iotlb_ways: int | None
    replacement: str | None
    pwc_entries: int | None


def port_profile_problem(device: NicProfile) -> str | None:
    """Why the DPDK port model cannot take `device` (it needs a descriptor-ring forwarding
    profile), or None where it can."""
    missing = [name for name in forwarding.FORWARDING_PARAMS if name not in device.params]
    if not missing and device.device is not None:
        return None
    lacks = f"the parameters {', '.join(missing)}" if missing else "a [device] table"
    return (
        f"profile {device.name!r} lacks {lacks}; the DPDK port model needs a descriptor-ring "
        f"forwarding profile with [device] and {', '.join(forwarding.FORWARDING_PARAMS)}, "
        f"such as {DEFAULT_PROFILE}"
    )


def load_platform(
    path: Path = DEFAULT_CALIBRATION,
    *,
    gen: int = 3,
    lanes: int = 8,
    profile: str | NicProfile = DEFAULT_PROFILE,
    platform: str | Path = DEFAULT_PLATFORM,
    **iommu: Unpack[IommuOverrides],
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
    device = load_profile(profile) if isinstance(profile, str) else profile
    problem = port_profile_problem(device)
    if problem:
        raise UsageError(problem)
    platform_profile = load_platform_profile(platform, path)
    params, memory, core = platform_parts(platform_profile)
    overrides: dict[str, Any] = {k: v for k, v in iommu.items() if v is not None}
    return Platform(
        device=device,
        link=Link.of(ref, gen=gen, lanes=lanes, completion_policy=shared.completion_policy),
        llc_latency_ns=ref.llc_latency_ns,
        write_line_ns=shared.write_line_ns,
        partial_line_ns=shared.partial_line_ns,
        posted_credits=shared.posted_credits,
        iommu=replace(params, **overrides),
        name=platform_profile.name,
        memory=memory,
        core=core,
    )


@dataclass(frozen=True)
class Traffic:
    """What arrives: a packet-size mix at an Ethernet rate on every port, optionally paced, and
    the load the generator offers (a share of line rate and/or a rate over all ports)."""

    mix: PacketMix
    eth: Ethernet
    pace_mpps: float | None = None
    offer_share: float = 1.0
    offer_mpps: float | None = None

    def __post_init__(self) -> None:
        if self.pace_mpps is not None:
            require_positive("Rx pacing (Mpps)", self.pace_mpps)
        if self.offer_mpps is not None:
            require_positive("offered load (Mpps)", self.offer_mpps)
        if not 0 < self.offer_share <= 1:
            share = 100 * self.offer_share
            raise UsageError(f"offered load {share:g} % is not allowed; use more than 0 to 100 %")

    @property
    def offer_limited(self) -> bool:
        """Whether the generator offers less than line rate."""
        return self.offer_share < 1 or self.offer_mpps is not None

    def line_mpps(self, ports: int) -> float:
        """Line-rate packet rate of the mix over all ports."""
        wire = self.mix.mean(self.eth.wire_bytes(self.mix.sizes))
        return float(ports * self.eth.rate_gbps * 1e3 / (8 * wire))

    def offered_mpps(self, ports: int) -> float:
        """What reaches the NIC's DMA: line rate, or less where the generator offers less or the
        pace limits Rx below it."""
        rates = [self.line_mpps(ports) * self.offer_share, self.offer_mpps, self.pace_mpps]
        return min(r for r in rates if r is not None)

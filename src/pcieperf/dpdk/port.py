"""One DPDK port's setup (issue 16: the one type `iommu`, `dpdk-fwd` and `explain` describe a
port with): page size, rings, mbuf pool and caches, descriptor sizes, thresholds, burst, mbuf
layout, IOVA mode and Rx pacing, with DPDK's own limits and testpmd's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from pcieperf.errors import UsageError, require_choice, require_power_of_two

PAGE_SIZES = {"4k": 4096, "2m": 2 << 20, "1g": 1 << 30}  # x86-64 page sizes (SDM vol. 3 §4.5)
RING_MIN, RING_MAX = 64, 4096  # ixgbe/i40e descriptor-ring limits (IXGBE/I40E_MIN/MAX_RING_DESC)
DESCRIPTOR_BYTES = (16, 32)  # Intel 16 B legacy/advanced and 32 B Rx descriptor formats
POOL_MAX = 1 << 24  # 16 M mbufs: 32 GiB of 2 KiB buffers, beyond any one DPDK port's pool
# DPDK's populate rule (no object crosses a page; rte_mempool_ops_default.c check_obj_bounds)
# or objects packed back to back (pools flagged RTE_MEMPOOL_F_NO_IOVA_CONTIG).
LAYOUTS = ("dpdk", "packed")
IOVA_MODES = ("va", "pa")  # EAL --iova-mode
POLL_DELAY_MAX_US = 1e6  # a poll per second is already no data plane
# An mbuf pool object (DPDK defaults): 64 B mempool header (cache-line aligned), 128 B struct
# rte_mbuf, RTE_PKTMBUF_HEADROOM 128 B, RTE_MBUF_DEFAULT_DATAROOM 2048 B. The NIC writes packet
# data right after the headroom.
MEMPOOL_HEADER_BYTES, MBUF_BYTES, HEADROOM_BYTES, DATAROOM_BYTES = 64, 128, 128, 2048
ELEMENT_BYTES = MEMPOOL_HEADER_BYTES + MBUF_BYTES + HEADROOM_BYTES + DATAROOM_BYTES
DATA_OFFSET = MEMPOOL_HEADER_BYTES + MBUF_BYTES + HEADROOM_BYTES
LINE = 64  # descriptors move a 64 B cache line at a time


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
            require_count(name, getattr(self, name), 1, RING_MAX)
        require_count("queues", self.queues, 1, 1024)  # RTE_MAX_QUEUES_PER_PORT
        require_count("ports", self.ports, 1, 1024)  # RTE_MAX_ETHPORTS is 32 by default
        require_count("pool", self.pool, 1, POOL_MAX)
        require_count("tx_free_thresh", self.tx_free_thresh, 0, RING_MAX)
        require_count("cache", self.cache, 0, 512)  # RTE_MEMPOOL_CACHE_MAX_SIZE
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


def require_count(name: str, value: int, low: int, high: int | None = None) -> None:
    """A whole number from `low` to `high` (or at least `low`), else a usage error naming it."""
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


DEFAULT_PORT = PortSetup()
"""The one port setup's defaults, which every command and function that takes a port option
has (`iommu`, `dpdk-fwd`, `explain`)."""

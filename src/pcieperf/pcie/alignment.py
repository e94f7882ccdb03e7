"""What alignment does to one pcie-bench DMA: its shape on the device side and on the host side.

A transfer of SZ bytes moves between device memory at offset DO and host memory at an address
the benchmark picks (a unit of the window plus the host offset HO). The two sides are cut
differently, and the offset sweeps (`bw_dma_off_*`) show that each side has its own costs:

*Device side* (the NFP's DMA engine and memory). The NFP's memory units are read and written
in 64-bit words (Linux `drivers/net/ethernet/netronome/nfp/nfpcore/nfp_target.c`,
`nfp6000_mu_common`: every MU read/write pushes or pulls P64 = 8-byte words). A buffer at DO
spans `device_words` = ceil((DO mod 8 + SZ) / 8) words; when that is more than the ceil(SZ / 8)
words its data fills, the data has to be shifted across a word boundary into one extra word
(`extra_word`). The engine's per-transaction cost counts the transfer's 64 B of data
(`data_lines` = ceil(SZ / 64)), not the host lines it touches, and the engine that writes to
the host reads device memory in bursts of `burst_bytes` (`bursts`). Measured on all 14 steady
hosts alike: 64 B reads into a buffer at DO = 1..7, 12, 20, 25, 41, 63 run at 12.6-12.7 Gb/s
against 29-33 at DO = 0, 8, 16, 32, 48 (only the 8-byte alignment matters), 407 B reads slow
down at DO = 2 but not at DO = 1 (407 + 1 fills its 51 words exactly), and 128 B writes from
DO = 2 cost exactly what 129 B writes cost (17 words: two 128 B bursts, 38.0 ns).

*Host side* (PCIe and the root complex). Cache lines touched and partly covered follow the
host address; the TLPs a transfer needs depend on where it starts relative to the MRRS, MPS
and completion boundaries, so they are averaged over the addresses the benchmark visits
(`host_side`): 416 B reads on 448 B units cross a 512 B MRRS boundary at most addresses and
need two read requests (measured 74-75 ns per read on the MRRS-512 hosts) but never on
512 B units (61-62 ns, HO >= 41).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._native import core
from pcieperf._numpy import np
from pcieperf.errors import UsageError
from pcieperf.pcie.link import Link
from pcieperf.pcie.tlp import read_cost, write_cost

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

WORD_BYTES = 8  # NFP memory units move 64-bit words (nfp_target.c, nfp6000_mu_common: P64)
LINE_BYTES = 64  # the engine's cost unit: 64 B of data (the host's cache line)
# Device memory burst of the engine that writes to the host: 16 words. No public NFP document
# gives it; the offset and size sweeps pick it (docs/bench.md: 64 B and 256 B fit worse).
BURST_BYTES = 128


def data_lines(size: ArrayLike) -> NDArray:
    """64 B lines of data a transfer carries, wherever it starts: ceil(SZ / 64)."""
    return -(-np.asarray(size, dtype=np.int64) // LINE_BYTES)


def device_words(dev_offset: ArrayLike, size: ArrayLike) -> NDArray:
    """8-byte device words a transfer at device offset DO spans: ceil((DO mod 8 + SZ) / 8)."""
    head = np.asarray(dev_offset, dtype=np.int64) % WORD_BYTES
    return -(-(head + np.asarray(size, dtype=np.int64)) // WORD_BYTES)


def extra_word(dev_offset: ArrayLike, size: ArrayLike) -> NDArray:
    """Whether the device range needs one more word than its data fills (a shifted copy)."""
    full = -(-np.asarray(size, dtype=np.int64) // WORD_BYTES)
    return device_words(dev_offset, size) > full


def bursts(dev_offset: ArrayLike, size: ArrayLike, burst_bytes: int = BURST_BYTES) -> NDArray:
    """Device-memory bursts of `burst_bytes` that the transfer's words need."""
    per_burst = burst_bytes // WORD_BYTES
    return -(-device_words(dev_offset, size) // per_burst)


@dataclass(frozen=True)
class HostSide:
    """A transfer's PCIe cost, averaged over the addresses the benchmark gives it: read
    requests per read, and wire bytes of a read (requests out, completions back) and a write."""

    read_requests: float
    read_up_bytes: float
    read_down_bytes: float
    write_up_bytes: float


def host_side(link: Link, size: int, host_offset: int, window: int) -> HostSide:
    """TLP costs of a transfer averaged over the window's unit addresses (`bench_addresses`)."""
    if size < 1 or host_offset < 0:
        bad = f"size {size}" if size < 1 else f"host offset {host_offset}"
        raise UsageError(f"{bad} is not allowed; sizes are 1 byte or more, offsets 0 or more")
    # A window that holds no unit is a UsageError from the core (its message says which).
    addrs = core().bench_addresses(size, host_offset, window).astype(np.int64)
    sizes = np.full(addrs.shape, size)
    rd, wr = read_cost(link, sizes, addrs), write_cost(link, sizes, addrs)
    return HostSide(
        read_requests=float(rd.tlps_out.mean()),
        read_up_bytes=float(rd.wire_out.mean()),
        read_down_bytes=float(rd.wire_back.mean()),
        write_up_bytes=float(wr.wire_out.mean()),
    )


@dataclass(frozen=True)
class TransferShape:
    """What the cost model counts for transfers besides the host lines they touch
    (`sim.cache_lines`): device side `data_lines`, `extra_word`, `bursts`; host side the
    averaged `HostSide` quantities. Arrays of the points' shape."""

    data_lines: NDArray
    extra_word: NDArray
    bursts: NDArray
    read_requests: NDArray
    read_up_bytes: NDArray
    read_down_bytes: NDArray
    write_up_bytes: NDArray


def transfer_shape(
    link: Link,
    size: ArrayLike,
    host_offset: ArrayLike,
    dev_offset: ArrayLike,
    window: ArrayLike,
    burst_bytes: int = BURST_BYTES,
) -> TransferShape:
    """The shape of each transfer (element-wise over arrays of points)."""
    arrays = np.broadcast_arrays(size, host_offset, dev_offset, window)
    size, host_offset, dev_offset, window = (np.asarray(v, dtype=np.int64) for v in arrays)
    cache: dict[tuple[int, int, int], HostSide] = {}
    sides = []
    keys = zip(
        size.ravel().tolist(), host_offset.ravel().tolist(), window.ravel().tolist(), strict=True
    )
    for key in keys:
        if key not in cache:
            cache[key] = host_side(link, *key)
        sides.append(cache[key])

    def side(name: str) -> NDArray:
        return np.array([getattr(s, name) for s in sides], dtype=np.float64).reshape(size.shape)

    return TransferShape(
        data_lines=data_lines(size),
        extra_word=extra_word(dev_offset, size).astype(np.float64),
        bursts=bursts(dev_offset, size, burst_bytes),
        read_requests=side("read_requests"),
        read_up_bytes=side("read_up_bytes"),
        read_down_bytes=side("read_down_bytes"),
        write_up_bytes=side("write_up_bytes"),
    )

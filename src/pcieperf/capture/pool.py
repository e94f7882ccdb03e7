"""The capture pool's footprint in the cache: copies are made into mbufs that the mempool hands
out in FIFO order (its ring, lib/mempool ring_mp_mc), so each mbuf comes back only after every
other one of the pool has been used. Where the lines those mbufs touch outgrow the last-level
cache, the copy and the write that reads it find cold lines (dpdk-pdump's default pool of 65535
mbufs; dumpcap's pool, twice its ring, stays cached). How much cache a pool keeps is measured,
not read from the CPU's name: on a shared host other tenants take part of the last-level cache,
and a run probes what is left (`effective_cache_bytes`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
LINE_BYTES = 64  # a cache line
MBUF_HEADER_BYTES = 128  # sizeof(struct rte_mbuf): two cache lines (lib/mbuf/rte_mbuf_core.h)


def data_bytes(captured: Array | float) -> Array:
    """Bytes of the cache lines a copy of `captured` bytes writes (whole lines)."""
    return LINE_BYTES * np.ceil(np.asarray(captured, dtype=np.float64) / LINE_BYTES)


def cold_share(
    pool_mbufs: Array | float, captured: Array | float, llc_bytes: Array | float
) -> Array:
    """The share of a copy's lines that are no longer cached when its mbuf comes round again:
    1 - cache / footprint where the pool's touched lines (mbuf header and data) outgrow the
    cache, 0 where they fit or the cache is unknown (NaN or 0). A cyclic reuse over more
    lines than the cache holds keeps at most cache / footprint of them."""
    per_mbuf = MBUF_HEADER_BYTES + data_bytes(captured)
    footprint = np.asarray(pool_mbufs, dtype=np.float64) * per_mbuf
    llc = np.nan_to_num(np.asarray(llc_bytes, dtype=np.float64), nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(llc > 0, 1 - llc / footprint, 0.0)
    return np.clip(share, 0.0, 1.0)


PROBE_MIB = (1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64)  # footprints the probe sweeps
PROBE_BYTES = 128 * 2**20  # bytes swept per timing: ~1.5-4 ms here, at any footprint
KEPT_SPEED = 0.75
"""A footprint is cached while its sweep runs at this share of the fastest footprint's speed
or more: from the fastest on, the first footprint below it ends the cache. Here the sweep
runs at 83-106 GB/s up to 12-16 MiB of the 32 MiB L3 and falls to 45-58 GB/s by 16-20 MiB
and 17-34 by 64 MiB, with nothing else running (docs/capture.md)."""


def effective_cache_bytes(repeats: int = 3) -> int:
    """The largest footprint that a cyclic read-modify-write sweep (each 8 B word incremented,
    in order, over and over, as a FIFO pool reuses its mbufs) keeps at KEPT_SPEED of its
    fastest footprint's speed: the cache a pool's lines keep on this host now (each footprint
    timed `repeats` times, the best taken)."""
    speeds = np.array([_sweep_bytes_per_s(mib * 2**20, repeats) for mib in PROBE_MIB])
    fastest = int(np.argmax(speeds))
    slower = np.flatnonzero(speeds[fastest:] < KEPT_SPEED * speeds[fastest])
    last = fastest + int(slower[0]) - 1 if len(slower) else len(PROBE_MIB) - 1
    return PROBE_MIB[last] * 2**20


def _sweep_bytes_per_s(footprint: int, repeats: int) -> float:
    """The best speed of `repeats` timed sweeps over `footprint` bytes, after one untimed."""
    import time

    words = np.zeros(footprint // 8, dtype=np.uint64)
    passes = max(1, PROBE_BYTES // footprint)
    np.add(words, 1, out=words)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(passes):
            np.add(words, 1, out=words)
        best = min(best, time.perf_counter() - start)
    return passes * footprint / best


def cold_bytes(
    pool_mbufs: Array | float, captured: Array | float, llc_bytes: Array | float
) -> Array:
    """Bytes per copy written to (and read back from) lines that were not cached."""
    return cold_share(pool_mbufs, captured, llc_bytes) * data_bytes(captured)

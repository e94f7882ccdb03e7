"""`pcieperf capture probe` (`pp.capture_probe`): the primitives a capture path's costs are
made of (`capture.primitives`), timed on this machine in about a second and without DPDK by
the Rust core (pcieperf._core: a cache line's round trip and a ring between the two CPUs a
capture run uses, a ring on one CPU, bytes copied from a pool in L1 and from one larger than
the last-level cache, a `write` of a record into /dev/null and into a file on tmpfs), each the
median of several repeats with their lowest and highest. Kept per kind of machine beside the
store, so that `capture model` can carry a calibration's costs here (`capture.travel`)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

from pcieperf import _native, outputs, statedir
from pcieperf.capture import placement
from pcieperf.capture.machine import Machine
from pcieperf.capture.primitives import (
    PRIMITIVES,
    Probe,
    Spread,
    cache_file,
    cached,
    probe_folder,
    write_key,
)
from pcieperf.capture.threads import llc_bytes
from pcieperf.errors import UsageError, param
from pcieperf.results import Column, Table

MAX_REPEATS = 1000
REPEATS = 7  # each primitive's median and spread over these (every primitive once per repeat)
WARM_POOL = 16 << 10  # copied from: fits any L1d of 32 KiB or more
COLD_POOLS = 4  # copied from: this many last-level caches, so that almost no chunk is cached
UNKNOWN_LLC = 64 << 20  # where sysfs gives no cache size: larger than most last-level caches
MAX_POOL = 1 << 30  # memory the cold pool may take
CHUNK = 1024  # bytes per copy: a mid-sized packet's mbuf data
WARM_BYTES = 32 << 20  # copied warm per repeat: ~1-2 ms
RECORD_BYTES = 128  # per write call: a small frame's pcapng record
WRITE_CALLS = 10_000  # per repeat and sink: ~2-10 ms, 1.3 MB into the tmpfs file
RING_ITEMS = 100_000  # per repeat between the CPUs: ~1-5 ms
LOCAL_ITEMS = 1_000_000  # per repeat on one CPU: ~1-3 ms
TMPFS = Path("/dev/shm")  # where the tmpfs file is written (in a private folder, removed after)


def capture_probe(
    *, fresh: bool = False, repeats: int = REPEATS, db: str | os.PathLike[str] | None = None
) -> Table:
    """The primitives a capture path's costs are made of, timed on this machine (each the median
    of `repeats` with the lowest and highest), and kept per kind of machine beside the store
    `db`; the kept ones unless `fresh` (`pcieperf capture probe`, docs/capture.md)."""
    if not (isinstance(repeats, int) and 1 <= repeats <= MAX_REPEATS):
        raise UsageError(
            f"{param('repeats')} {repeats!r} is not allowed; give a whole number from 1 to "
            f"{MAX_REPEATS}"
        )
    here = Machine.here()
    path = cache_file(probe_folder(db), here.kind)
    found = None if fresh else cached(probe_folder(db), here.kind)
    measured = found is None
    if found is None:
        found = measure(repeats, here)
        path.parent.mkdir(parents=True, exist_ok=True)
        outputs.write_text(path, json.dumps(found.table(), indent=1) + "\n", force=True)
    return probe_table(found, path, measured)


def measure(repeats: int, here: Machine) -> Probe:
    """Every primitive `repeats` times, in turn (a moment of load touches each alike)."""
    first, second = placement.run_cpus()
    core = _native.core()
    cold_pool = min(MAX_POOL, COLD_POOLS * (llc_bytes() or UNKNOWN_LLC))
    tmpfs = statedir.private_folder("probe-", TMPFS) if TMPFS.is_dir() else None
    timed: dict[str, Callable[[], float]] = {
        "round_trip_ns": placement.round_trip_ns,
        "ring_ns": lambda: core.ring_ns(first, second, RING_ITEMS),
        "ring_local_ns": lambda: core.ring_local_ns(LOCAL_ITEMS),
        "copy_warm_ns_per_byte": lambda: core.copy_ns_per_byte(WARM_POOL, CHUNK, WARM_BYTES),
        "copy_cold_ns_per_byte": lambda: core.copy_ns_per_byte(cold_pool, CHUNK, cold_pool),
        write_key("null"): lambda: core.write_call_ns(os.devnull, RECORD_BYTES, WRITE_CALLS),
    }
    if tmpfs is not None:
        file = str(tmpfs / "records")
        timed[write_key("tmpfs")] = lambda: core.write_call_ns(file, RECORD_BYTES, WRITE_CALLS)
    if first == second:  # one CPU: nothing moves between two
        del timed["round_trip_ns"], timed["ring_ns"]
    try:
        values: dict[str, list[float]] = {key: [] for key in timed}
        for _ in range(repeats):
            for key, run in timed.items():
                values[key].append(run())
    finally:
        if tmpfs is not None:
            statedir.remove_private_folder(tmpfs)
    spreads = {k: spread(v) for k, v in values.items()}
    kept = {k: s for k, s in spreads.items() if s is not None}
    return Probe(here.cpu_model, here.cpus, repeats, kept)


def spread(values: list[float]) -> Spread | None:
    """The median, lowest and highest of the answers (NaN: none), None without a positive one."""
    found = sorted(v for v in values if math.isfinite(v) and v > 0)
    if not found:
        return None
    middle = len(found) // 2
    median = found[middle] if len(found) % 2 else (found[middle - 1] + found[middle]) / 2
    return Spread(median, found[0], found[-1])


COLUMNS = (
    Column("primitive", "primitive"),
    Column("median", "median"),
    Column("low", "low"),
    Column("high", "high"),
    Column("spread_pct", "spread %"),
)


def probe_table(probe: Probe, path: Path, measured: bool) -> Table:
    """The probe as `capture probe` shows it: one row per primitive (JSON: the probe's table,
    as `capture.primitives.probe_of` reads it, with where it is kept)."""
    rows = [  # four significant digits: per-byte costs are hundredths of a ns
        {"primitive": key}
        | {k: f"{v:.4g}" for k, v in (("median", s.median), ("low", s.low), ("high", s.high))}
        | {"spread_pct": f"{100 * (s.high - s.low) / s.median:.0f}"}
        for key, s in probe.primitives.items()
    ]
    when = "measured now" if measured else "kept from an earlier probe (--fresh: again)"
    return Table(
        {"probe": probe.table(), "file": str(path), "measured_now": measured},
        COLUMNS,
        title=f"capture probe of {probe.cpu_model}, {probe.cpus} CPUs: {probe.repeats} repeats, "
        f"{when}\nkept in {path}",
        footer="\n".join(f"{k}: {PRIMITIVES[k]}" for k in probe.primitives),
        text_rows=rows,
    )

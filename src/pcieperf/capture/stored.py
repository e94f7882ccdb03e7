"""A capture run as the store keeps it: the columns of its table and their SQL types (owned
here; the store makes and extends the table from them, `Store.numbered_table`), and the rows
written and read back. `capture.records` builds the rows."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pcieperf.errors import UsageError
from pcieperf.measure.records import open_store

if TYPE_CHECKING:
    from pcieperf.measure.store import Store

TABLE = "capture_runs"
RUN_COLUMNS = {
    "dpdk_version": "VARCHAR",
    "tool": "VARCHAR",
    "port": "VARCHAR",
    "frame_bytes": "DOUBLE",
    "fwd_lcores": "INTEGER",
    "direction": "VARCHAR",
    "copies_per_packet": "INTEGER",
    "format": "VARCHAR",
    "snaplen": "INTEGER",
    "ring_size": "INTEGER",
    "sink": "VARCHAR",
    "seconds": "DOUBLE",
    "fwd_pps_no_capture": "DOUBLE",
    "fwd_pps": "DOUBLE",
    "fwd_cpu_ns_no_capture": "DOUBLE",
    "fwd_cpu_ns": "DOUBLE",
    "fwd_cpu_share_no_capture": "DOUBLE",
    "fwd_cpu_share": "DOUBLE",
    "copies": "BIGINT",
    "copies_counted": "BOOLEAN",
    "dropped": "BIGINT",
    "written": "BIGINT",
    "loss": "DOUBLE",
    "file_packets": "BIGINT",
    "capture_pps": "DOUBLE",
    "capture_gbps": "DOUBLE",
    "capture_cpu_ns": "DOUBLE",
    "capture_cpu_share": "DOUBLE",
    "bytes_per_record": "DOUBLE",
    "write_calls_per_packet": "DOUBLE",
    "packets_per_timestamp": "DOUBLE",
    "inversions": "BIGINT",
    "harness_cpu_share": "DOUBLE",
    "cross_cpu_slowdown_before": "DOUBLE",
    "cross_cpu_slowdown_after": "DOUBLE",
    "crashed": "BOOLEAN",
    "commands": "VARCHAR",
    "outputs": "VARCHAR",
    "pool_mbufs": "INTEGER",
    "llc_bytes": "BIGINT",
    "cache_bytes": "BIGINT",
    "capture_sleeps_per_s": "DOUBLE",
    "fwd_cpu_ns_spread_no_capture": "DOUBLE",
    "fwd_cpu_ns_spread": "DOUBLE",
    "steal_cpu_share": "DOUBLE",
    "round_trip_ns_no_capture": "DOUBLE",
    "round_trip_ns": "DOUBLE",
    "cpu_model": "VARCHAR",  # the machine the run was made on (pcieperf.capture.machine)
    "cpus": "INTEGER",
    "kernel": "VARCHAR",
    # what the machine gave the run while it captured (capture.verdicts.starved)
    "run_queue_threads": "DOUBLE",
    "capture_wait_ns": "DOUBLE",
    "capture_wait_share": "DOUBLE",
    "starved": "VARCHAR",
    "device": "VARCHAR",  # a real port's PCI address or interface (None: net_null, pcap)
    "queue": "INTEGER",  # the one queue copied (None: all)
    "capture_filter": "VARCHAR",  # the tool's BPF filter (None: none)
}
"""The columns of a stored capture run (`capture runs`) and their SQL types, after its id and
start time; a store made by an earlier version gains those added since when next used."""
TEXTS = ("commands", "outputs")  # kept, not listed: the run's command lines and what they printed
LISTED = ("run_id", "started", *(c for c in RUN_COLUMNS if c not in TEXTS))
"""The columns of a run as `runs_of` lists it."""


def add_run(store: Store, row: dict[str, Any]) -> int:
    """Store one capture run (a row of RUN_COLUMNS) in one transaction; returns its run id."""
    store.numbered_table(TABLE, RUN_COLUMNS)
    return store.add_numbered(TABLE, {name: row[name] for name in RUN_COLUMNS})


def runs_of(store: Store, run_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Stored capture runs (all, or those of `run_ids`: one line naming any not stored),
    oldest first, without their command lines and outputs."""
    store.numbered_table(TABLE, RUN_COLUMNS)
    rows = store.numbered(TABLE, run_ids, hidden=TEXTS)
    missing = sorted(set(run_ids or ()) - {r["run_id"] for r in rows})
    if missing:
        raise UsageError(
            f"no capture run {', '.join(map(str, missing))} in {store.path}; see "
            "`pcieperf capture runs`"
        )
    return rows


def read_runs(
    run_ids: list[int] | None = None, db: str | os.PathLike[str] | None = None
) -> list[dict[str, Any]]:
    """`runs_of` the store `db` (None: the user's)."""
    with open_store(db) as store:
        return runs_of(store, run_ids)

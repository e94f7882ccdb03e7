"""The measured-data store's tables (`pcieperf.measure.store`): what each holds, and the
statements that make them in a new store and bring an older one up to date."""

from __future__ import annotations

from pcieperf.pciebench.bench import COLUMNS, INTEGER_COLUMNS, STORE_NAMES, TEXT_COLUMNS


def _sql_type(csv_name: str) -> str:
    if csv_name in TEXT_COLUMNS:
        return "VARCHAR"
    return "BIGINT" if csv_name in INTEGER_COLUMNS else "DOUBLE"


CAPTURE_RUN_COLUMNS = {
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
}
"""The columns of a stored capture run (`capture runs`) and their SQL types, after its id and
start time (pcieperf.capture.records builds the rows)."""


def schema() -> list[str]:
    """The statements that make every table of the store (a no-op for those it has), and add
    to an older store the columns added since."""
    capture_columns = ", ".join(f"{k} {v}" for k, v in CAPTURE_RUN_COLUMNS.items())
    tables = [
        "CREATE TABLE IF NOT EXISTS systems (system VARCHAR PRIMARY KEY, card VARCHAR, "
        "arch VARCHAR, cpu VARCHAR, machine VARCHAR, numa_device INTEGER, numa_memory INTEGER, "
        "numa_cpu INTEGER, iommu VARCHAR, source VARCHAR, imported_at TIMESTAMP)",
        "CREATE TABLE IF NOT EXISTS host_facts (system VARCHAR, name VARCHAR, text VARCHAR)",
        "CREATE TABLE IF NOT EXISTS counter_imports (import_id INTEGER PRIMARY KEY, "
        "file VARCHAR, source VARCHAR, samples BIGINT, imported_at TIMESTAMP)",
        "CREATE TABLE IF NOT EXISTS counter_samples (import_id INTEGER, t_s DOUBLE, "
        "wall_time TIMESTAMP, source VARCHAR, socket INTEGER, stack VARCHAR, part VARCHAR, "
        "metric VARCHAR, value DOUBLE, unit VARCHAR)",
        # an import's samples until one transaction moves them (`Store.import_counters`)
        "CREATE TABLE IF NOT EXISTS counter_staging AS FROM counter_samples LIMIT 0",
        "CREATE TABLE IF NOT EXISTS dpdk_runs (run_id INTEGER PRIMARY KEY, started TIMESTAMP, "
        "mode VARCHAR, source VARCHAR, extra_args VARCHAR, seconds DOUBLE, wall_s DOUBLE, "
        "interrupted BOOLEAN, version VARCHAR, command VARCHAR, rx_pps DOUBLE, tx_pps DOUBLE, "
        "pkt_bytes DOUBLE, output VARCHAR)",
        "CREATE TABLE IF NOT EXISTS dpdk_run_ports (run_id INTEGER, port INTEGER, "
        "rx_packets BIGINT, tx_packets BIGINT, rx_pps DOUBLE, tx_pps DOUBLE, "
        "rx_bursts BIGINT, rx_burst_shares VARCHAR)",
        "CREATE TABLE IF NOT EXISTS dpdk_run_bursts (run_id INTEGER, burst INTEGER, calls DOUBLE)",
        "CREATE TABLE IF NOT EXISTS capture_runs (run_id INTEGER PRIMARY KEY, "
        f"started TIMESTAMP, {capture_columns})",
        # a store made by an earlier version gains the columns added since (null there)
        *(
            f"ALTER TABLE capture_runs ADD COLUMN IF NOT EXISTS {name} {kind}"
            for name, kind in CAPTURE_RUN_COLUMNS.items()
        ),
    ]
    for kind, columns in COLUMNS.items():
        cols = ", ".join(f"{STORE_NAMES[c]} {_sql_type(c)}" for c in columns)
        extra = ", section INTEGER" if kind == "cdf" else ""
        tables.append(
            f"CREATE TABLE IF NOT EXISTS {kind} (system VARCHAR, file VARCHAR, {cols}{extra})"
        )
    return tables

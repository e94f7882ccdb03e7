"""The measured-data store's tables (`pcieperf.measure.store`): what each holds, and the
statements that make them in a new store and bring an older one up to date. A package above
the store keeps its own table's columns and asks the store to make it
(`Store.numbered_table`: capture runs, pcieperf.capture.stored)."""

from __future__ import annotations

from pcieperf.measure.counters.samples import BYTES_PER_S
from pcieperf.pciebench.bench import COLUMNS, INTEGER_COLUMNS, STORE_NAMES, TEXT_COLUMNS


def _sql_type(csv_name: str) -> str:
    if csv_name in TEXT_COLUMNS:
        return "VARCHAR"
    return "BIGINT" if csv_name in INTEGER_COLUMNS else "DOUBLE"


def insert_stacks(where: str = "") -> str:
    """The statement that adds to `counter_stacks` the (socket, stack) pairs of the samples
    `where` selects, and whether each carried traffic (a B/s sample other than 0)."""
    moving = f"bool_or(unit = '{BYTES_PER_S}' AND value <> 0)"
    return (
        f"INSERT INTO counter_stacks SELECT import_id, socket, stack, {moving} "
        f"FROM counter_samples {where} GROUP BY ALL"
    )


def schema(columns: set[tuple[str, str]]) -> list[str]:
    """The statements that bring a store whose tables have `columns` ((table, column) pairs)
    up to date: the tables it lacks, and the columns added since to one it has (none for a
    store made by this version: opening it runs no statement)."""
    tables = {
        "systems": "(system VARCHAR PRIMARY KEY, card VARCHAR, "
        "arch VARCHAR, cpu VARCHAR, machine VARCHAR, numa_device INTEGER, numa_memory INTEGER, "
        "numa_cpu INTEGER, iommu VARCHAR, source VARCHAR, imported_at TIMESTAMP)",
        "host_facts": "(system VARCHAR, name VARCHAR, text VARCHAR)",
        "counter_imports": "(import_id INTEGER PRIMARY KEY, "
        "file VARCHAR, source VARCHAR, samples BIGINT, imported_at TIMESTAMP)",
        "counter_samples": "(import_id INTEGER, t_s DOUBLE, "
        "wall_time TIMESTAMP, source VARCHAR, socket INTEGER, stack VARCHAR, part VARCHAR, "
        "metric VARCHAR, value DOUBLE, unit VARCHAR)",
        # an import's samples until one transaction moves them (`Store.import_counters`)
        "counter_staging": "AS FROM counter_samples LIMIT 0",
        # each import's (socket, stack) pairs, and whether one carried traffic (a B/s sample
        # other than 0): `explain` picks its stack here, not in a scan of every sample
        "counter_stacks": "(import_id INTEGER, socket INTEGER, stack VARCHAR, moving BOOLEAN)",
        "dpdk_runs": "(run_id INTEGER PRIMARY KEY, started TIMESTAMP, "
        "mode VARCHAR, source VARCHAR, extra_args VARCHAR, seconds DOUBLE, wall_s DOUBLE, "
        "interrupted BOOLEAN, version VARCHAR, command VARCHAR, rx_pps DOUBLE, tx_pps DOUBLE, "
        "pkt_bytes DOUBLE, output VARCHAR)",
        "dpdk_run_ports": "(run_id INTEGER, port INTEGER, "
        "rx_packets BIGINT, tx_packets BIGINT, rx_pps DOUBLE, tx_pps DOUBLE, "
        "rx_bursts BIGINT, rx_burst_shares VARCHAR)",
        "dpdk_run_bursts": "(run_id INTEGER, burst INTEGER, calls DOUBLE)",
    }
    for kind, names in COLUMNS.items():
        cols = ", ".join(f"{STORE_NAMES[c]} {_sql_type(c)}" for c in names)
        extra = ", section INTEGER" if kind == "cdf" else ""
        tables[kind] = f"(system VARCHAR, file VARCHAR, {cols}{extra})"
    have = {table for table, _ in columns}
    statements = [f"CREATE TABLE {name} {how}" for name, how in tables.items() if name not in have]
    if "counter_samples" in have and "counter_stacks" not in have:  # an earlier version's
        statements.append(insert_stacks())
    return statements

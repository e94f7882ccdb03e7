"""The store's tables made once: a new store gets every table, an older one the columns added
since, and a current one runs no statement when opened (it was 50 per `explain`); a table whose
columns a package above the store owns (capture runs) is made and extended the same way."""

import duckdb

from pcieperf.capture.stored import RUN_COLUMNS, TABLE, add_run, runs_of
from pcieperf.measure.store import Store
from pcieperf.measure.store_schema import schema


def _columns(path):
    con = duckdb.connect(str(path))
    try:
        query = "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'"
        return set(con.execute(query).fetchall())
    finally:
        con.close()


def test_a_new_store_has_every_table_and_opening_it_again_changes_nothing(tmp_path):
    Store(tmp_path / "s.duckdb").close()
    made = _columns(tmp_path / "s.duckdb")
    assert {"systems", "counter_samples", "counter_staging", "dpdk_runs"} <= {t for t, _ in made}
    assert schema(made) == []
    Store(tmp_path / "s.duckdb").close()
    assert _columns(tmp_path / "s.duckdb") == made


def test_an_older_stores_capture_runs_gain_the_columns_added_since(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE capture_runs (run_id INTEGER PRIMARY KEY, started TIMESTAMP)")
    con.execute("INSERT INTO capture_runs VALUES (1, now())")
    con.close()
    with Store(path) as store:
        (old,) = runs_of(store)
    capture = {c for t, c in _columns(path) if t == TABLE}
    assert capture == {"run_id", "started", *RUN_COLUMNS}
    assert (old["run_id"], old["dpdk_version"]) == (1, None)


def test_a_table_its_caller_owns_is_made_once_and_numbered(tmp_path):
    path = tmp_path / "s.duckdb"
    row = dict.fromkeys(RUN_COLUMNS) | {"tool": "dumpcap", "frame_bytes": 64.0}
    with Store(path) as store:
        assert [add_run(store, row), add_run(store, row)] == [1, 2]
    made = _columns(path)
    assert {c for t, c in made if t == TABLE} == {"run_id", "started", *RUN_COLUMNS}
    with Store(path) as store:
        (second,) = runs_of(store, [2])
    assert _columns(path) == made
    assert (second["tool"], second["frame_bytes"]) == ("dumpcap", 64.0)
    assert "commands" not in second  # kept, not listed


def test_an_older_stores_counter_stacks_are_filled_from_its_samples(tmp_path):
    # A store made before `counter_stacks` existed lists its imports' stacks from then on, as
    # a scan of its samples would (explain picks its stack from this table).
    path = tmp_path / "old.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    rows = [(1, 0, "IIO Stack 1", "B/s", 5.0), (1, 0, "IIO Stack 2", "B/s", 0.0)]
    for import_id, socket, stack, unit, value in rows:
        con.execute(
            "INSERT INTO counter_samples (import_id, socket, stack, unit, value) "
            "VALUES (?, ?, ?, ?, ?)",
            [import_id, socket, stack, unit, value],
        )
    con.execute("DROP TABLE counter_stacks")
    con.close()
    with Store(path) as store:
        found = store.con.execute(
            "SELECT stack, moving FROM counter_stacks ORDER BY stack"
        ).fetchall()
    assert found == [("IIO Stack 1", True), ("IIO Stack 2", False)]

"""The measured-data store: pcie-bench results and host facts in an embedded DuckDB file.

Default location: `<user data dir>/pcieperf/pcieperf.duckdb`; `PCIEPERF_DB` or an explicit path
overrides it. Imports are all-or-nothing: every file is parsed and checked before the store is
touched, and the rows go in within one transaction (a counter file is parsed within it, a chunk
of samples at a time, and nothing of it stays if it fails).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import platformdirs
from numpy.typing import NDArray

from pcieperf.errors import UsageError, param, require_choice
from pcieperf.measure.counters.samples import Samples, Sink
from pcieperf.measure.stacks import Series, StackCounters, stack_key
from pcieperf.measure.store_lock import connect
from pcieperf.measure.store_schema import insert_stacks, schema
from pcieperf.pciebench.bench import COLUMNS, Kind, ParsedDir, canonical_test, parse_result_dir
from pcieperf.progress import wrap as with_progress

if TYPE_CHECKING:
    import pandas

    from pcieperf.dpdk.testpmd import RunResult, StoredRun

__all__ = ["open"]  # `pp.store`: the notebook's view; the CLI and records use `Store` by name


def __dir__() -> list[str]:
    """dir() and tab completion show the API (`__all__`), not the helpers imported here."""
    return list(__all__)


def default_db_path() -> Path:
    """Where the store lives unless told otherwise."""
    env = os.environ.get("PCIEPERF_DB")
    return Path(env) if env else platformdirs.user_data_path("pcieperf") / "pcieperf.duckdb"


IMPORT_MEMORY_LIMIT = "32MB"
"""DuckDB's buffer pool while a counter file is imported: each chunk is written as it commits,
so the pool need not keep it (with DuckDB's default, 80 % of RAM, a 200 MB file's import
peaked ~60 MB higher)."""


class Store:
    """A DuckDB file of imported measurements."""

    def __init__(self, path: Path | None = None, *, create: bool = True) -> None:
        """Open the store file; without `create`, a missing file reads as an empty store and is
        not made (a query must not leave a file behind)."""
        self.path = path or default_db_path()
        missing = not self.path.exists()
        if create and path is not None and not self.path.absolute().parent.is_dir():
            # a folder the user named is never made (the default one, the user data dir, is)
            raise UsageError(
                f"cannot open the store {self.path}: folder {self.path.absolute().parent} "
                "does not exist"
            )
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.con = connect(":memory:" if missing and not create else self.path)
        except (duckdb.Error, OSError) as exc:
            reason = str(exc).splitlines()[0]
            raise UsageError(f"cannot open the store {self.path}: {reason}") from None
        query = "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'"
        for statement in schema(set(self.con.execute(query).fetchall())):
            self.con.execute(statement)

    def close(self) -> None:
        """Close the database file."""
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------

    def import_dirs(self, dirs: list[Path], force: bool = False) -> list[ParsedDir]:
        """Import result directories all-or-nothing; existing systems need `force`."""
        return self.import_parsed([parse_result_dir(d) for d in dirs], force)

    def import_parsed(self, parsed: list[ParsedDir], force: bool = False) -> list[ParsedDir]:
        """Import already parsed result directories all-or-nothing (see import_dirs)."""
        names = [p.info.name for p in parsed]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise UsageError(f"system {sorted(duplicates)[0]!r} is given twice")
        existing = set(self.system_names()) & set(names)
        if existing and not force:
            raise UsageError(
                f"system {sorted(existing)[0]!r} is already in {self.path}; pass "
                f"{param('force')} to replace it"
            )
        with self._transaction():
            for p in with_progress(parsed, "storing", "system"):
                self._delete(p.info.name)
                self._insert(p)
        return parsed

    def _delete(self, system: str) -> None:
        for table in ("systems", "host_facts", *COLUMNS):
            self.con.execute(f"DELETE FROM {table} WHERE system = ?", [system])

    def _insert(self, p: ParsedDir) -> None:
        i = p.info
        self.con.execute(
            "INSERT INTO systems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
            [
                i.name,
                i.card,
                i.arch,
                i.cpu,
                i.machine,
                i.numa_device,
                i.numa_memory,
                i.numa_cpu,
                i.iommu,
                str(p.source.resolve()),
            ],
        )
        for name, text in p.facts.items():
            self.con.execute("INSERT INTO host_facts VALUES (?, ?, ?)", [i.name, name, text])
        for table in p.tables:
            columns = {
                "system": np.full(table.rows, i.name),
                "file": np.full(table.rows, table.file),
            }
            columns |= table.columns
            self.con.register("incoming", columns)
            self.con.execute(f"INSERT INTO {table.kind} BY NAME SELECT * FROM incoming")
            self.con.unregister("incoming")

    def import_counters(
        self, path: Path, parse: Callable[[Sink], Samples], force: bool = False
    ) -> tuple[int, Samples]:
        """Store one counter file all or nothing in bounded memory (`parse(sink)` hands `sink`
        its samples chunk by chunk); returns the import id and what `parse` returned. Chunks
        are committed to `counter_staging` (one transaction over them all grew ~60 B a sample)
        and moved by one INSERT ... SELECT in the transaction that replaces an earlier import
        (`force`); a killed import's staged rows are dropped by the next."""
        file = os.path.realpath(path)  # Path.resolve raises RuntimeError on a link loop
        old = self.con.execute(
            "SELECT import_id FROM counter_imports WHERE file = ?", [file]
        ).fetchall()
        if old and not force:
            raise UsageError(f"{path} is already imported; pass {param('force')} to replace it")
        self.con.execute(f"SET memory_limit = '{IMPORT_MEMORY_LIMIT}'")
        self._empty_staging()
        try:
            samples = parse(self._stage_samples)
        except BaseException:
            with suppress(duckdb.Error):  # its own error (a full disk) is the one to tell
                self._empty_staging()
            raise
        with self._transaction():
            for (import_id,) in old:
                self._delete_counter_import(import_id)
            ((new_id,),) = self.con.execute(
                "SELECT coalesce(max(import_id), 0) + 1 FROM counter_imports"
            ).fetchall()
            self.con.execute(
                "INSERT INTO counter_imports VALUES (?, ?, ?, ?, now())",
                [new_id, file, samples.source, len(samples)],
            )
            self.con.execute(
                "INSERT INTO counter_samples SELECT ?, * EXCLUDE (import_id) FROM counter_staging",
                [new_id],
            )
            self.con.execute(insert_stacks("WHERE import_id = ?"), [new_id])
            self.con.execute("DELETE FROM counter_staging")
        return int(new_id), samples

    def _empty_staging(self) -> None:
        with self._transaction():
            self.con.execute("DELETE FROM counter_staging")

    def _stage_samples(self, chunk: Samples) -> None:
        """The samples `chunk` holds, committed to `counter_staging`."""
        n = len(chunk.value)
        # Object arrays: DuckDB scans them ~30x faster than fixed-width unicode (bench_counters)
        columns = {
            "t_s": np.asarray(chunk.t_s, dtype=np.float64),
            "wall_time": np.array(chunk.wall, dtype=object),
            "source": np.full(n, chunk.source, dtype=object),
            "socket": np.array([-1 if s is None else s for s in chunk.socket], dtype=np.int64),
            "stack": np.array(chunk.stack, dtype=object),
            "part": np.array(chunk.part, dtype=object),
            "metric": np.array(chunk.metric, dtype=object),
            "value": np.asarray(chunk.value, dtype=np.float64),
            "unit": np.array(chunk.unit, dtype=object),
        }
        self.con.register("incoming", columns)
        with self._transaction():
            self.con.execute(
                "INSERT INTO counter_staging SELECT NULL, t_s, wall_time, source, "
                "NULLIF(socket, -1), stack, part, metric, value, unit FROM incoming"
            )
        self.con.unregister("incoming")

    def counter_imports(self) -> list[dict[str, Any]]:
        """Imported counter files with their sample counts and metrics."""
        return self._records(
            self.con.execute(
                "SELECT i.import_id, i.file, i.source, i.samples, i.imported_at, "
                "string_agg(DISTINCT s.metric, ',' ORDER BY s.metric) AS metrics "
                "FROM counter_imports i LEFT JOIN counter_samples s USING (import_id) "
                "GROUP BY ALL ORDER BY i.import_id"
            )
        )

    def counter_summary(self, import_id: int) -> list[dict[str, Any]]:
        """Per socket, stack, part and metric of one import: samples, mean, min and max."""
        self._require_counter_import(import_id)
        return self._records(
            self.con.execute(
                "SELECT socket, stack, part, metric, unit, count(*) AS samples, "
                "avg(value) AS mean, min(value) AS min, max(value) AS max FROM counter_samples "
                "WHERE import_id = ? GROUP BY ALL ORDER BY socket, stack, part, metric",
                [import_id],
            )
        )

    def remove_counter_import(self, import_id: int) -> None:
        """Delete one import and its samples, in one transaction."""
        self._require_counter_import(import_id)
        with self._transaction():
            self._delete_counter_import(import_id)

    def _delete_counter_import(self, import_id: int) -> None:
        """Delete an import's samples, stacks and entry (in the caller's transaction)."""
        for table in ("counter_samples", "counter_stacks", "counter_imports"):
            self.con.execute(f"DELETE FROM {table} WHERE import_id = ?", [import_id])

    def _require_counter_import(self, import_id: int) -> tuple[str, str]:
        """The import's file and source (none: one line naming `counters ls`)."""
        query = "SELECT file, source FROM counter_imports WHERE import_id = ?"
        if (found := self.con.execute(query, [import_id]).fetchone()) is None:
            raise UsageError(
                f"no counter import {import_id} in {self.path}; `pcieperf counters ls` lists them"
            )
        return found

    def stack_counters(
        self, import_id: int, stack: tuple[int | None, str], file: str | None = None
    ) -> StackCounters:
        """One (socket, stack)'s counters of an import, each metric summed over the stack's
        parts at each sample time, in time order: what explain and iommu fit read of a counter
        file, whatever its size (the samples stay here; a metric's sums are read at a time).
        `file` names the counters where not the file imported (a temporary import's)."""
        stored, source = self._require_counter_import(import_id)
        where = "import_id = ? AND socket IS NOT DISTINCT FROM ? AND stack = ?"
        units = self.con.execute(
            f"SELECT metric, any_value(unit) FROM counter_samples WHERE {where} "
            "GROUP BY metric ORDER BY metric",
            [import_id, *stack],
        ).fetchall()
        series = {}
        for metric, unit in units:
            sums = self.con.execute(
                f"SELECT t_s, sum(value) AS value FROM counter_samples WHERE {where} "
                "AND metric = ? GROUP BY t_s ORDER BY t_s",
                [import_id, *stack, metric],
            ).fetchnumpy()
            t_s, value = (np.asarray(sums[k], dtype=np.float64) for k in ("t_s", "value"))
            series[metric] = Series(metric, unit, t_s, value)
        return StackCounters(file or stored, source, stack_key(*stack), series)

    def counter_stacks(
        self, import_id: int, *, traffic: bool = False
    ) -> tuple[str, list[tuple[int | None, str]]]:
        """One import's file and its (socket, stack) pairs; with `traffic`, only those with a
        non-zero B/s sample (`explain` picks a stack by them, and asks only where it must)."""
        file, _ = self._require_counter_import(import_id)
        moving = " AND moving" if traffic else ""
        query = f"SELECT socket, stack FROM counter_stacks WHERE import_id = ?{moving}"
        return file, self.con.execute(query, [import_id]).fetchall()

    def add_dpdk_run(self, run: RunResult) -> int:
        """Store one testpmd run (its ports, merged burst histogram and output) in one
        transaction; returns its run id."""
        cfg = run.config
        with self._transaction():
            (run_id,) = self._one("SELECT coalesce(max(run_id), 0) + 1 FROM dpdk_runs")
            self.con.execute(
                "INSERT INTO dpdk_runs VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    cfg.mode,
                    str(cfg.pcap.resolve()) if cfg.pcap else f"net_null size={cfg.null_size}",
                    " ".join(cfg.extra_args),
                    cfg.seconds,
                    run.wall_s,
                    run.interrupted,
                    run.version,
                    " ".join(run.command),
                    run.rx_pps,
                    run.tx_pps,
                    run.pkt_bytes,
                    run.output,
                ],
            )
            for p in run.ports:
                line = p.rx_bursts
                self.con.execute(
                    "INSERT INTO dpdk_run_ports VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run_id,
                        p.port,
                        p.rx_packets,
                        p.tx_packets,
                        p.rx_pps,
                        p.tx_pps,
                        line.total if line else None,
                        " + ".join(
                            f"{pct}% of " + ("other" if size is None else f"{size} pkts")
                            for size, pct in line.shares
                        )
                        if line
                        else None,
                    ],
                )
            self.con.executemany(
                "INSERT INTO dpdk_run_bursts VALUES (?, ?, ?)",
                [[run_id, size, calls] for size, calls in run.batch_hist.items()],
            )
        return int(run_id)

    def dpdk_runs(self) -> list[dict[str, Any]]:
        """Stored testpmd runs, oldest first."""
        return self._records(
            self.con.execute(
                "SELECT run_id, started, mode, source, extra_args, wall_s, interrupted, version, "
                "rx_pps, pkt_bytes FROM dpdk_runs ORDER BY run_id"
            )
        )

    def dpdk_run(self, run_id: int) -> StoredRun:
        """One stored run, ready for the forwarding model."""
        from pcieperf.dpdk.testpmd import StoredRun  # the runner: only where a run is read

        row: tuple[str, str, str, float, float] | None = self.con.execute(
            "SELECT mode, source, version, rx_pps, pkt_bytes FROM dpdk_runs WHERE run_id = ?",
            [run_id],
        ).fetchone()
        if row is None:
            raise UsageError(f"no DPDK run {run_id} in {self.path}; see `pcieperf dpdk runs`")
        hist = self.con.execute(
            "SELECT burst, calls FROM dpdk_run_bursts WHERE run_id = ? ORDER BY burst", [run_id]
        ).fetchall()
        return StoredRun(run_id, *row, batch_hist=dict(hist))

    def numbered_table(self, name: str, columns: Mapping[str, str]) -> None:
        """Make table `name` of numbered rows (`run_id`, `started`, then `columns`: name -> SQL
        type, as its caller owns them) if the store lacks it, or give one an earlier version
        made the columns added since; nothing to do for a current one."""
        query = "SELECT column_name FROM duckdb_columns() WHERE table_name = ?"
        have = {c for (c,) in self.con.execute(query, [name]).fetchall()}
        if not have:
            declared = ", ".join(f"{k} {v}" for k, v in columns.items())
            self.con.execute(
                f"CREATE TABLE {name} (run_id INTEGER PRIMARY KEY, started TIMESTAMP, {declared})"
            )
            return
        for column, kind in columns.items():
            if column not in have:
                self.con.execute(f"ALTER TABLE {name} ADD COLUMN {column} {kind}")

    def add_numbered(self, name: str, row: Mapping[str, Any]) -> int:
        """Add `row` (its columns by name) to the numbered table `name` in one transaction, as
        the next run id, started now; returns that id."""
        names = list(row)
        with self._transaction():
            (run_id,) = self._one(f"SELECT coalesce(max(run_id), 0) + 1 FROM {name}")
            self.con.execute(
                f"INSERT INTO {name} (run_id, started, {', '.join(names)}) "
                f"VALUES (?, now(), {', '.join('?' * len(names))})",
                [run_id, *row.values()],
            )
        return int(run_id)

    def numbered(
        self, name: str, run_ids: list[int] | None = None, hidden: tuple[str, ...] = ()
    ) -> list[dict[str, Any]]:
        """The rows of the numbered table `name` (all, or those of `run_ids` that it has),
        oldest first, without the columns `hidden`."""
        where = f"WHERE run_id IN ({', '.join('?' * len(run_ids))})" if run_ids else ""
        exclude = f"EXCLUDE ({', '.join(hidden)})" if hidden else ""
        return self._records(
            self.con.execute(
                f"SELECT * {exclude} FROM {name} {where} ORDER BY run_id", run_ids or []
            )
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """All of the block's writes, or none of them."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException as exc:
            # the failed write may have ended the transaction; its own error is the one to tell
            with suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            if isinstance(exc, duckdb.IOException):  # a full disk, a read-only folder
                reason = str(exc).splitlines()[0]
                raise UsageError(f"cannot write the store {self.path}: {reason}") from None
            raise

    def _one(self, query: str, params: list[object] | None = None) -> tuple[Any, ...]:
        """The row of a query that has exactly one (an aggregate, or a row checked to exist)."""
        (row,) = self.con.execute(query, params).fetchall()
        return row

    @staticmethod
    def _records(rel: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
        """The rows of a query as dicts keyed by column name."""
        names = [d[0] for d in rel.description]
        return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]

    # -- reading -----------------------------------------------------------------------------

    def system_names(self) -> list[str]:
        """Imported system names, sorted."""
        return [
            r[0] for r in self.con.execute("SELECT system FROM systems ORDER BY system").fetchall()
        ]

    def systems(self) -> list[dict[str, Any]]:
        """One dict per system with its metadata and row counts."""
        return self._records(
            self.con.execute(
                "SELECT s.*, (SELECT count(*) FROM bw WHERE bw.system = s.system) AS bw_rows, "
                "(SELECT count(*) FROM lat WHERE lat.system = s.system) AS lat_rows "
                "FROM systems s ORDER BY s.system"
            )
        )

    def resolve(self, name: str) -> str:
        """A system by exact name, else by unique suffix, else by unique substring."""
        names = self.system_names()
        if name in names:
            return name
        for matches in ([n for n in names if n.endswith(name)], [n for n in names if name in n]):
            if len(matches) == 1:
                return matches[0]
        if not matches:
            raise UsageError(f"no system matches {name!r} in {self.path}; see `pcieperf data ls`")
        raise UsageError(
            f"{name!r} matches {len(matches)} systems ({matches[0]}, "
            f"{matches[1]}, ...); give more of the name"
        )

    def rows(
        self, kind: Kind, system: str, test: str | None = None, file: str | None = None
    ) -> dict[str, NDArray[Any]]:
        """Columns of `kind` rows of a system, optionally of one test and/or one file."""
        query = f"SELECT * FROM {kind} WHERE system = ?"
        params: list[object] = [self.resolve(system)]
        if test is not None:
            query += " AND test = ?"
            params.append(canonical_test(test))
        if file is not None:
            query += " AND file = ?"
            params.append(file)
        rel = self.con.execute(query + " ORDER BY rowid", params)
        names = [d[0] for d in rel.description]
        data = rel.fetchnumpy()
        return {n: np.asarray(data[n]) for n in names}

    def host_facts(self, system: str) -> dict[str, str]:
        """The sys-*.txt texts of a system by name (cpuinfo, lspci, ...)."""
        rows = self.con.execute(
            "SELECT name, text FROM host_facts WHERE system = ?", [self.resolve(system)]
        ).fetchall()
        return dict(rows)


class StoreFrames:
    """The store read as DataFrames (`pp.store.open(path)`), for a notebook: each call opens
    the file, queries it and closes it again, so no lock is held between cells."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else default_db_path()

    def _frame(self, query: str, params: list[object] | None = None) -> pandas.DataFrame:
        """One query's rows as a DataFrame (a missing store reads as empty)."""
        with Store(self.path, create=False) as store:
            return store.con.execute(query, params or []).df()

    def runs(self) -> pandas.DataFrame:
        """The testpmd runs (`dpdk runs`), one row each, oldest first."""
        return self._frame("SELECT * EXCLUDE (output) FROM dpdk_runs ORDER BY run_id")

    def counters(self) -> pandas.DataFrame:
        """Every imported counter sample, one row each with its import's file, in file order."""
        return self._frame(
            "SELECT s.import_id, i.file, s.t_s, s.wall_time, s.source, s.socket, s.stack, "
            "s.part, s.metric, s.value, s.unit FROM counter_samples s "
            "JOIN counter_imports i USING (import_id) ORDER BY s.import_id, s.rowid"
        )

    def pciebench(self, system: str | None = None, kind: Kind = "bw") -> pandas.DataFrame:
        """pcie-bench results of `kind` (bw, lat or cdf) of one system (a unique part of its
        name, as `data show` takes it) or of all, one row per measurement."""
        require_choice("pcie-bench result kind", kind, tuple(COLUMNS))
        if system is None:
            return self._frame(f"SELECT * FROM {kind} ORDER BY system, rowid")
        with Store(self.path, create=False) as store:
            name = store.resolve(system)
        return self._frame(f"SELECT * FROM {kind} WHERE system = ? ORDER BY rowid", [name])

    def systems(self) -> pandas.DataFrame:
        """The imported systems (`data ls`) with their row counts."""
        with Store(self.path, create=False) as store:
            rows = store.systems()
        import pandas

        return pandas.DataFrame(rows)


def open(path: str | os.PathLike[str] | None = None) -> StoreFrames:
    """The store at `path` (default: the user's, or $PCIEPERF_DB) as DataFrames."""
    return StoreFrames(path)

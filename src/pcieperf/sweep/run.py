"""Running a plan: parts written as chunks finish into OUT.parts/ (one Parquet file per chunk
and a manifest naming the spec), a lock so that one sweep writes them, resume from the parts a
stopped run left, and the join of the parts, in chunk order, into OUT (docs/scale.md)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import __version__, engine, outputs
from pcieperf.errors import UsageError, param, require_new_file
from pcieperf.sweep.plan import Plan, evaluate_chunk

if TYPE_CHECKING:  # pyarrow comes with the optional `dask` extra
    import pyarrow as pa
    from distributed import Client

ROW_GROUP_ROWS = 1 << 16
"""Parts are joined into row groups of at least this many rows (held in memory: some MB): a
row group per small part (a few `iommu sim` points) cost the join a millisecond each."""
MANIFEST = "manifest.json"
PARTS_FORMAT = "pcieperf sweep parts 1"


def parts_dir(output: Path) -> Path:
    """Where the parts of `output` wait until the sweep finishes."""
    return output.with_name(output.name + ".parts")


def check_output(output: Path, force: bool) -> None:
    """Refuse, before any work, an output that cannot be written or would overwrite a file
    without `force`, and a parts folder that is not a sweep's."""
    require_new_file(output, force)
    if output.suffix != ".parquet":
        raise UsageError(f"sweep output {output} must end in .parquet (it is a Parquet file)")
    parts = parts_dir(output)
    if parts.is_dir():
        with _owned(parts):  # refuses at once while another sweep holds it
            pass
    if parts.exists() and not (parts / MANIFEST).is_file():
        raise UsageError(f"{parts} exists and is not a pcieperf sweep's parts folder; move it")


@contextmanager
def _owned(parts: Path) -> Iterator[None]:
    """The parts folder, made if missing and locked for this run (flock on the folder): a
    second sweep to the same output refuses at once instead of mixing its parts in."""
    parts.mkdir(exist_ok=True)
    fd = os.open(parts, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"another sweep is writing {parts}; wait for it or give another {param('output')}"
            ) from None
        yield
    finally:
        os.close(fd)


def _done_parts(plan: Plan, parts: Path, force: bool) -> set[int]:
    """Chunks already written by an earlier run of the same spec (none in a new parts
    folder; those of another spec are discarded with `force`, else refused)."""
    manifest = parts / MANIFEST
    if manifest.is_file():
        try:
            found = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = {}
        if found.get("fingerprint") == plan.fingerprint:
            return _readable_parts(parts)
        if not force:
            raise UsageError(
                f"{parts} holds the parts of another sweep (a different spec or pcieperf "
                f"version); pass {param('force')} to discard them"
            )
        for old in parts.iterdir():
            old.unlink()
    text = json.dumps(
        {"format": PARTS_FORMAT, "fingerprint": plan.fingerprint, "spec": plan.spec.as_dict()},
        indent=2,
    )
    outputs.write_text(manifest, text, force=True)
    return set()


def _part(parts: Path, index: int) -> Path:
    return parts / f"part-{index:08d}.parquet"


def write_part(parts: Path, index: int, table: pa.Table) -> None:
    """Store one finished chunk, not waiting for the disk (an fsync a part cost a 50-point
    `iommu sim` sweep a sixth of its time): a resumed sweep redoes a part a crash cut."""
    import pyarrow.parquet as pq

    write = partial(pq.write_table, table)
    outputs.write_with(_part(parts, index), True, write, durable=False)


def _readable_parts(parts: Path) -> set[int]:
    """The chunks whose part is a whole Parquet file; an unreadable one is removed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = set()
    for part in parts.glob("part-*.parquet"):
        try:
            pq.read_metadata(part)
            done.add(int(part.stem.removeprefix("part-")))
        except (OSError, pa.ArrowInvalid):
            part.unlink()
    return done


def finalize(plan: Plan, parts: Path, output: Path, force: bool) -> tuple[int, list[str]]:
    """Join the parts in chunk order into `output` (one schema for all: a column missing in
    a part is null there); returns rows and column names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [_part(parts, i) for i in range(plan.chunks)]
    schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
    meta = {"pcieperf.sweep": json.dumps({**plan.spec.as_dict(), "version": __version__})}
    schema = schema.with_metadata(meta)
    rows = 0

    def write(tmp: Path) -> None:
        nonlocal rows
        with pq.ParquetWriter(tmp, schema) as writer:
            waiting: list[pa.Table] = []  # small parts, written as one row group
            waiting_rows = 0
            for f in files:
                table = pq.ParquetFile(f).read()  # one file: no dataset discovery (half the time)
                waiting.append(_conformed(table, schema))
                rows += table.num_rows
                waiting_rows += table.num_rows
                if waiting_rows >= ROW_GROUP_ROWS:
                    writer.write_table(pa.concat_tables(waiting))
                    waiting, waiting_rows = [], 0
            if waiting:
                writer.write_table(pa.concat_tables(waiting))

    outputs.write_with(output, force, write)
    return rows, schema.names


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with the columns and types of `schema` (a column it lacks is null)."""
    import pyarrow as pa

    if table.schema.equals(schema):  # most parts: no column to add or cast
        return table.replace_schema_metadata(schema.metadata)
    columns = [
        pa.nulls(table.num_rows, field.type)
        if field.name not in table.column_names
        else table[field.name]
        if table.schema.field(field.name).type == field.type
        else table[field.name].cast(field.type)
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def run(
    plan: Plan,
    output: Path,
    client: Client,
    *,
    force: bool,
    write: Callable[[Path, int, pa.Table], None] = write_part,
    label: str = "sweeping",
) -> dict[str, object]:
    """Evaluate every chunk not already in `output`'s parts folder on `client`, then write
    `output`; returns a summary. `write` stores one finished chunk (write_part); `label` is
    the progress bar's (the CLI puts the estimate there)."""
    started = time.perf_counter()
    check_output(output, force)
    parts = parts_dir(output)
    with _owned(parts):
        return _run_owned(plan, output, parts, client, force, write, started, label)


def _run_owned(
    plan: Plan,
    output: Path,
    parts: Path,
    client: Client,
    force: bool,
    write: Callable[[Path, int, pa.Table], None],
    started: float,
    label: str,
) -> dict[str, object]:
    """`run` with the parts folder locked by this run."""
    done = _done_parts(plan, parts, force)
    todo = [plan.bounds(i) for i in range(plan.chunks) if i not in done]
    finished = engine.map_chunks(
        client,
        evaluate_chunk,
        todo,
        shared=plan,
        weight=lambda b: b[2] - b[1],
        desc=label,
        unit="point",
        done=plan.points - sum(b[2] - b[1] for b in todo),
        total=plan.points,
    )
    with closing(finished):  # a failed write cancels what runs while the client is open
        for result in finished:
            write(parts, result.chunk[0], result.result)
    rows, columns = finalize(plan, parts, output, force)
    shutil.rmtree(parts)
    return {
        "output": str(output),
        "command": plan.spec.command,
        "points": plan.points,
        "rows": rows,
        "columns": columns,
        "chunk": plan.spec.chunk,
        "chunks": plan.chunks,
        "chunks_evaluated": len(todo),
        "chunks_resumed": len(done),
        "workers": len(client.nthreads()),
        "seconds": time.perf_counter() - started,
    }

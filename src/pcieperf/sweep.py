"""Design-space sweeps: every combination of declared option values of `nic`, `dma`,
`iommu sim` or `bench sim`, evaluated in chunks on Dask and written to one Parquet file
(docs/scale.md).

A spec (TOML) names the command, its fixed options and its axes, each with the option names of
the command line:

    command = "nic"
    chunk = 4096                      # points per task (optional)
    [options]
    profile = "dpdk"
    [axes]
    gen = [3, 4, 5]
    sizes = { from = 64, to = 1518 }  # or a list: [64, 128, "imix"]

Points are the axes' product in the order declared, the last axis fastest. Every value goes
through the command's own parser, so names, defaults and checks are the command line's; the
evaluation calls the command's functions (the CLI hands them in: no module imports the CLI).
Consecutive points that differ only in `sizes` are evaluated in one call.

Output: parts are written as chunks finish into OUT.parts/ (one Parquet file per chunk and a
manifest naming the spec), then joined in chunk order into OUT; a run that stopped resumes from
the parts it left.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import itertools
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeGuard

import numpy as np

from pcieperf import __version__, engine, outputs
from pcieperf._config import load_toml
from pcieperf.errors import UsageError, param, require_new_file

if TYPE_CHECKING:  # pyarrow comes with the optional `dask` extra
    import pyarrow as pa
    from distributed import Client

Columns = Mapping[str, Sequence[object]]
"""What a command's evaluation returns: equally long columns, one row per result."""

Scalar = bool | int | float | str
MAX_AXIS_VALUES = 10**7
MAX_POINTS = 10**12
MAX_CHUNKS = 10**7  # parts on disk and tasks in the scheduler's history: beyond, raise `chunk`
MAX_CHUNK = 10**8
ROW_GROUP_ROWS = 1 << 16
"""Parts are joined into row groups of at least this many rows (held in memory: some MB): a
row group per small part (a few `iommu sim` points) cost the join a millisecond each."""
MANIFEST = "manifest.json"
PARTS_FORMAT = "pcieperf sweep parts 1"
VECTOR = "sizes"
"""The option whose values one call takes many of (comma-separated), where a command allows."""
_SPEC_KEYS = {"command", "chunk", "options", "axes"}
_NEVER = {"help", "output_format", "quiet"}  # output switches (--format, --json), not parameters


@dataclass(frozen=True)
class Spec:
    """A sweep as declared: command, fixed options and axes (names as on the command line,
    values as given), points per chunk."""

    path: str
    command: str
    options: dict[str, Scalar]
    axes: dict[str, list[Scalar]]
    chunk: int

    @property
    def points(self) -> int:
        """How many combinations the axes make."""
        return math.prod(len(v) for v in self.axes.values())

    def as_dict(self) -> dict[str, object]:
        """The spec as JSON-ready data (kept in the manifest and the Parquet metadata)."""
        return {
            "command": self.command,
            "chunk": self.chunk,
            "options": self.options,
            "axes": self.axes,
            "points": self.points,
        }


def load_spec(path: Path, commands: Collection[str], default_chunk: Mapping[str, int]) -> Spec:
    """Read and check a spec file; `commands` are the sweepable ones, `default_chunk` their
    points per chunk where the spec gives none."""
    where = f"spec {path}"
    raw = load_toml(path, where)
    _reject_unknown(where, raw, _SPEC_KEYS)
    command = raw.get("command")
    if not isinstance(command, str) or command not in commands:
        shown = ", ".join(repr(c) for c in commands)
        raise UsageError(f"{where}: command {command!r} is not allowed; choose one of {shown}")
    options = raw.get("options", {})
    axes = raw.get("axes")
    if not isinstance(options, dict) or not isinstance(axes, dict) or not axes:
        raise UsageError(f"{where}: [options] must be a table and [axes] a non-empty table")
    for name, value in options.items():
        _scalar(f"{where}: options.{name}", value)
    values = {name: _axis_values(f"{where}: axes.{name}", v) for name, v in axes.items()}
    both = sorted(set(options) & set(values))
    if both:
        raise UsageError(f"{where}: {', '.join(both)} is both a fixed option and an axis")
    chunk = raw.get("chunk", default_chunk[command])
    if type(chunk) is not int or not 1 <= chunk <= MAX_CHUNK:
        raise UsageError(f"{where}: chunk {chunk!r} is not allowed; use 1 to {MAX_CHUNK}")
    spec = Spec(str(path), command, options, values, chunk)
    if spec.points > MAX_POINTS or math.ceil(spec.points / chunk) > MAX_CHUNKS:
        raise UsageError(
            f"{where}: {spec.points:,} points in chunks of {chunk} is too many; at most "
            f"{MAX_POINTS:,} points and {MAX_CHUNKS:,} chunks"
        )
    return spec


def _reject_unknown(where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UsageError(
            f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}"
        )


def _scalar(where: str, value: object) -> Scalar:
    """`value` if it is a number, string or boolean (what a command-line option can take)."""
    if isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise UsageError(f"{where} = {value!r} is not allowed; give a number, string or boolean")


def _whole(value: object) -> TypeGuard[int]:
    """Whether `value` is an int (not a bool, not a float)."""
    return type(value) is int


def _axis_values(where: str, raw: object) -> list[Scalar]:
    """An axis's values: a non-empty list of scalars, or {from, to, step} whole numbers (to
    included). Mixed kinds become one: numbers as floats, anything else as strings."""
    if isinstance(raw, dict):
        _reject_unknown(where, raw, {"from", "to", "step"})
        low, high, step = raw.get("from"), raw.get("to"), raw.get("step", 1)
        if not (_whole(low) and _whole(high) and _whole(step)) or step < 1 or high < low:
            raise UsageError(
                f"{where} = {raw!r} is not allowed; give whole numbers from <= to, step >= 1"
            )
        values: list[Scalar] = list(range(low, high + 1, step)[: MAX_AXIS_VALUES + 1])
    elif isinstance(raw, list) and raw:
        values = [_scalar(f"{where}[{i}]", v) for i, v in enumerate(raw)]
    else:
        raise UsageError(f"{where} = {raw!r} is not allowed; give a non-empty list or a range")
    if len(values) > MAX_AXIS_VALUES:
        raise UsageError(f"{where}: more than {MAX_AXIS_VALUES:,} values")
    kinds = {type(v) for v in values}
    if len(kinds) > 1:
        numbers = kinds <= {int, float}
        values = [float(v) if numbers else str(v) for v in values]
    return values


# ---------------------------------------------------------------------------------------------
# From spec to plan: the command's parser turns names and values into its options


@dataclass(frozen=True)
class Axis:
    """One axis: its option's name in the namespace (`dest`, also the column name), the values
    as given (the column) and as the parser made them (what the evaluation sees)."""

    dest: str
    given: list[Scalar]
    parsed: list[object]


@dataclass(frozen=True)
class Plan:
    """Everything a worker needs to evaluate any chunk: sent to each worker once."""

    spec: Spec
    evaluate: Callable[[argparse.Namespace], Columns]
    base: dict[str, object]
    axes: tuple[Axis, ...]
    vector: int | None  # the axis evaluated many values per call, if any
    fingerprint: str

    @property
    def points(self) -> int:
        """Points in the grid."""
        return self.spec.points

    @property
    def chunks(self) -> int:
        """Chunks the grid is cut into."""
        return math.ceil(self.points / self.spec.chunk)

    def bounds(self, index: int) -> tuple[int, int, int]:
        """Chunk `index` as (index, first point, end point)."""
        start = index * self.spec.chunk
        return index, start, min(start + self.spec.chunk, self.points)


def plan(
    spec: Spec,
    parser: argparse.ArgumentParser,
    evaluate: Callable[[argparse.Namespace], Columns],
    *,
    excluded: Collection[str] = (),
    files: Collection[str] = (),
    vector_ok: Callable[[argparse.Namespace], bool] = lambda _: True,
) -> Plan:
    """Check every option and axis value with the command's `parser` (a copy used only here:
    its error() is replaced) and build the plan. `excluded` are options that are no parameter
    (a trace to replay, a plot): a spec cannot set them, the evaluation sees their defaults;
    `files` are options naming a .toml file, made absolute so that workers started in another
    folder read the same file; `vector_ok(options)` says whether `sizes` may be joined into one
    call given the other options (asked of the fixed options and of each axis value)."""
    actions = _sweepable_actions(spec, parser, excluded)
    base_argv = [a for n, v in spec.options.items() for a in _argv(actions, spec, n, v)]
    base = _parse(parser, base_argv, f"spec {spec.path}: options")
    axes, joinable = [], vector_ok(base)
    for name, values in spec.axes.items():
        dest = actions[_flag(name)].dest
        where = f"spec {spec.path}: axes.{name}"
        spaces = [
            _parse(parser, [*base_argv, *_argv(actions, spec, name, v)], f"{where} = {v!r}")
            for v in values
        ]
        joinable = joinable and all(vector_ok(ns) for ns in spaces)
        parsed = [getattr(ns, dest) for ns in spaces]
        axes.append(Axis(dest, values, [_absolute(v) if dest in files else v for v in parsed]))
    keep = {a.dest for a in parser._actions} - _NEVER  # an excluded option at its default
    base_values = {k: _absolute(v) if k in files else v for k, v in vars(base).items() if k in keep}
    vector = next((i for i, a in enumerate(axes) if a.dest == VECTOR), None)
    joinable = joinable and vector is not None
    return Plan(
        spec,
        evaluate,
        base_values,
        tuple(axes),
        vector if vector is not None and joinable and _single(axes[vector]) else None,
        _fingerprint(spec),
    )


def _single(axis: Axis) -> bool:
    """Whether each value of the sizes axis is one size (a list of them cannot be joined)."""
    return all("," not in str(v) for v in axis.parsed)


def _absolute(value: object) -> object:
    """A relative path to a .toml file as an absolute one; anything else (a built-in profile's
    name) as it is."""
    if isinstance(value, str) and value.endswith(".toml"):
        return str(Path(value).absolute())
    return value


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _sweepable_actions(
    spec: Spec, parser: argparse.ArgumentParser, excluded: Collection[str]
) -> dict[str, argparse.Action]:
    """The parser's options by flag, less output switches and `excluded`; an unknown or
    excluded name in the spec is refused here."""
    actions = {
        flag: a
        for a in parser._actions
        for flag in a.option_strings
        if flag.startswith("--") and a.dest not in _NEVER | set(excluded)
    }
    for name in [*spec.options, *spec.axes]:
        if _flag(name) not in actions or name.startswith("no-"):
            allowed = sorted({a.dest for a in actions.values()})
            raise UsageError(
                f"spec {spec.path}: {name!r} is not a sweepable option of `{spec.command}`; "
                f"choose from {', '.join(allowed)}"
            )
    return actions


def _argv(actions: dict[str, argparse.Action], spec: Spec, name: str, value: Scalar) -> list[str]:
    """The command-line words that give option `name` the value `value`."""
    flag = _flag(name)
    action = actions[flag]
    if action.nargs == 0:  # a switch: true or false only
        if type(value) is not bool:
            raise UsageError(f"spec {spec.path}: {name} = {value!r} is not allowed; use true/false")
        if isinstance(action, argparse.BooleanOptionalAction):
            return [flag if value else "--no-" + flag.removeprefix("--")]
        return [flag] if value else []
    if type(value) is bool:
        raise UsageError(f"spec {spec.path}: {name} = {value!r} is not allowed; give a value")
    return [f"{flag}={value}"]  # one word: a value starting with "-" is not an option


def _parse(parser: argparse.ArgumentParser, argv: list[str], where: str) -> argparse.Namespace:
    """Parse `argv` with the command's parser; its complaints become one UsageError naming
    `where` in the spec."""

    def refuse(message: str) -> NoReturn:
        raise UsageError(f"{where}: {message}")

    parser.error = refuse  # type: ignore[method-assign]  # the sweep's own parser copy
    return parser.parse_args(argv)


def _fingerprint(spec: Spec) -> str:
    """What identifies a sweep's parts: the spec and the pcieperf version that computed them."""
    text = json.dumps({**spec.as_dict(), "version": __version__}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Evaluating one chunk (on a worker)


def axis_strides(plan: Plan) -> np.ndarray:
    """Points from one value of each axis to its next (the last axis fastest)."""
    sizes = np.array([len(a.given) for a in plan.axes], dtype=np.int64)
    return np.cumprod(np.r_[sizes[1:], 1][::-1])[::-1]


def axis_indices(plan: Plan, start: int, stop: int) -> np.ndarray:
    """The value index of each axis for points start..stop-1: shape (points, axes)."""
    sizes = np.array([len(a.given) for a in plan.axes], dtype=np.int64)
    points = np.arange(start, stop, dtype=np.int64)
    return (points[:, None] // axis_strides(plan)[None, :]) % sizes[None, :]


def call_groups(plan: Plan, idx: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive points evaluated in one call: with a vector axis, those that differ
    only in it; without, every point alone."""
    if plan.vector is None:
        return [(i, i + 1) for i in range(len(idx))]
    others = np.delete(idx, plan.vector, axis=1)
    cuts = np.flatnonzero(np.any(others[1:] != others[:-1], axis=1)) + 1
    edges = [0, *cuts.tolist(), len(idx)]
    return list(itertools.pairwise(edges))


def point_namespace(plan: Plan, idx: np.ndarray) -> argparse.Namespace:
    """The options of the points `idx` (one row per point; several only on the vector axis,
    whose values are joined as the command line joins sizes)."""
    values = dict(plan.base)
    for j, axis in enumerate(plan.axes):
        if j == plan.vector:
            values[axis.dest] = ",".join(str(axis.parsed[i]) for i in idx[:, j])
        else:
            values[axis.dest] = axis.parsed[idx[0, j]]
    return argparse.Namespace(**values)


def describe_point(plan: Plan, row: np.ndarray) -> str:
    """The axis values of point `row`: `dest=value, ...`."""
    return ", ".join(f"{a.dest}={a.given[i]!r}" for a, i in zip(plan.axes, row, strict=True))


def evaluate_chunk(plan: Plan, bounds: tuple[int, int, int]) -> pa.Table:
    """Evaluate points bounds[1]..bounds[2]-1: the axis columns (values as given) and the
    command's result columns, one row per result, in point order."""
    import pyarrow as pa

    _, start, stop = bounds
    idx = axis_indices(plan, start, stop)
    tables, rows_per_point = [], np.zeros(len(idx), dtype=np.int64)
    for first, end in call_groups(plan, idx):
        try:
            table = pa.table(dict(plan.evaluate(point_namespace(plan, idx[first:end]))))
        except UsageError as exc:
            point = describe_point(plan, idx[first])
            raise UsageError(f"sweep point {point}: {exc}") from None
        per_point, extra = divmod(table.num_rows, end - first)
        if extra:
            raise AssertionError(f"{table.num_rows} rows for {end - first} points")
        rows_per_point[first:end] = per_point
        tables.append(table)
    results = pa.concat_tables(tables, promote_options="permissive")
    repeat = np.repeat(idx, rows_per_point, axis=0)
    names = [a.dest for a in plan.axes]
    columns: dict[str, Any] = {  # pyarrow's stubs know no list of mixed scalars
        a.dest: pa.array(list[Any](a.given)).take(pa.array(repeat[:, j]))
        for j, a in enumerate(plan.axes)
    }
    columns |= {n: results[n] for n in results.column_names if n not in names}
    return pa.table(columns)


# ---------------------------------------------------------------------------------------------
# Running a plan: parts, resume, the final file


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
                f"another sweep is writing {parts}; wait for it or give another -o"
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


def _finalize(plan: Plan, parts: Path, output: Path, force: bool) -> tuple[int, list[str]]:
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
    rows, columns = _finalize(plan, parts, output, force)
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

"""From a spec to a plan: every name checked against the command's API keywords, every value
against what a keyword takes (a switch true or false), the grid's points as index digits, the
runs of points one call evaluates, and the evaluation of one chunk (on a worker).

Points are the axes' product in the order declared, the last axis fastest. Consecutive points
that differ only in `sizes` are evaluated in one call, where the command allows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pcieperf import __version__
from pcieperf.errors import UsageError

if TYPE_CHECKING:  # pyarrow comes with the optional `dask` extra
    import pyarrow as pa

    from pcieperf.sweep.commands import Command, Evaluate, Options, Parameter
    from pcieperf.sweep.spec import Scalar, Spec

VECTOR = "sizes"
"""The keyword whose values one call takes many of (comma-separated), where a command allows."""


@dataclass(frozen=True)
class Axis:
    """One axis: its keyword (`dest`, also the column name), the values as given (the column)
    and as the evaluation gets them (a relative .toml path made absolute, a whole number for a
    float keyword a float)."""

    dest: str
    given: list[Scalar]
    values: list[object]


@dataclass(frozen=True)
class Plan:
    """Everything a worker needs to evaluate any chunk: sent to each worker once. `base` holds
    every keyword at its fixed value or default."""

    spec: Spec
    evaluate: Evaluate
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


def plan(spec: Spec, command: Command, evaluate: Evaluate | None = None) -> Plan:
    """Check every name and value of `spec` against `command`'s keywords and build the plan:
    an unknown or excluded name, a switch given anything but true/false, a value given to a
    switch-less keyword as a boolean, or a keyword without default left out is one UsageError;
    the rest is checked by the command (`check`). Points are evaluated by `evaluate` (the
    command's own unless another is given: tests, benchmarks)."""
    parameters = command.parameters
    keyword = {name: _keyword(spec, parameters, name) for name in [*spec.options, *spec.axes]}
    both = sorted({keyword[n] for n in spec.options} & {keyword[n] for n in spec.axes})
    if both:
        raise UsageError(f"{spec.where}: {', '.join(both)} is both a fixed option and an axis")
    missing = [n for n, p in parameters.items() if p.required and n not in keyword.values()]
    if missing:
        raise UsageError(
            f"{spec.where}: `{spec.command}` needs {', '.join(missing)} (it has no default)"
        )

    def value(name: str, given: Scalar) -> object:
        dest = keyword[name]
        _check_switch(spec, parameters[dest], name, given)
        if parameters[dest].real and type(given) is int:
            return float(given)
        return _absolute(given) if dest in command.files else given

    base = {name: p.default for name, p in parameters.items()}
    base |= {keyword[n]: value(n, v) for n, v in spec.options.items()}
    axes = tuple(
        Axis(keyword[n], values, [value(n, v) for v in values]) for n, values in spec.axes.items()
    )
    joinable = command.joinable(base) and all(
        command.joinable({**base, a.dest: v}) for a in axes for v in a.values
    )
    vector = next((i for i, a in enumerate(axes) if a.dest == VECTOR), None)
    joined = vector is not None and joinable and _single(axes[vector])
    return Plan(
        spec,
        evaluate or command.evaluation,
        base,
        axes,
        vector if joined else None,
        _fingerprint(spec),
    )


def _keyword(spec: Spec, parameters: dict[str, Parameter], name: str) -> str:
    """The keyword a spec's name sets (`rx-free-thresh` is `rx_free_thresh`); an unknown or
    excluded name is refused with the names allowed."""
    dest = name.replace("-", "_")
    if dest not in parameters:
        raise UsageError(
            f"{spec.where}: {name!r} is not a sweepable option of `{spec.command}`; "
            f"choose from {', '.join(sorted(parameters))}"
        )
    return dest


def _check_switch(spec: Spec, parameter: Parameter, name: str, value: Scalar) -> None:
    """A switch takes true or false only; any other keyword takes no boolean."""
    if parameter.switch and type(value) is not bool:
        raise UsageError(f"{spec.where}: {name} = {value!r} is not allowed; use true/false")
    if not parameter.switch and type(value) is bool:
        raise UsageError(f"{spec.where}: {name} = {value!r} is not allowed; give a value")


def _single(axis: Axis) -> bool:
    """Whether each value of the sizes axis is one size (a list of them cannot be joined)."""
    return all("," not in str(v) for v in axis.values)


def _absolute(value: Scalar) -> Scalar:
    """A relative path to a .toml file as an absolute one, so that workers started in another
    folder read the same file; anything else (a built-in profile's name) as it is."""
    if isinstance(value, str) and value.endswith(".toml"):
        return str(Path(value).absolute())
    return value


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


def point_options(plan: Plan, idx: np.ndarray) -> Options:
    """The options of the points `idx` (one row per point; several only on the vector axis,
    whose values are joined as the command line joins sizes: `64,65`)."""
    values = dict(plan.base)
    for j, axis in enumerate(plan.axes):
        if j == plan.vector:
            values[axis.dest] = ",".join(str(axis.values[i]) for i in idx[:, j])
        else:
            values[axis.dest] = axis.values[idx[0, j]]
    return values


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
            table = pa.table(dict(plan.evaluate(point_options(plan, idx[first:end]))))
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

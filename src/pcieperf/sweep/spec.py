"""A sweep's spec: the command, its fixed options and its axes, named as the command's API
function's keyword arguments, from a TOML file or a mapping with the same keys (docs/scale.md).

    command = "nic"
    chunk = 4096                      # points per task (optional)
    [options]
    profile = "dpdk"
    [axes]
    gen = [3, 4, 5]
    sizes = { from = 64, to = 1518 }  # or a list: [64, 128, "imix"]
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from pcieperf._config import load_toml
from pcieperf.errors import UsageError

Scalar = bool | int | float | str
SpecSource = str | os.PathLike[str] | Mapping[str, object]
"""A spec: the path of a TOML file, or a mapping with the file's keys."""
MAX_AXIS_VALUES = 10**7
MAX_POINTS = 10**12
MAX_CHUNKS = 10**7  # parts on disk and tasks in the scheduler's history: beyond, raise `chunk`
MAX_CHUNK = 10**8
MAPPING = "<mapping>"
"""What a spec given as a mapping is called where messages name the spec's file."""
_SPEC_KEYS = {"command", "chunk", "options", "axes"}


@dataclass(frozen=True)
class Spec:
    """A sweep as declared: command, fixed options and axes (names as given: the API's keyword
    names, `_` or `-`; values as given), points per chunk. `path` is the file, or MAPPING."""

    path: str
    command: str
    options: dict[str, Scalar]
    axes: dict[str, list[Scalar]]
    chunk: int

    @property
    def where(self) -> str:
        """How messages name the spec: `spec FILE` (or `spec <mapping>`)."""
        return f"spec {self.path}"

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


def load_spec(
    source: SpecSource, commands: Collection[str], default_chunk: Mapping[str, int]
) -> Spec:
    """Read and check a spec (a TOML file's path, or a mapping with its keys); `commands` are
    the sweepable ones, `default_chunk` their points per chunk where the spec gives none."""
    if isinstance(source, Mapping):
        path, raw = MAPPING, dict(source)
    else:
        path = str(source)
        raw = load_toml(Path(source), f"spec {path}")
    where = f"spec {path}"
    _reject_unknown(where, raw, _SPEC_KEYS)
    command = raw.get("command")
    if not isinstance(command, str) or command not in commands:
        shown = ", ".join(repr(c) for c in commands)
        raise UsageError(f"{where}: command {command!r} is not allowed; choose one of {shown}")
    options = raw.get("options", {})
    axes = raw.get("axes")
    if not isinstance(options, Mapping) or not isinstance(axes, Mapping) or not axes:
        raise UsageError(f"{where}: [options] must be a table and [axes] a non-empty table")
    fixed = {name: _scalar(f"{where}: options.{name}", v) for name, v in options.items()}
    values = {name: _axis_values(f"{where}: axes.{name}", v) for name, v in axes.items()}
    both = sorted(set(fixed) & set(values))
    if both:
        raise UsageError(f"{where}: {', '.join(both)} is both a fixed option and an axis")
    chunk = raw.get("chunk", default_chunk[command])
    if type(chunk) is not int or not 1 <= chunk <= MAX_CHUNK:
        raise UsageError(f"{where}: chunk {chunk!r} is not allowed; use 1 to {MAX_CHUNK}")
    spec = Spec(path, command, fixed, values, chunk)
    if spec.points > MAX_POINTS or math.ceil(spec.points / chunk) > MAX_CHUNKS:
        raise UsageError(
            f"{where}: {spec.points:,} points in chunks of {chunk} is too many; at most "
            f"{MAX_POINTS:,} points and {MAX_CHUNKS:,} chunks"
        )
    return spec


def _reject_unknown(where: str, table: Mapping[str, object], allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UsageError(
            f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}"
        )


def _scalar(where: str, value: object) -> Scalar:
    """`value` if it is a number, string or boolean (what a TOML value of an option can be)."""
    if isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise UsageError(f"{where} = {value!r} is not allowed; give a number, string or boolean")


def _whole(value: object) -> TypeGuard[int]:
    """Whether `value` is an int (not a bool, not a float)."""
    return type(value) is int


def _axis_values(where: str, raw: object) -> list[Scalar]:
    """An axis's values: a non-empty list (or tuple) of scalars, or {from, to, step} whole
    numbers (to included). Mixed kinds become one: numbers as floats, anything else as
    strings."""
    if isinstance(raw, Mapping):
        _reject_unknown(where, raw, {"from", "to", "step"})
        low, high, step = raw.get("from"), raw.get("to"), raw.get("step", 1)
        if not (_whole(low) and _whole(high) and _whole(step)) or step < 1 or high < low:
            raise UsageError(
                f"{where} = {raw!r} is not allowed; give whole numbers from <= to, step >= 1"
            )
        values: list[Scalar] = list(range(low, high + 1, step)[: MAX_AXIS_VALUES + 1])
    elif isinstance(raw, list | tuple) and raw:
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

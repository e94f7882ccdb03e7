"""Every point of a sweep checked before any work (issue 28): the options of each point, as the
evaluation would get them, go through the API function's own checks without its model,
so a bad point anywhere in the grid fails in one line before the first chunk, not after many
chunks (and again on every resume); and what the whole grid will take (`estimate`), refused
when it cannot fit on disk or runs over an hour of CPU unconfirmed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pcieperf.errors import UsageError, param
from pcieperf.sweep.plan import (
    Plan,
    axis_indices,
    axis_strides,
    call_groups,
    describe_point,
    evaluate_chunk,
    point_options,
)

if TYPE_CHECKING:
    from pcieperf.sweep.commands import Options

MAX_CHECKED_CALLS = 1 << 16
"""Configuration checks a sweep makes one by one, each point's (a run of sizes joined as in
one evaluation): 25 us each for `dma`, 10 us for `nic`, 2 ms for `iommu sim` (its
evaluation takes ~100x that); a larger grid has each axis value checked with the other
axes at their first values instead (every value a point takes, not every combination)."""
CHECK_BLOCK = 1 << 16  # points whose axis indices are computed at once


def check_points(plan: Plan, check: Callable[[Options], object]) -> None:
    """Run `check` (a command's options checked as it checks them, without its model) on the
    options of every point, as `evaluate_chunk` would call the evaluation, before any work:
    the first bad one is one UsageError naming the point, its values and what is allowed."""
    _check_all(plan, check)  # the points' profiles load once (`_config._tables`)


def _check_all(plan: Plan, check: Callable[[Options], object]) -> None:
    """`check_points` with the TOML files parsed once."""
    calls = plan.points // (1 if plan.vector is None else len(plan.axes[plan.vector].given))
    if calls <= MAX_CHECKED_CALLS:
        for start in range(0, plan.points, CHECK_BLOCK):
            idx = axis_indices(plan, start, min(start + CHECK_BLOCK, plan.points))
            for first, end in call_groups(plan, idx):
                _check_group(plan, check, idx[first:end], start + first)
        return
    strides = axis_strides(plan)
    for j, axis in enumerate(plan.axes):
        values = np.arange(len(axis.given))
        runs = [values] if j == plan.vector else [values[i : i + 1] for i in values]
        for run in runs:
            idx = np.zeros((len(run), len(plan.axes)), dtype=np.int64)
            idx[:, j] = run
            _check_group(plan, check, idx, int(run[0] * strides[j]), strides[j])


def _check_group(
    plan: Plan,
    check: Callable[[Options], object],
    idx: np.ndarray,
    first: int,
    step: int = 1,
) -> None:
    """Check the points `idx` (one call, as `point_options` joins them); point k of them is
    number `first + k * step` of the grid. A joined run that fails is checked point by point
    to name the first bad one."""
    try:
        check(point_options(plan, idx))
    except UsageError as exc:
        for k in range(len(idx) if len(idx) > 1 else 0):
            try:
                check(point_options(plan, idx[k : k + 1]))
            except UsageError as alone:
                raise _bad_point(plan, idx[k], first + k * step, alone) from None
        raise _bad_point(plan, idx[0], first, exc) from None


def _bad_point(plan: Plan, row: np.ndarray, index: int, exc: UsageError) -> UsageError:
    return UsageError(
        f"{plan.spec.where}: point {index:,} of {plan.points:,} "
        f"({describe_point(plan, row)}): {exc}"
    )


CONFIRM_CPU_S = 3600.0  # a sweep estimated above an hour of CPU starts only when confirmed (`yes`)


@dataclass(frozen=True)
class Estimate:
    """What a sweep will take, from its first point evaluated here: CPU seconds (one worker
    thread, the first point's own time per point: an upper bound, it pays the start-up) and
    bytes of results (Arrow's in-memory size: Parquet's compressed file is smaller)."""

    points: int
    cpu_s: float
    output_bytes: int


def estimate(plan: Plan) -> Estimate:
    """Evaluate the grid's first point here, so that options every point shares and that only
    the evaluation checks (a missing file, no sizes) fail before a cluster starts, and what the
    whole grid will cost from it."""
    started = time.process_time()
    table = evaluate_chunk(replace(plan, vector=None), (0, 0, 1))
    cpu_s = time.process_time() - started
    return Estimate(plan.points, cpu_s * plan.points, table.nbytes * plan.points)


def check_estimate(found: Estimate, output: Path, confirmed: bool) -> None:
    """Refuse a sweep whose results cannot fit beside `output`, and one estimated above
    CONFIRM_CPU_S unless `confirmed`: both before any chunk runs."""
    free = shutil.disk_usage(output.absolute().parent).free
    if found.output_bytes > free:
        raise UsageError(
            f"{found.points:,} points make about {found.output_bytes / 1e9:.3g} GB of results, "
            f"but {output.absolute().parent} has {free / 1e9:.3g} GB free; shrink the axes"
        )
    if found.cpu_s > CONFIRM_CPU_S and not confirmed:
        raise UsageError(
            f"{found.points:,} points take about {found.cpu_s / 3600:.3g} CPU hours (the first "
            f"point's time each); pass {param('yes')} to start it, or shrink the axes"
        )

"""`pp.sweep(spec, output)`: every combination of a spec's `nic`, `dma`, `iommu sim` or
`bench sim` keyword values, checked, estimated, evaluated in chunks on Dask and written to one
Parquet file (`pcieperf sweep` calls it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import engine
from pcieperf.results import Report
from pcieperf.sweep.check import check_estimate, check_points, estimate
from pcieperf.sweep.commands import COMMANDS
from pcieperf.sweep.plan import Plan, plan
from pcieperf.sweep.run import check_output, run
from pcieperf.sweep.spec import load_spec

if TYPE_CHECKING:
    from pcieperf.sweep.commands import Evaluate
    from pcieperf.sweep.spec import SpecSource


def checked_plan(spec: SpecSource, evaluate: Evaluate | None = None) -> Plan:
    """The plan of a spec (a TOML file's path or a mapping of its keys): its points, each
    checked by the command's API without its model, and the evaluation of one point (the
    command's, unless another is given: tests, benchmarks)."""
    loaded = load_spec(spec, COMMANDS, {name: c.chunk for name, c in COMMANDS.items()})
    command = COMMANDS[loaded.command]
    made = plan(loaded, command, evaluate)
    check_points(made, command.check)
    return made


def sweep(
    spec: SpecSource,
    output: str | os.PathLike[str],
    *,
    scheduler: str | None = None,
    force: bool = False,
    yes: bool = False,
    quiet_logs: bool = True,
) -> Report:
    """Evaluate every combination of options that `spec` declares (docs/scale.md) into the
    Parquet file `output`, on Dask (`scheduler`: None in this process, `local:N`, or a
    cluster's `tcp://` address); a run that stopped resumes from the chunks it wrote
    (OUTPUT.parts/). Every point is checked and the first evaluated before any work; a sweep
    estimated above an hour of CPU starts only with `yes`. Returns the run's summary."""
    chosen = engine.parse_scheduler(scheduler)
    engine.require_dask("a sweep")
    made = checked_plan(spec)
    out = Path(output)
    check_output(out, force)
    found = estimate(made)  # a spec that fails fails before a cluster starts
    check_estimate(found, out, yes)
    label = (
        f"sweeping {found.points:,} points (about {found.cpu_s:,.0f} CPU s, "
        f"{found.output_bytes / 1e6:,.0f} MB)"
    )
    gil_free = COMMANDS[made.spec.command].gil_free
    with engine.connect(chosen, quiet_logs=quiet_logs, gil_free=gil_free) as client:
        summary = {"scheduler": str(chosen), **run(made, out, client, force=force, label=label)}
    summary["estimate"] = {"cpu_s": found.cpu_s, "output_bytes": found.output_bytes}
    return Report(summary, _human(summary), confirms=True)


def _human(summary: dict[str, object]) -> str:
    """The summary's line for people."""
    resumed = f", {summary['chunks_resumed']} resumed" if summary["chunks_resumed"] else ""
    return (
        f"{summary['rows']:,} rows of {summary['points']:,} points -> {summary['output']} "
        f"({summary['chunks_evaluated']} chunks evaluated{resumed}, {summary['scheduler']}, "
        f"{summary['seconds']:.1f} s)"
    )

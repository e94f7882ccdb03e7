"""`pcieperf sweep`: a declared grid of `nic`, `dma`, `iommu sim` or `bench sim` points on
Dask, written to Parquet (`pp.sweep`, pcieperf.sweep)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _add_scheduler_option
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.sweep.api import sweep


def cmd_sweep(args: argparse.Namespace) -> None:
    """Evaluate every combination of `nic`, `dma`, `iommu sim` or `bench sim` options that a
    spec declares, in chunks on Dask, into one Parquet file (pandas, DuckDB). A run that
    stopped resumes from the chunks it wrote (OUT.parts/)."""
    result = sweep(
        args.spec,
        args.output,
        scheduler=args.scheduler,
        force=args.force,
        yes=args.yes,
        quiet_logs=not args.debug,
    )
    emit(args, result)


def _add_sweep_command(sub: argparse._SubParsersAction) -> None:
    """The `sweep` command and its options."""
    p = _add_command(sub, "sweep", cmd_sweep)
    p.add_argument("spec", help="sweep spec (.toml): command, options, axes (docs/scale.md)")
    p.add_argument("-o", "--output", required=True, help="OUT.parquet")
    p.add_argument("--force", action="store_true", help="overwrite OUT, discard another's parts")
    p.add_argument(
        "--yes",
        action="store_true",
        help="start a sweep estimated above an hour of CPU (pcieperf.sweep.check.CONFIRM_CPU_S)",
    )
    _add_scheduler_option(p)

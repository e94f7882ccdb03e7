"""`bench predict` and `validate`: pcie-bench files predicted for a host and scored against
its measurements (pcieperf.pciebench)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _warn, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.errors import UsageError
from pcieperf.pciebench import api
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION

RENAMED = {"calibrate": "host", "profile": "calibration"}  # bench predict's old spellings


def _renamed(args: argparse.Namespace, old: str) -> str | None:
    """The value of an option `bench predict` renamed (issue 16: one vocabulary), given under
    its new name or, with a deprecation line, its old one."""
    new = RENAMED[old]
    value, old_value = getattr(args, new), getattr(args, old)
    if old_value is None:
        return value
    if value is not None:
        raise UsageError(f"--{old} is the old spelling of --{new}; give one of them")
    _warn(f"--{old} is now --{new}; the old spelling goes in the next release")
    return old_value


def cmd_bench_predict(args: argparse.Namespace) -> None:
    """Predict a host's bandwidth results from its latency files and host facts."""
    host = _renamed(args, "calibrate")
    if host is None:
        raise UsageError("bench predict needs --host DIR (the host's pcie-bench directory)")
    result = api.predict(
        host=host,
        out=args.out,
        calibration=_renamed(args, "profile") or DEFAULT_CALIBRATION,
        force=args.force,
        transactions=args.transactions,
        progress=lambda rows: progress.wrap(rows, "simulating", "row"),
    )
    emit(args, result)


def cmd_validate(args: argparse.Namespace) -> None:
    """Compare predicted with measured pcie-bench bandwidth results (MAPE, worst points)."""
    result = api.validate(
        measured=args.measured,
        predicted=args.predicted,
        worst=args.worst,
        points=args.points,
        force=args.force,
    )
    if args.plot:
        from pcieperf.pciebench.validate import Matched
        from pcieperf.report.plots import plot_validation

        matched = result.source_as(Matched)
        result = result.with_plot(plot_validation(matched, Path(args.plot), force=args.force))
    emit(args, result)


def _add_validate_command(sub: argparse._SubParsersAction) -> None:
    """The `validate` command and its options."""
    p = _add_command(sub, "validate", cmd_validate)
    p.add_argument("--measured", required=True, help="pcie-bench result directory")
    p.add_argument("--predicted", required=True, help="directory of predicted bw_*.csv files")
    p.add_argument("--worst", type=_whole(0), default=10, help="how many worst points to list")
    p.add_argument("--plot", default=None, help="measured vs predicted plot (.png or .svg)")
    p.add_argument(
        "--points",
        default=None,
        help="CSV of every point: measured, predicted, interval, how far beyond it (%%)",
    )
    p.add_argument("--force", action="store_true", help="overwrite existing plot/points files")

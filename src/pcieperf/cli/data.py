"""The `data` group: pcie-bench results in the store: import, list, show, plot."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pcieperf import progress
from pcieperf.cli._common import _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.measure import api


def cmd_data_import(args: argparse.Namespace) -> None:
    """Import pcie-bench result directories into the store (all or nothing)."""
    result = api.data_import(
        args.dirs,
        force=args.force,
        db=args.db,
        progress=lambda dirs: progress.wrap(dirs, "reading", "dir"),
    )
    emit(args, result)


def cmd_data_ls(args: argparse.Namespace) -> None:
    """List the systems in the store."""
    emit(args, api.data_ls(db=args.db))


def cmd_data_show(args: argparse.Namespace) -> None:
    """Show the measured rows of one system and test."""
    emit(args, api.data_show(args.system, test=args.test, file=args.file, db=args.db))


def cmd_data_plot(args: argparse.Namespace) -> None:
    """Plot measured data: bandwidth vs size, window or offset, or latency CDFs."""
    from pcieperf.report.api import data_plot  # matplotlib: only for this command

    result = data_plot(
        args.systems,
        view=args.view,
        size=args.size,
        direction=args.direction,
        output=args.output,
        force=args.force,
        db=args.db,
    )
    emit(args, result)


def _add_data_commands(sub: argparse._SubParsersAction) -> None:
    """The `data` group."""
    data_sub = _add_group(sub, "data", _GROUPS["data"])

    def data_command(
        name: str, func: Callable[[argparse.Namespace], None]
    ) -> argparse.ArgumentParser:
        return _add_command(data_sub, name, func, store=True)

    p = data_command("import", cmd_data_import)
    p.add_argument("dirs", nargs="+", help="pcie-bench result directories")
    p.add_argument("--force", action="store_true", help="replace systems already imported")
    data_command("ls", cmd_data_ls)
    p = data_command("show", cmd_data_show)
    p.add_argument("system", help="system name or a unique part of it")
    p.add_argument("--test", required=True, help="e.g. BW_RD, BW_DMA_WR, LAT_RD")
    p.add_argument("--file", default=None, help="only rows from this result file")
    p = data_command("plot", cmd_data_plot)
    p.add_argument("systems", nargs="*", help="systems to overlay (default: all)")
    p.add_argument("--view", choices=("size", "window", "offset", "cdf"), default="size")
    p.add_argument("--size", type=_whole(1), default=64, help="transfer size for window/offset/cdf")
    p.add_argument("--direction", choices=("rd", "wr"), default="rd")
    p.add_argument("-o", "--output", default="pcieperf-data.png", help="PNG or SVG file")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")

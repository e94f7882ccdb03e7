"""The `counters` group: counter files imported into the store and listed (pcieperf.measure.records:
`pp.import_counters`, `pp.counter_imports`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _whole, add_counter_file_options
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.measure import records


def cmd_counters_import(args: argparse.Namespace) -> None:
    """Import a pcm-iio (its -csv output or its table), perf iostat, perf stat or VTune file into
    the store (all or nothing)."""
    result = records.import_counters(
        args.file,
        format=args.format,
        delimiter=args.delimiter,
        interval=args.interval,
        lenient=args.lenient,
        force=args.force,
        db=args.db,
    )
    emit(args, result)


def cmd_counters_ls(args: argparse.Namespace) -> None:
    """List imported counter files."""
    emit(args, records.counter_imports(db=args.db))


def cmd_counters_show(args: argparse.Namespace) -> None:
    """One imported counter file, per stack and metric: samples, mean, min and max."""
    emit(args, records.counter_show(args.import_id, db=args.db))


def cmd_counters_rm(args: argparse.Namespace) -> None:
    """Delete one imported counter file and its samples from the store."""
    emit(args, records.counter_remove(args.import_id, db=args.db))


def _add_counters_commands(sub: argparse._SubParsersAction) -> None:
    """The `counters` group."""
    counters_sub = _add_group(sub, "counters", _GROUPS["counters"])
    p = _add_command(counters_sub, "import", cmd_counters_import, store=True)
    p.add_argument("file", help="a counter file")
    add_counter_file_options(p)
    p.add_argument("--force", action="store_true", help="replace an earlier import of the file")
    _add_command(counters_sub, "ls", cmd_counters_ls, store=True)
    for name, command in (("show", cmd_counters_show), ("rm", cmd_counters_rm)):
        p = _add_command(counters_sub, name, command, store=True)
        p.add_argument("import_id", type=_whole(1), help="the import's id (counters ls)")

"""The `counters` group: counter files imported into the store and listed (pcieperf.measure.records:
`pp.import_counters`, `pp.counter_imports`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _real, counters, records
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group


def cmd_counters_import(args: argparse.Namespace) -> None:
    """Import a pcm-iio, perf iostat, perf stat or VTune file into the store (all or nothing)."""
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


def _add_counters_commands(sub: argparse._SubParsersAction) -> None:
    """The `counters` group."""
    counters_sub = _add_group(sub, "counters", _GROUPS["counters"])
    p = _add_command(counters_sub, "import", cmd_counters_import, store=True)
    p.add_argument("file", help="a counter file")
    p.add_argument(
        "--counters-format",
        dest="format",
        default=None,
        choices=counters.SOURCES,
        help="its tool (default: detected)",
    )
    p.add_argument("--delimiter", default=None, help="field separator (default: detected)")
    p.add_argument(
        "--interval", type=_real(), default=None, help="perf iostat/stat without -I: run seconds"
    )
    p.add_argument("--lenient", action="store_true", help="skip unknown columns instead of failing")
    p.add_argument("--force", action="store_true", help="replace an earlier import of the file")
    _add_command(counters_sub, "ls", cmd_counters_ls, store=True)

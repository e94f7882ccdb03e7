"""The `counters` group: counter files imported into the store and listed (pcieperf.measure)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf.cli._common import _real, _store, counters
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.results import format_table


def cmd_counters_import(args: argparse.Namespace) -> None:
    """Import a pcm-iio, perf iostat, perf stat or VTune file into the store (all or nothing)."""
    samples = counters.parse(
        Path(args.file),
        args.format,
        lenient=args.lenient,
        delimiter=args.delimiter,
        interval_s=args.interval,
    )
    with _store(args, write=True) as store:
        import_id = store.import_counters(samples, force=args.force)
    out = {
        "import_id": import_id,
        "file": args.file,
        "source": samples.source,
        "samples": len(samples),
        "metrics": sorted(set(samples.metric)),
        "skipped_columns": samples.skipped_columns,
    }
    _emit(
        args,
        out,
        lambda: (
            f"import {import_id}: {len(samples)} samples of {', '.join(out['metrics'])} "
            f"from {args.file}"
            + (
                f" (skipped columns: {', '.join(samples.skipped_columns)})"
                if samples.skipped_columns
                else ""
            )
        ),
    )


def cmd_counters_ls(args: argparse.Namespace) -> None:
    """List imported counter files."""
    with _store(args) as store:
        rows = store.counter_imports()
    _emit(
        args,
        rows,
        lambda: format_table(
            ("id", "source", "samples", "file", "metrics"),
            [(r["import_id"], r["source"], r["samples"], r["file"], r["metrics"]) for r in rows],
        ),
    )


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

"""Printing results: a table for people, JSON, or CSV of the JSON's rows (`--format`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import cast

from pcieperf.results import Report, Result, csv_text, json_default
from pcieperf.text import fit_lines


def _emit(
    args: argparse.Namespace,
    payload: object,
    human: Callable[[], str],
    csv: Callable[[], str] | None = None,
) -> None:
    """Print the result as --format asks: the human table, JSON, or CSV of the JSON's rows
    (`csv`, where the result builds its own)."""
    if args.output_format == "json":
        print(json.dumps(payload, indent=2, default=json_default))
    elif args.output_format == "csv":
        print(csv() if csv else csv_text(payload), end="")
    else:
        print(fit_lines(human()))  # tables fit themselves; titles and notes are wrapped here


def emit(args: argparse.Namespace, result: Result) -> None:
    """Print an API result as --format asks (pcieperf.results): its text, JSON or CSV; under
    --quiet, no text that only confirms what was written (a capture, a plot, a sweep)."""
    if args.quiet and args.output_format == "table" and getattr(result, "confirms", False):
        return
    _emit(args, result.to_json(), result.to_text, result.to_csv)


def with_demand_plot(args: argparse.Namespace, result: Report) -> Report:
    """A capture's demand report (`nic --trace`, `dpdk-fwd --trace`) with its --plot drawn."""
    if not args.plot:
        return result
    from pathlib import Path  # here: the light commands print through this module

    from pcieperf.net.trace.bandwidth import Demand
    from pcieperf.report.plots import plot_trace_demand

    demand = result.source_as(Demand)  # what nic_trace and dpdk_fwd_trace return
    title = Path(cast("dict[str, str]", result.data)["trace"]).name
    return result.with_plot(plot_trace_demand(demand, Path(args.plot), title, force=args.force))

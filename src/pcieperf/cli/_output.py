"""Printing results: a table for people, JSON, or CSV of the JSON's rows (`--format`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from pcieperf.results import Result, csv_text, fit_lines, format_table, json_default

if TYPE_CHECKING:
    from pcieperf.net.trace.bandwidth import Demand
    from pcieperf.net.trace.files import Trace
    from pcieperf.pcie.link import Link


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
    """Print an API result as --format asks (pcieperf.results): its text, JSON or CSV."""
    _emit(args, result.to_json(), result.to_text, result.to_csv)


def _emit_trace_demand(
    args: argparse.Namespace,
    captured: Trace,
    found: Demand,
    extra: dict,
    link: Link,
    extra_text: str = "",
) -> None:
    """Report (and optionally plot) the PCIe bandwidth a trace needs per window."""
    from pathlib import Path  # here: the light commands print through this module

    out = {
        "trace": captured.path,
        "packets": captured.packets,
        "skipped": captured.skipped,
        "mean_frame_bytes": float(captured.frame_bytes().mean()),
        **extra,
        **found.summary(),
    }
    if args.plot:
        from pcieperf.report.plots import plot_trace_demand

        out["plot"] = str(
            plot_trace_demand(found, Path(args.plot), Path(captured.path).name, force=args.force)
        )

    def human() -> str:
        s = out
        return (
            f"{Path(captured.path).name}: {s['packets']} packets, mean frame "
            f"{s['mean_frame_bytes']:.1f} B, Gen{link.gen} x{link.lanes} carries "
            f"{s['capacity_gbps']:.2f} Gb/s per direction\n"
            f"{extra_text}"
            + format_table(
                ("direction", "mean Gb/s", f"peak Gb/s per {s['window_ns'] / 1e6:g} ms"),
                [
                    ("up (device to host)", s["mean_up_gbps"], s["peak_up_gbps"]),
                    ("down (host to device)", s["mean_down_gbps"], s["peak_down_gbps"]),
                ],
            )
            + f"\n{s['windows_over_capacity']} of {s['full_windows']} whole windows exceed the "
            "link"
            + (
                f"; the last {s['tail_ns'] / 1e6:g} ms: {s['tail_up_gbps']:.3f} up / "
                f"{s['tail_down_gbps']:.3f} down Gb/s"
                if s["tail_ns"]
                else ""
            )
            + (f"; plot: {s['plot']}" if "plot" in s else "")
        )

    _emit(args, out, human)

"""Printing results: a table for people, JSON, or CSV of the JSON's rows (`--format`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf.cli._common import trace

if TYPE_CHECKING:
    from pcieperf.pcie.link import Link


def _emit(args: argparse.Namespace, payload: object, human: Callable[[], str]) -> None:
    """Print the result as --format asks: the human table, JSON, or CSV of the JSON's rows."""
    if args.output_format == "json":
        print(json.dumps(payload, indent=2, default=_json_default))
    elif args.output_format == "csv":
        print(csv_text(payload), end="")
    else:
        print(human())


def json_rows(payload: object) -> list[dict]:
    """The rows a command's JSON holds, each flattened (`_flat`): a list is one row per item;
    an object holding a list of objects is one row per item of that list (the object's other
    fields repeated on each, as context); any other object is one row."""
    if isinstance(payload, list):
        return [_flat(item) for item in payload]
    if isinstance(payload, dict):
        lists = [k for k, v in payload.items() if _is_rows(v)]
        if len(lists) == 1:
            context = _flat({k: v for k, v in payload.items() if k != lists[0]})
            return [context | _flat(item, f"{lists[0]}.") for item in payload[lists[0]]]
    return [_flat(payload)]


def _is_rows(value: object) -> bool:
    """Whether a JSON value is a non-empty list of objects (a table's rows)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _flat(value: object, prefix: str = "") -> dict:
    """A JSON value as one row: nested objects become `a.b` columns; lists (and anything else
    not a scalar) are kept as their JSON text in one cell."""
    if not isinstance(value, dict):
        return {prefix.rstrip(".") or "value": _cell(value)}
    row: dict = {}
    for key, item in value.items():
        if isinstance(item, dict) and item:
            row |= _flat(item, f"{prefix}{key}.")
        else:
            row[f"{prefix}{key}"] = _cell(item)
    return row


def _cell(value: object) -> object:
    """A CSV cell: scalars as they are (numpy ones and datetimes as in the JSON), None as
    empty, lists and empty objects as their JSON text."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, default=_json_default)
    return value if isinstance(value, str | int | float) else _json_default(value)


def csv_text(payload: object) -> str:
    """The JSON's rows as CSV: one header line (the JSON's keys, whose names carry the units,
    `a.b` for nested ones, in first-seen order), then one line per row."""
    import csv
    import io

    rows = json_rows(payload)
    if not rows:  # no rows, so no columns to name: nothing at all
        return ""
    header = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _numpy_scalar(value: object, kind: str = "generic") -> bool:
    """Whether `value` is a numpy scalar of `kind` (asked without loading numpy: a numpy value
    exists only where numpy was loaded)."""
    numpy = sys.modules.get("numpy") if type(value).__module__ == "numpy" else None
    return numpy is not None and isinstance(value, getattr(numpy, kind))


def _json_default(value: object) -> object:
    if _numpy_scalar(value):
        return value.item()  # type: ignore[attr-defined]
    datetime = sys.modules.get("datetime")  # a datetime exists only where it was imported
    if datetime is not None and isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Right-aligned text table; floats shown with 2 decimals."""

    def cell(v: object) -> str:
        return f"{v:,.2f}" if isinstance(v, float) or _numpy_scalar(v, "floating") else str(v)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in text)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in text]
    return "\n".join(lines)


def _emit_trace_demand(
    args: argparse.Namespace,
    captured: trace.Trace,
    found: trace.Demand,
    extra: dict,
    link: Link,
    extra_text: str = "",
) -> None:
    """Report (and optionally plot) the PCIe bandwidth a trace needs per window."""
    out = {
        "trace": captured.path,
        "packets": captured.packets,
        "skipped": captured.skipped,
        "mean_frame_bytes": float(captured.frame_bytes().mean()),
        **extra,
        **found.summary(),
    }
    if args.plot:
        from pcieperf.report.figures import plot_trace_demand

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
            + f"\n{s['windows_over_capacity']} of {s['windows']} windows exceed the link"
            + (f"; plot: {s['plot']}" if "plot" in s else "")
        )

    _emit(args, out, human)

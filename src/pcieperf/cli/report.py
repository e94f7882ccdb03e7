"""`pcieperf report`: every figure and the HTML page (pcieperf.report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf.cli._common import _link, _whole
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.explain import _add_explain_options, _explanation
from pcieperf.errors import UsageError, require_new_folder


def cmd_report(args: argparse.Namespace) -> None:
    """Write the default report (plots, CSV, index.html)."""
    out_dir = Path(args.output)
    require_new_folder(out_dir, args.force)
    explain_options = (args.pps, args.frame, args.pkt, args.from_run, args.stack)
    if not args.counters and any(o is not None for o in explain_options):
        raise UsageError(
            "--pps, --frame, --from-run and --stack explain a --counters FILE; give one"
        )
    explanation = _explanation(args) if args.counters else None
    from pcieperf.report.figures import ReportConfig, write_report  # matplotlib: after the checks

    cfg = ReportConfig(link=_link(args), eth_gbps=args.eth, explanation=explanation)
    index = write_report(cfg, out_dir)
    _emit(
        args,
        {"index": str(index), "files": sorted(p.name for p in out_dir.iterdir())},
        lambda: f"report written to {index}",
    )


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    """The `report` command and its options."""
    p = _add_command(sub, "report", cmd_report, link=True)
    p.add_argument("-o", "--output", default="pcieperf-report", help="output folder")
    p.add_argument("--eth", type=_whole(), default=40, help="Ethernet Gb/s for the NIC figure")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty output folder")
    _add_explain_options(p.add_argument_group("measured counters (adds a section)"), False)

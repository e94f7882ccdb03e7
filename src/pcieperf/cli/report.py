"""`pcieperf report`: every figure and the HTML page (pcieperf.report.api)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import ETH, link_options
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.explain import _add_explain_options, _explanation
from pcieperf.errors import UsageError
from pcieperf.report.api import report


def cmd_report(args: argparse.Namespace) -> None:
    """Write the default report (plots, CSV, index.html)."""
    explain_options = (args.pps, args.frame, args.pkt, args.from_run, args.stack)
    measured = args.counters or args.import_id is not None
    if not measured and any(o is not None for o in explain_options):
        raise UsageError(
            "--pps, --frame, --from-run and --stack explain a --counters FILE or an --import N; "
            "give one"
        )
    explanation = _explanation(args) if measured else None
    emit(
        args,
        report(
            out=args.out,
            eth=args.eth,
            force=args.force,
            explanation=explanation,
            devices=args.devices,
            lspci=args.lspci,
            **link_options(args),
        ),
    )


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    """The `report` command and its options."""
    p = _add_command(sub, "report", cmd_report, link=True)
    p.add_argument("-o", "--output", dest="out", default="pcieperf-report", help="output folder")
    p.add_argument("--eth", type=ETH, default=40, help="Ethernet Gb/s for the NIC figure")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty output folder")
    p.add_argument(
        "--devices",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="this machine's devices and findings (default: where it has a PCI Express NIC)",
    )
    p.add_argument("--lspci", metavar="FILE", help="the devices of a saved `lspci -vv` instead")
    _add_explain_options(p.add_argument_group("measured counters (adds a section)"), False)

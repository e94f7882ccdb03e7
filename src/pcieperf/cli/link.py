"""`pcieperf link` and `pcieperf dma`: a link's capacity per direction and the TLPs of one
transfer (pcieperf.pcie.api: the same functions as `pp.link` and `pp.dma`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _whole, link_options
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.pcie import api
from pcieperf.pcie.tlp import OPS
from pcieperf.results import Table
from pcieperf.units import parse_int_list


def cmd_link(args: argparse.Namespace) -> None:
    """Bandwidth of a link per direction."""
    emit(args, api.link(**link_options(args)))


def dma_result(args: argparse.Namespace) -> Table:
    """`pp.dma` called with the `dma` options."""
    sizes = parse_int_list(args.sizes, "transfer size")
    return api.dma(
        op=args.op, sizes=sizes, offset=args.offset, tlps=args.tlps, **link_options(args)
    )


def cmd_dma(args: argparse.Namespace) -> None:
    """Effective bandwidth and TLP cost of device DMA per transfer size."""
    emit(args, dma_result(args))


def _add_link_command(sub: argparse._SubParsersAction) -> None:
    """The `link` command and its options."""
    _add_command(sub, "link", cmd_link, link=True)


def _add_dma_command(sub: argparse._SubParsersAction) -> None:
    """The `dma` command and its options."""
    p = _add_command(sub, "dma", cmd_dma, link=True)
    p.add_argument("--op", choices=OPS, default="write")
    p.add_argument("--sizes", default="64,128,256,512,1024,1500", help="bytes, comma-separated")
    p.add_argument("--offset", type=_whole(), default=0, help="start address offset in bytes")
    p.add_argument("--tlps", action="store_true", help="list every TLP of each transfer")

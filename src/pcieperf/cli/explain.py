"""`pcieperf explain`: measured counters against the forwarding model (pcieperf.measure.api:
`pp.explain`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pcieperf.cli._common import _whole, add_counter_file_options, packet_bytes
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.dpdk_fwd import _add_forwarding_options, forwarding_options
from pcieperf.iommu.profiles import DEFAULT_PLATFORM
from pcieperf.measure import api
from pcieperf.measure.explain import Explanation


def cmd_explain(args: argparse.Namespace) -> None:
    """Measured PCIe counters against the DPDK forwarding model: the rate hypothesis first (is
    the packet rate given the one the counters imply?), then measured, predicted and ratio per
    metric, and a diagnosis for each deviation beyond 15 %. A rate more than 10x off is flagged
    as a likely input mistake; that is still an answer (exit 0): the counters may cover other
    ports too, and only the user knows."""
    fit = {o: getattr(args, o) for o in ("fit_iommu", "fit_out", "force", "platform", "name")}
    result = _explained(args, **fit)
    if args.plot:
        from pcieperf.report.plots import plot_explanation

        plot_explanation(result.explanation, Path(args.plot), force=args.force)
    emit(args, result)


EXPLAIN_OPTIONS = (
    *("counters", "import_id", "format", "stack", "delimiter", "interval", "lenient"),
    *("pps", "from_run", "db", "page", "rxd", "txd", "profile"),
)
"""The options `pcieperf.measure.api.explain` takes as they are (and the forwarding setup's)."""


def _explained(args: argparse.Namespace, **extra: Any) -> api.Explained:
    """The counter file explained with the options given (`explain`, `report --counters`)."""
    given = {o: getattr(args, o) for o in EXPLAIN_OPTIONS}
    return api.explain(**given, pkt=packet_bytes(args), **forwarding_options(args), **extra)


def _explanation(args: argparse.Namespace) -> Explanation:
    """The explanation itself, for the report's figure."""
    return _explained(args).explanation


def _add_explain_options(
    p: argparse.ArgumentParser | argparse._ArgumentGroup, required: bool
) -> None:
    """A counter file and the forwarding it is explained against (explain, report)."""
    given = p.add_mutually_exclusive_group(required=required)
    given.add_argument("--counters", help="a pcm-iio, perf or VTune counter file")
    given.add_argument(
        "--import",
        dest="import_id",
        type=_whole(),
        default=None,
        metavar="N",
        help="a counter set imported into the store (`counters ls`; --db names the store)",
    )
    add_counter_file_options(p)
    p.add_argument("--stack", default=None, help="IIO stack / root port (part of its name)")
    _add_forwarding_options(p, defaults=False)
    p.add_argument(
        "--page",
        default=None,
        help="IOTLB prediction: page size 4k, 2m or 1g (default: what the file's IOTLB misses "
        "imply, else 4k)",
    )
    p.add_argument("--rxd", type=_whole(), default=1024, help="IOTLB prediction: Rx ring size")
    p.add_argument(
        "--txd", type=_whole(), default=None, help="IOTLB prediction: Tx ring (default rxd)"
    )


def _add_explain_command(sub: argparse._SubParsersAction) -> None:
    """The `explain` command and its options."""
    p = _add_command(sub, "explain", cmd_explain, link=True)
    _add_explain_options(p, required=True)
    p.add_argument("--plot", default=None, help="measured vs predicted over time (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot/profile file")
    fit = p.add_argument_group("IOMMU fit (as `iommu fit`, from the same counters and setup)")
    fit.add_argument(
        "--fit-iommu", action="store_true", help="fit IOTLB reach and walkers from IOTLB Miss"
    )
    fit.add_argument("--fit-out", default=None, help="write the fitted profile (implies the fit)")
    fit.add_argument("--platform", default=DEFAULT_PLATFORM, help="base IOMMU profile")
    fit.add_argument("--name", default="fitted", help="name of the fitted profile")

"""`pcieperf explain`: measured counters against the forwarding model (pcieperf.measure)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf.cli._common import (
    _link,
    _real,
    _whole,
    counters,
    explaining,
    iommu,
    iommu_fit,
    nic,
    platforms,
)
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.dpdk_fwd import _add_forwarding_options, _forwarding
from pcieperf.errors import UsageError, require_new_file
from pcieperf.results import format_table


def cmd_explain(args: argparse.Namespace) -> None:
    """Measured PCIe counters against the DPDK forwarding model: the rate hypothesis first (is
    the packet rate given the one the counters imply?), then measured, predicted and ratio per
    metric, and a diagnosis for each deviation beyond 15 %. A rate more than 10x off is flagged
    as a likely input mistake; that is still an answer (exit 0): the counters may cover other
    ports too, and only the user knows."""
    if args.fit_out:
        require_new_file(args.fit_out, args.force)
    samples = _explain_samples(args)
    result = _explanation(args, samples)
    # Fitted before any file is written: a fit that fails leaves no plot behind.
    fitted = _explain_fit(args, samples, result) if args.fit_iommu or args.fit_out else None
    if args.plot:
        from pcieperf.report.figures import plot_explanation

        plot_explanation(result, Path(args.plot), force=args.force)
    rate = result.rate
    out = {
        "file": result.file,
        "source": result.source,
        "stack": result.stack,
        "pps": result.pps,
        "pkt": result.pkt,
        "mean_batch": result.mean_batch,
        "tolerance": explaining.TOLERANCE,
        "cause": result.cause,
        "rate_mistake": bool(rate and rate.mistake),
        "implied_pps": rate.implied_pps if rate else None,
        "agreement": result.agreement,
        "deviating": result.deviating,
        "metrics": [v.as_dict() for v in result.verdicts],
        "rate": rate.as_dict() if rate else None,
    }
    if fitted:
        out["iommu_fit"] = fitted.as_dict()
        if args.fit_out:
            Path(args.fit_out).write_text(platforms.platform_toml(fitted.profile), "utf-8")
            out["iommu_fit"]["file"] = args.fit_out

    def human() -> str:
        text = _explanation_text(out)
        return f"{text}\n{iommu_fit.fit_text(fitted, args.fit_out)}" if fitted else text

    _emit(args, out, human)


def _explain_fit(
    args: argparse.Namespace, samples: counters.Samples, result: explaining.Explanation
) -> iommu_fit.Fit:
    """`explain --fit-iommu`: `iommu fit` on the explained stack, setup and rate."""
    cfg, _ = _forwarding(args)
    return iommu_fit.fit_explained(
        samples,
        result,
        cfg,
        _explain_iommu_setup(args),
        platform=args.platform,
        name=args.name,
    )


def _explain_samples(args: argparse.Namespace) -> counters.Samples:
    """The counter file --counters names, parsed with the explain options."""
    return counters.parse(
        Path(args.counters),
        args.format,
        lenient=args.lenient,
        delimiter=args.delimiter,
        interval_s=args.interval,
    )


def _explain_iommu_setup(args: argparse.Namespace) -> explaining.IommuSetup:
    """Pages and rings of explain's IOTLB prediction (--page, --rxd, --txd)."""
    txd = args.rxd if args.txd is None else args.txd
    return explaining.IommuSetup(iommu.parse_page(args.page), args.rxd, txd)


def _explanation(
    args: argparse.Namespace, samples: counters.Samples | None = None
) -> explaining.Explanation:
    """Explain the counter file (parsed here unless given) with the forwarding options."""
    if args.from_run is None and (args.pps is None or args.pkt is None):
        raise UsageError(
            "explaining counters needs --pps and --pkt (the rate and packet size they were "
            "measured at), or --from-run RUN"
        )
    cfg, pps = _forwarding(args)
    return explaining.explain(
        samples or _explain_samples(args),
        cfg,
        _link(args),
        pps,
        profile=nic.load_profile(args.profile),
        stack=args.stack,
        iommu_setup=_explain_iommu_setup(args),
    )


def _explanation_text(out: dict) -> str:
    """The human rendering of `explain`: a likely input mistake first, then a table at the rate
    the diagnosis uses (the implied one when it names the rate), then the diagnoses."""
    rate = out["rate"] if out["rate"] and out["rate"]["named"] else None
    metrics = rate["metrics"] if rate else out["metrics"]
    rows = []
    for m in metrics:
        per_pkt = "B/pkt" if m["unit"] == "B/s" else "/pkt"
        ratio = "inf" if m["ratio"] is None else f"{m['ratio']:.2f}"
        rows.append(
            (
                m["metric"],
                f"{m['measured_per_pkt']:.3f} {per_pkt}",
                f"{m['predicted_per_pkt']:.3f} {per_pkt}",
                ratio,
                m["status"],
            )
        )
    at = explaining.rate_text(out["pps"])
    if rate:
        at = f"{explaining.rate_text(rate['implied_pps'])} as the counters imply ({at} given)"
    head = (
        f"{out['file']} ({out['source']}), {out['stack']}: forwarding at {at}, {out['pkt']} B "
        f"packets, mean batch {out['mean_batch']:.2f}"
    )
    table = format_table(("metric", "measured", "predicted", "ratio", "status"), rows)
    by_metric = {m["metric"]: m["diagnosis"] for m in out["metrics"]}
    if rate:
        outliers = [f"- {name}: {by_metric[name]}" for name in rate["outliers"]]
        lines = [f"cause: {rate['rule']}"]
        if outliers:
            lines.append(f"{len(outliers)} metric(s) deviate beyond 15 % at that rate:")
        return "\n".join([*filter(None, [rate["headline"], head]), table, *lines, *outliers])
    notes = [f"- {name}: {text}" for name, text in by_metric.items() if text]
    verdict = (
        "every metric agrees with the model within 15 %"
        if out["agreement"]
        else f"{len(notes)} metric(s) deviate beyond 15 %:"
    )
    return "\n".join([head, table, verdict, *notes])


def _add_explain_options(p: argparse.ArgumentParser, required: bool) -> None:
    """A counter file and the forwarding it is explained against (explain, report)."""
    p.add_argument("--counters", required=required, help="a pcm-iio, perf or VTune counter file")
    p.add_argument(
        "--counters-format",
        dest="format",
        default=None,
        choices=counters.SOURCES,
        help="its tool (default: detected)",
    )
    p.add_argument("--stack", default=None, help="IIO stack / root port (part of its name)")
    p.add_argument("--delimiter", default=None, help="field separator (default: detected)")
    p.add_argument("--interval", type=_real(), default=None, help="perf without -I: run seconds")
    p.add_argument("--lenient", action="store_true", help="skip unknown columns instead of failing")
    _add_forwarding_options(p)
    p.add_argument("--page", default="2m", help="IOTLB prediction: page size (DPDK: hugepages)")
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
    fit.add_argument("--platform", default=platforms.DEFAULT_PLATFORM, help="base IOMMU profile")
    fit.add_argument("--name", default="fitted", help="name of the fitted profile")

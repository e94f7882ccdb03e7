"""`bench predict` and `validate`: pcie-bench files predicted for a host and scored against
its measurements (pcieperf.pciebench)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _whole
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.results import format_table


def cmd_bench_predict(args: argparse.Namespace) -> None:
    """Predict a host's bandwidth results from its latency files and host facts."""
    from pcieperf.pciebench import calibrate, predict

    run = calibrate.load_run(Path(args.calibrate))
    calibration = calibrate.load_calibration(Path(args.profile))
    steadiness = calibrate.steadiness(run)
    host = calibrate.host_profile(run, calibration)
    provenance = calibrate.provenance(run, calibration, host)
    files = predict.predict_files(
        host,
        calibration.device,
        Path(args.out),
        clock_ghz=predict.card_clock_ghz(run.info.card),
        force=args.force,
        transactions=args.transactions,
        progress=lambda rows: progress.wrap(rows, "simulating", "row"),
        alternatives=calibrate.interval_hosts(run, calibration, host),
        band=calibrate.interval_band(run, calibration, host),
        provenance=provenance,
    )
    payload = {
        "system": run.name,
        "files": [str(f) for f in files],
        "bounds": str(Path(args.out) / predict.BOUNDS_FILE),
        "provenance": provenance,
        "iommu_conflicts": list(run.iommu.conflicts),
        "host": asdict(host),
        "steadiness": steadiness,
        "steady": steadiness <= calibrate.UNSTEADY_RATIO,
    }

    def human() -> str:
        text = f"wrote {len(files)} files, {predict.BOUNDS_FILE} and provenance to {args.out}"
        text += "\n" + format_table(
            ("parameter", "value", "source", "why"),
            [[r["parameter"], r["value"], r["source"], r["why"]] for r in provenance[:7]],
        )
        if run.iommu.conflicts:
            text += "\nnote: the latency sweep overrules " + "; ".join(run.iommu.conflicts)
        if not payload["steady"]:
            text += (
                f"\nwarning: latency p99.9 is {steadiness:.0f}x the median on this host "
                "(millisecond stalls); its measured bandwidth will scatter far around any "
                "prediction"
            )
        return text

    _emit(args, payload, human)


def cmd_validate(args: argparse.Namespace) -> None:
    """Compare predicted with measured pcie-bench bandwidth results (MAPE, worst points)."""
    from pcieperf.pciebench import validate

    matched = validate.match(Path(args.measured), Path(args.predicted))
    result = validate.summary(matched, worst=args.worst)
    if args.plot:
        from pcieperf.report.figures import plot_validation

        result["plot"] = str(plot_validation(matched, Path(args.plot), force=args.force))

    def human() -> str:
        per_file = [[f, v] for f, v in result["per_file"].items()]
        worst = [
            [
                w["file"],
                w["test"],
                w["cache"],
                w["window_bytes"],
                w["size_bytes"],
                w["measured_gbps"],
                w["predicted_gbps"],
                w["error_pct"],
            ]
            for w in result["worst"]
        ]
        intervals = [
            [name, v["points"], v["coverage_pct"], v["median_relative_width_pct"]]
            for name, v in result["intervals"].items()
            if v is not None
        ]
        return "\n".join(
            [
                f"{result['points']} points, MAPE {result['mape_pct']} % "
                f"({result['mape_without_offset_pct']} % without the offset sweeps); "
                f"acceptance set (size sweep >= 64 B + window sweeps) "
                f"{result['acceptance_points']} points, MAPE {result['acceptance_mape_pct']} %",
                format_table(("points", "n", "coverage %", "median width %"), intervals)
                if intervals
                else "no bounds.csv: no intervals to score",
                format_table(("file", "MAPE %"), per_file),
                "worst points:",
                format_table(
                    ("file", "test", "cache", "window", "size", "measured", "predicted", "err %"),
                    worst,
                ),
            ]
        )

    _emit(args, result, human)


def _add_validate_command(sub: argparse._SubParsersAction) -> None:
    """The `validate` command and its options."""
    p = _add_command(sub, "validate", cmd_validate)
    p.add_argument("--measured", required=True, help="pcie-bench result directory")
    p.add_argument("--predicted", required=True, help="directory of predicted bw_*.csv files")
    p.add_argument("--worst", type=_whole(), default=10, help="how many worst points to list")
    p.add_argument("--plot", default=None, help="measured vs predicted plot (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")

"""Judge costs that travel (issue 43): predict one machine's capture runs from another's
calibration carried there by the two machines' probes, both ways, and report the MAPE of
capture pps and of the forwarding penalty, beside the same predictions without scaling.

On each machine A and B (docs/capture.md, "Costs that travel"):

    pcieperf capture probe --fresh --json > probe.json
    pcieperf capture run ...                      # the runs, at two frame sizes or more
    pcieperf capture runs --format csv > runs.csv
    pcieperf capture calibrate --csv runs.csv -o cal.toml
    python3 scripts/calibration_probe.py cal.toml --probe probe.json -o cal.toml --force

then, with both machines' files in one place:

    python3 scripts/capture_travel.py A/cal.toml A/runs.csv B/cal.toml B/runs.csv

The runs predicted are those each machine's calibration was fitted to (of one placement of its
two CPUs, docs/capture.md#placement). Each run is predicted as `capture calibrate` judges its
fit (pcieperf.capture.fit.predict: given the run's own forwarding cost, CPU shares and ring hold
time), from the other machine's calibration with its costs scaled by this machine's probe over
that one's (pcieperf.capture.travel). The issue asks for 25 % or less both ways.
"""

import argparse
import sys

import pandas as pd

from pcieperf.capture.calibrate import runs_asked
from pcieperf.capture.calibration import CaptureCalibration, load_calibration
from pcieperf.capture.fit import predict, prepared
from pcieperf.capture.path import MODEL_SINKS
from pcieperf.capture.travel import travelled
from pcieperf.errors import PcieperfError


def mape(predicted: pd.Series, measured: pd.Series) -> float:
    """Mean absolute percentage error."""
    return float((100 * (predicted - measured).abs() / measured.abs()).mean())


def one_way(source: CaptureCalibration, target: CaptureCalibration, csv: str) -> dict:
    """The runs `target` was fitted to (from its machine's export `csv`: those of one placement)
    predicted from `source` scaled by `target`'s probe, and unscaled."""
    if target.meta.probe is None or source.meta.probe is None:
        raise PcieperfError("both calibrations must record their probe (calibration_probe.py)")
    runs = runs_asked(target.meta.runs, csv=csv)
    runs = runs[runs["sink"].isin(MODEL_SINKS)]
    moved, ratios = travelled(source, target.meta.probe)
    d = prepared(runs, source.writes.pcapng_options_bytes)
    penalty = d["prod_ns"] * d["copies_per_packet"]
    out: dict[str, object] = {"runs": len(d), "costs_scaled": len(ratios)}
    for name, cal in (("scaled", moved), ("unscaled", source)):
        found = predict(cal, d)
        out[f"capture_pps_mape_pct_{name}"] = mape(found["capture_pps"], d["capture_pps"])
        out[f"penalty_mape_pct_{name}"] = mape(found["penalty_ns"], penalty)
    return out


def main() -> int:
    """Both ways, as a table; 2 with one line on stderr for a bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for machine in ("a", "b"):
        parser.add_argument(f"{machine}_calibration", help=f"machine {machine.upper()}'s file")
        parser.add_argument(f"{machine}_runs", help=f"machine {machine.upper()}'s runs CSV")
    args = parser.parse_args()
    try:
        a, b = load_calibration(args.a_calibration), load_calibration(args.b_calibration)
        ways = {"A -> B": one_way(a, b, args.b_runs), "B -> A": one_way(b, a, args.a_runs)}
    except PcieperfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(pd.DataFrame(ways).T.to_string(float_format=lambda x: f"{x:.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

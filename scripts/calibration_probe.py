"""Record the probe of a calibration's machine in its file (issue 43, "Costs that travel").

`capture model` carries a calibration's costs to another kind of machine by the ratio of each
cost's primitive there over here (pcieperf.capture.travel); for that the calibration must record
the probe of the machine its runs were made on. Run on that kind of machine:

    pcieperf capture probe --fresh --json > probe.json
    python3 scripts/calibration_probe.py CAL.toml --probe probe.json -o CAL.toml --force

(without --probe: this machine's kept probe, measured if there is none). A probe of another
kind of machine than the calibration's (its [meta] cpu_model and cpus) is refused, and so is one
that saw the two CPUs in another placement than the runs (a round trip above [meta]
placement_max_round_trip_ns: the ring between the CPUs moves with it). The cache
line's round trip is taken from the calibration's own runs where its runs file (NAME-runs.csv)
has it: each run measured it with the same probe (pcieperf.capture.placement.round_trip_ns)
while it forwarded, and it chose the runs of one placement, the one the costs were fitted in
(on a VM the host moves the two vCPUs between placements whose round trips differ several-fold:
50-70 ns and 400-460 ns in the shipped runs). Re-run it after `pcieperf capture calibrate`
rewrites the file.
"""

import argparse
import json
import sys
from dataclasses import replace
from itertools import takewhile
from pathlib import Path

import pcieperf as pp
from pcieperf import outputs
from pcieperf.capture import placement
from pcieperf.capture.calibrate import runs_asked
from pcieperf.capture.calibration import (
    CaptureCalibration,
    calibration_toml,
    load_calibration,
    runs_file,
)
from pcieperf.capture.primitives import Probe, Spread, probe_of
from pcieperf.capture.probe import spread
from pcieperf.errors import PcieperfError

WRITTEN_BY = "# Written by `pcieperf capture calibrate`"


def read_probe(path: str | None) -> Probe:
    """The probe in `path` (`capture probe --json`'s output, or its "probe" table), or this
    machine's."""
    if path is None:
        found = pp.capture_probe().to_json()
    else:
        try:
            found = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PcieperfError(f"probe {path}: {exc}") from None
    table = found.get("probe", found) if isinstance(found, dict) else found
    return probe_of(table, f"probe {path or '(this machine)'}")


def runs_round_trip(cal: CaptureCalibration) -> Spread | None:
    """The round trip the calibration's runs measured while they forwarded, the value that
    chose them as of one placement (their median, lowest and highest), None without a runs
    file that has it."""
    csv = runs_file(cal.path)
    if not csv.is_file():
        return None
    runs = runs_asked(cal.meta.runs, csv=csv)
    if placement.ROUND_TRIP not in runs:
        return None
    return spread(runs[placement.ROUND_TRIP].astype(float).tolist())


def main() -> int:
    """Read, check, record and write; 2 with one line on stderr for a bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", help="the calibration file (.toml) to read")
    parser.add_argument("--probe", default=None, help="`capture probe --json` output to record")
    parser.add_argument("-o", "--output", required=True, help="the calibration file to write")
    parser.add_argument("--force", action="store_true", help="overwrite --output")
    args = parser.parse_args()
    try:
        cal = load_calibration(args.calibration)
        probe = read_probe(args.probe)
        kind = (cal.meta.cpu_model, cal.meta.cpus)
        if cal.meta.cpu_model and probe.kind != kind:
            raise PcieperfError(
                f"the probe is of {probe.kind[0]}, {probe.kind[1]} CPUs; the calibration's runs "
                f"were made on {kind[0]}, {kind[1]} CPUs: probe that kind of machine"
            )
        trip = probe.primitives.get("round_trip_ns")
        if trip is not None and trip.median > cal.meta.placement_max_round_trip_ns:
            raise PcieperfError(
                f"the probe saw the two CPUs in another placement than the runs (round trip "
                f"{trip.median:.0f} ns; the runs' at most "
                f"{cal.meta.placement_max_round_trip_ns:.0f} ns): probe again with --fresh"
            )
        fitted = runs_round_trip(cal)
        if fitted is not None:
            probe = replace(probe, primitives=probe.primitives | {"round_trip_ns": fitted})
            print(f"round trip from the calibration's runs: {fitted}", file=sys.stderr)
        lines = Path(args.calibration).read_text(encoding="utf-8").splitlines()
        comments = takewhile(lambda line: line.startswith("#"), lines)
        header = [line[2:] for line in comments if WRITTEN_BY not in line]
        text = calibration_toml(
            replace(cal, meta=replace(cal.meta, probe=probe)), "\n".join(header)
        )
        outputs.write_text(args.output, text, args.force)
    except PcieperfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.output} with the probe of {probe.cpu_model}, {probe.cpus} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

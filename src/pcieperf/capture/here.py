"""`capture calibrate --here` (`pp.capture_calibrate_here`): a calibration made on the machine
it is used on, in minutes. A designed set of short capture runs (not a sweep: the fewest that
let the fit separate each cost, `capture.fit`), a few of them twice to measure repeatability,
after a check that the machine is quiet; then `capture calibrate` on them, written where
`capture model` looks for this machine's calibration (`calibration.machine_calibration`)."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import progress
from pcieperf.capture import placement
from pcieperf.capture.calibrate import capture_calibrate
from pcieperf.capture.calibration import machine_calibration, runs_file
from pcieperf.capture.lock import WAIT_S
from pcieperf.capture.machine import Machine
from pcieperf.capture.primitives import probe_folder
from pcieperf.capture.records import capture_run
from pcieperf.capture.stored import read_runs
from pcieperf.dpdk.port import require_count
from pcieperf.errors import UsageError, param, require_choice, require_new_file, require_positive
from pcieperf.results import Report

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True)
class Setting:
    """One capture run of the set: the tool, what it writes and where."""

    tool: str
    format: str
    sink: str


# dumpcap's batched writes as pcapng and as pcap (two writers: the producer's and consumer's
# fixed cost per writer), dpdk-pdump's pcap_dump per record, each into /dev/null and a tmpfs
# file (the consumer's costs per sink) but dumpcap's pcap (its write calls are pcapng's; the
# shipped calibration's runs, scripts/capture_calibration_runs.sh, are the same five).
SETTINGS = (
    Setting("dumpcap", "pcapng", "null"),
    Setting("dumpcap", "pcapng", "tmpfs"),
    Setting("dumpcap", "pcap", "null"),
    Setting("pdump", "pcap", "null"),
    Setting("pdump", "pcap", "tmpfs"),
)
TOOLS = tuple(dict.fromkeys(setting.tool for setting in SETTINGS))  # dumpcap, pdump
# Four sizes: the shipped runs cut to 3 sizes leave per-byte and cold-byte costs unseparated or
# a size's LOSO above 100 %; 64, 256, 512 and 1500 B separate all but what no size tells
# (dumpcap never saturates /dev/null), LOSO 15-19 % (tests/capture/test_here.py).
SIZES = (64, 256, 512, 1500)
# Run twice: each tool's smallest and largest frame into tmpfs, its costliest sink.
REPEATED = ((64, SETTINGS[1]), (1500, SETTINGS[1]), (64, SETTINGS[4]), (1500, SETTINGS[4]))
AGAIN = 2  # rounds of runs made again where the fitted placement has none of a planned run
MAX_AGAIN = 10  # more rounds than the time budget (BUDGET_S) lets run
BUDGET_S = 300.0  # no run is made again once the set has taken 5 minutes (issue 43's target)
SECONDS = 1.0  # each window: two testpmd statistics periods (1 s each) are the least a rate has
BUSY_LOAD = 0.5  # a 1-minute load average above half the CPUs: the runs' threads would share


@dataclass(frozen=True)
class PlannedRun:
    """One run of the designed set."""

    frame: int
    setting: Setting
    repeat: bool = False


def designed_runs(
    sizes: tuple[int, ...] = SIZES,
    tools: tuple[str, ...] = TOOLS,
    repeated: tuple[tuple[int, Setting], ...] = REPEATED,
) -> list[PlannedRun]:
    """Every setting of `tools` at every size once, then the repeats of those sizes (after the
    set, so that a drift of the machine during it shows as a spread)."""
    settings = [setting for setting in SETTINGS if setting.tool in tools]
    once = [PlannedRun(size, setting) for size in sizes for setting in settings]
    again = [
        PlannedRun(size, setting, True)
        for size, setting in repeated
        if size in sizes and setting in settings
    ]
    return once + again


def check_quiet(cpus: int, load: float) -> None:
    """Refuse a busy machine in one line: a calibration measures what its threads get."""
    if load > BUSY_LOAD * cpus:
        raise UsageError(
            f"this machine is busy (load average {load:.1f} over a minute on {cpus} CPUs, more "
            f"than {BUSY_LOAD:g} per CPU): its runs would measure what other work leaves them; "
            f"calibrate when it is quiet, or give {param('busy')} to measure anyway"
        )


def capture_calibrate_here(
    *,
    output: str | os.PathLike[str] | None = None,
    force: bool = False,
    seconds: float = SECONDS,
    sizes: tuple[int, ...] = SIZES,
    tools: tuple[str, ...] = TOOLS,
    again: int = AGAIN,
    busy: bool = False,
    keep_starved: bool = False,
    wait: float = WAIT_S,
    db: str | os.PathLike[str] | None = None,
) -> Report:
    """Run the designed set of capture runs on this machine (`seconds` each window), store them
    in `db`, fit them (`keep_starved` as `capture_calibrate` takes it) and write this machine's
    calibration (`pcieperf capture calibrate --here`): `output`, default where `capture model`
    looks for it (`machine_calibration` beside the store).
    `sizes`: the set's frame sizes (two or more); `tools`: the capture tools whose settings
    it runs (a calibration prices only their paths); `again`: rounds of runs made again where
    the fitted placement has none of a planned run. A machine whose load is above half its CPUs
    is refused unless `busy`."""
    require_positive(param("seconds"), seconds)
    require_count(param("again"), again, 0, MAX_AGAIN)
    if not tools:
        raise UsageError(f"{param('tools')} is empty; give {', '.join(TOOLS)} or both")
    for tool in tools:
        require_choice(param("tools"), tool, TOOLS)
    if len(set(sizes)) < 2:
        raise UsageError(
            f"{param('sizes')} {list(sizes)} is not allowed; give two frame sizes or more: "
            "the costs per byte need them"
        )
    machine = Machine.here()
    if not busy:
        check_quiet(machine.cpus, os.getloadavg()[0])
    own = machine_calibration(probe_folder(db), machine.slug)
    out = Path(output) if output is not None else own
    if output is None:  # the user's data folder: pcieperf's own, made where it is not yet
        out.parent.mkdir(parents=True, exist_ok=True)
    require_new_file(out, force)
    require_new_file(runs_file(out), force)
    start = time.monotonic()
    planned = designed_runs(tuple(sizes), tuple(tools))

    def made(runs: list[PlannedRun], words: str, until: float = math.inf) -> list[int]:
        return [
            _made(run, seconds, wait, db)
            for run in progress.wrap(runs, words, unit="run")
            if time.monotonic() < until
        ]

    import pandas

    ids = made(planned, "calibrate here")
    table = first = pandas.DataFrame(read_runs(ids, db))
    for _ in range(again):
        missing = elsewhere(table, planned)
        if not missing:
            break
        ids += made(missing, "calibrate here: again, in the fitted placement", start + BUDGET_S)
        table = pandas.DataFrame(read_runs(ids, db))
    fitted = capture_calibrate(
        ids,
        output=out,
        force=force,
        db=db,
        keep_starved=keep_starved,
        measured_on=f"{machine.words}: `pcieperf capture calibrate --here`, {len(ids)} runs "
        f"of {seconds:g} s windows",
    )
    here = {
        "machine": machine.words,
        "runs": len(ids),
        "made_again": len(ids) - len(planned),
        "seconds": seconds,
        "wall_s": time.monotonic() - start,
        "repeatability": repeatability(first, planned),
    }
    payload = dict(fitted.data) | {"here": here}  # type: ignore[call-overload]
    return Report(payload, lambda: f"{fitted.to_text()}\n{_here_text(here)}")


def _made(run: PlannedRun, seconds: float, wait: float, db: str | os.PathLike[str] | None) -> int:
    """Make one planned run and store it; its id."""
    stored = capture_run(
        frame=run.frame,
        tool=run.setting.tool,
        format=run.setting.format,
        sink=run.setting.sink,
        seconds=seconds,
        wait=wait,
        db=db,
    )
    return int(stored.data["run_id"])  # type: ignore[index]  # a stored run's object


def elsewhere(table: pandas.DataFrame, planned: list[PlannedRun]) -> list[PlannedRun]:
    """The planned runs (repeats aside) with no run in the placement the fit keeps (the runs'
    nearer placement, `capture.placement`): a VM moves its CPUs between placements, and the fit
    leaves out the runs made in the other one."""
    limit, round_trip = placement.placement_limit(table), placement.round_trip_limit(table)
    kept = table[placement.in_placement(table, limit, round_trip)]
    keys = ("frame_bytes", "tool", "format", "sink")
    covered = set(kept[list(keys)].itertuples(index=False, name=None))
    return [
        p
        for p in planned
        if not p.repeat
        and (float(p.frame), p.setting.tool, p.setting.format, p.setting.sink) not in covered
    ]


def repeatability(table: pandas.DataFrame, planned: list[PlannedRun]) -> dict[str, float]:
    """How far a repeated run was from its first: mean |second / first - 1| of the capture pps
    and of the forwarding penalty (CPU ns per packet the capture added), in per cent."""
    import numpy as np

    first = {(p.frame, p.setting): i for i, p in enumerate(planned) if not p.repeat}
    pairs = [(first[(p.frame, p.setting)], i) for i, p in enumerate(planned) if p.repeat]
    penalty = (table["fwd_cpu_ns"] - table["fwd_cpu_ns_no_capture"]).to_numpy(float)
    capture = table["capture_pps"].to_numpy(float)
    a, b = (np.array(side) for side in zip(*pairs, strict=True))
    return {
        "pairs": len(pairs),
        "capture_pps_pct": float(100 * np.mean(np.abs(capture[b] / capture[a] - 1))),
        "penalty_pct": float(100 * np.mean(np.abs(penalty[b] / penalty[a] - 1))),
    }


def _here_text(here: dict) -> str:
    """The set's machine, time and repeatability, in two lines."""
    r = here["repeatability"]
    return (
        f"measured here: {here['machine']}, {here['runs']} runs ({here['made_again']} made again "
        f"for the placement) in {here['wall_s']:.0f} s\n"
        f"repeatability ({r['pairs']} runs made twice): capture pps {r['capture_pps_pct']:.1f} "
        f"%, forwarding penalty {r['penalty_pct']:.1f} %"
    )

"""`capture calibrate` (`pp.capture_calibrate`): the runs asked for, from the store or an
exported CSV, one kind of machine at a time, fitted (`capture.fit`), judged by leaving one
frame size out, and written as a calibration file (`capture.calibration`) with its runs beside
it."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf.capture import verdicts
from pcieperf.capture.calibration import (
    CaptureCalibration,
    Meta,
    Wakeup,
    calibration_toml,
    cost_table,
    runs_file,
)
from pcieperf.capture.machine import Machine, of_rows
from pcieperf.capture.stored import LISTED, read_runs
from pcieperf.errors import UsageError, param, require_new_file
from pcieperf.outputs import write_texts
from pcieperf.results import Report, finite_or_none

if TYPE_CHECKING:
    import pandas


def runs_asked(
    runs: Iterable[int] | pandas.DataFrame = (),
    *,
    db: str | os.PathLike[str] | None = None,
    csv: str | os.PathLike[str] | None = None,
) -> pandas.DataFrame:
    """The capture runs asked for: a DataFrame as given, or the ids from an exported CSV or
    the store; no ids: every run there."""
    import pandas

    if isinstance(runs, pandas.DataFrame):
        return runs
    if csv is not None:
        table = _runs_csv(Path(csv))
    else:
        table = pandas.DataFrame(read_runs(db=db), columns=list(LISTED))
    ids = [int(r) for r in runs]
    unknown = sorted(set(ids) - set(table["run_id"].astype(int)))
    if unknown:
        raise UsageError(
            f"capture run {unknown[0]} is not stored; `pcieperf capture runs` lists "
            f"{len(table)} runs"
        )
    return table[table["run_id"].isin(ids)] if ids else table


NO_MACHINE = "an unknown machine (the runs were stored before pcieperf recorded machines)"


def runs_machine(table: pandas.DataFrame) -> Machine | None:
    """The one kind of machine (CPU model and count) the runs were made on; None if they
    predate machine records; runs of several kinds are refused in one line (fit one kind's)."""
    found = of_rows(table.to_dict("records"))
    kinds = {m.kind for m in found}
    if len(kinds) > 1:
        raise UsageError(
            f"the runs were made on {len(kinds)} kinds of machine ("
            + "; ".join(m.words for m in found)
            + "): costs differ between machines, so fit one machine's runs at a time"
        )
    return found[0] if found else None


def _runs_csv(csv: Path) -> pandas.DataFrame:
    """An exported runs CSV (`capture runs --format csv`, or the runs file a calibration
    keeps); anything else (empty, text, another CSV) is refused in one line."""
    import pandas

    if not csv.is_file():
        raise UsageError(f"runs file {csv} does not exist")
    try:  # "null" names a port and a sink here, not a missing value
        table = pandas.read_csv(csv, keep_default_na=False, na_values=["", "NaN", "nan"])
    except ValueError as exc:  # pandas' EmptyDataError and ParserError, UnicodeDecodeError
        reason = str(exc).strip().splitlines()[0]
        raise UsageError(f"runs file {csv} is not a CSV of capture runs: {reason}") from None
    if "run_id" not in table.columns:
        raise UsageError(
            f"runs file {csv} has no run_id column; `pcieperf capture runs --format csv` writes one"
        )
    return table


def _left_runs(calibration: Path) -> bool:
    """Whether the runs file of `calibration` is one a calibrate left without it: a runs export
    beside no calibration."""
    if calibration.exists() or not runs_file(calibration).is_file():
        return False
    try:
        _runs_csv(runs_file(calibration))
    except UsageError:
        return False  # someone's other file: kept unless --force
    return True


def capture_calibrate(
    runs: Iterable[int] | pandas.DataFrame = (),
    *,
    output: str | os.PathLike[str],
    force: bool = False,
    db: str | os.PathLike[str] | None = None,
    csv: str | os.PathLike[str] | None = None,
    measured_on: str | None = None,
    keep_starved: bool = False,
) -> Report:
    """Fit the capture path's costs to stored capture runs and write the calibration file
    `output` (`pcieperf capture calibrate`), judged by leaving one frame size out: each
    size's runs predicted from a fit to the others' (where no size can be, the calibration is
    written unjudged and says why). `runs`: run ids (none: all) from the
    store `db` or an exported `csv`, or a DataFrame of runs; the runs used are written beside
    `output` (`runs_file`), so that the fit can be re-run from them. Runs the machine starved
    (`capture.verdicts.starved`) are left out, each named with why, unless `keep_starved`;
    runs whose measurements contradict each other are refused."""
    from pcieperf.capture import fit, placement

    out = Path(output)
    require_new_file(out, force)
    # Its own runs, read back; or what a calibrate that failed left (before issue 46 the runs
    # were published first, and stayed when the calibration could not be).
    rewrite_runs = force or runs_file(out) == Path(csv or "") or _left_runs(out)
    require_new_file(runs_file(out), rewrite_runs)
    table = runs_asked(runs, db=db, csv=csv)
    table, unpriced = _priced(table, asked=_is_frame(runs) or bool(runs))
    made_on = runs_machine(table)
    where = measured_on or (made_on.words if made_on else NO_MACHINE)
    fed, starved = _fed(table, keep_starved)
    limit, round_trip = _placement_limit(fed), placement.round_trip_limit(fed)
    near = placement.in_placement(fed, limit, round_trip)
    fitted = fit.fit(fed[near], where)
    held, unjudged = _held_out(fed[near], where)
    judged = (fit.judgement(held) if unjudged is None else {}) | fit.other_placement(
        fitted, fed[~near]
    )
    others = sorted(int(r) for r in fed.loc[~near, "run_id"])
    meta = replace(
        fitted.meta,
        loso=judged,
        placement_max_slowdown=limit,
        other_placement_runs=others,
        placement_max_round_trip_ns=round_trip,
        cpu_model=made_on.cpu_model if made_on else "",
        cpus=made_on.cpus if made_on else 0,
    )
    cal = replace(fitted, meta=meta, path=str(out))
    write_texts(
        [
            (runs_file(out), table.to_csv(index=False), rewrite_runs),
            (out, calibration_toml(cal), force),
        ]
    )
    payload = {
        "output": str(out),
        "runs_file": str(runs_file(out)),
        "runs": cal.meta.runs,
        "measured_on": cal.meta.measured_on,
        "dpdk_version": cal.meta.dpdk_version,
        "forwarding": cost_table(cal.forwarding),
        "producer": cost_table(cal.producer),
        "consumer": {sink: cost_table(c) for sink, c in cal.consumers.items()},
        "writes": asdict(cal.writes),
        "wakeup": {k: _json(v) for k, v in cost_table(cal.wakeup).items()},
        "not_separable": cal.meta.not_separable,
        "loso": judged,
        "loso_not_judged": unjudged,
        "held_out": held.to_dict("records"),
        "placement": {
            "max_round_trip_ns": finite_or_none(meta.placement_max_round_trip_ns),
            "max_slowdown": finite_or_none(meta.placement_max_slowdown),
            "other_placement_runs": others,
        },
        "starved_runs": [{"run_id": r, "why": w} for r, w in starved.why.items()],
        "starved_kept": keep_starved,
        "unpriced_runs": unpriced,
    }
    notes = [line for line in (starved.line, _unpriced_line(unpriced)) if line]
    return Report(payload, lambda: _calibration_text(cal, held, notes, unjudged))


def _held_out(runs: pandas.DataFrame, where: str) -> tuple[pandas.DataFrame, str | None]:
    """The leave-one-size-out rows, and why there are none where no size could be predicted
    from the others (two sizes: neither leaves two to fit per-byte costs from)."""
    import pandas

    from pcieperf.capture import fit

    try:
        return fit.leave_one_size_out(runs, where), None
    except UsageError as why:
        return pandas.DataFrame(columns=fit.HELD_OUT_COLUMNS), str(why)


def _calibration_text(
    cal: CaptureCalibration, held: pandas.DataFrame, notes: list[str], unjudged: str | None
) -> str:
    """What was written, the fitted costs and the leave-one-size-out table."""
    from pcieperf.text import format_table, pairs
    from pcieperf.units import significant as sig

    p, f, w = cal.producer, cal.forwarding, cal.wakeup
    costs = [
        ("forwarding", f"{f.base_ns:.2f} + {sig(f.per_byte_ns, 3)}/B ns per packet "
         f"[x{f.band.low:.2f}-{f.band.high:.2f}]"),
        ("producer", f"{_fixed(p.fixed_ns)} + {sig(p.per_byte_ns, 3)}/B + "
         f"{sig(p.cold_byte_ns, 3)}/cold B + {p.handoff_ns:.1f} x delivered ns per copy "
         f"[x{p.band.low:.2f}-{p.band.high:.2f}]"),
        *(
            (f"consumer {sink}", f"{_fixed(c.fixed_ns)} + {sig(c.per_byte_ns, 3)}/B + "
             f"{sig(c.cold_byte_ns, 3)}/cold B + {c.write_call_ns:.0f} x calls ns per record "
             f"[x{c.band.low:.2f}-{c.band.high:.2f}]")
            for sink, c in cal.consumers.items()
        ),
        ("wakeup", _wakeup_text(w)),
        *(("not separable", n) for n in cal.meta.not_separable),
    ]  # fmt: skip
    lines = [
        f"wrote {cal.path} from {len(cal.meta.runs)} runs (beside it: {runs_file(cal.path).name}) "
        f"({cal.meta.dpdk_version}; {cal.meta.measured_on})",
        pairs(costs),
        *notes,
        *_placement_lines(cal.meta),
    ]
    if unjudged is not None:
        return "\n".join([*lines, f"leave one frame size out: not judged ({unjudged})"])
    lines.append("leave one frame size out (each size predicted from the other sizes' runs):")
    rows = []
    for (sink, size), runs in held.groupby(["sink", "frame_bytes"]):
        ape = 100 * (runs["capture_pps_predicted"] / runs["capture_pps"] - 1).abs()
        pen = 100 * (runs["penalty_ns_predicted"] / runs["penalty_ns"] - 1).abs()
        right = (runs["limited_by"] == runs["limited_by_predicted"]).sum()
        rows.append([sink, size, len(runs), ape.mean(), pen.mean(), f"{right}/{len(runs)}"])
    headers = ("sink", "frame (B)", "runs", "capture pps APE %", "penalty APE %", "limit right")
    loso = cal.meta.loso
    total = [
        f"MAPE {sink}: capture pps {loso[f'capture_pps_mape_pct_{sink}']:.1f} %, forwarding "
        f"penalty {loso[f'penalty_mape_pct_{sink}']:.1f} %, limit right "
        f"{loso[f'limited_by_right_pct_{sink}']:.0f} %"
        for sink in ["all", *sorted(held["sink"].unique())]
    ]
    return "\n".join([*lines, format_table(headers, rows), *total])


def _is_frame(runs: object) -> bool:
    """Whether `runs` is a DataFrame of runs (given whole: every row asked for)."""
    return hasattr(runs, "columns")


def _priced(table: pandas.DataFrame, *, asked: bool) -> tuple[pandas.DataFrame, list[int]]:
    """The runs the model prices (net_null or a pcap replay, every queue, unfiltered) and the
    ids of the others, left out of "every stored run"; one asked for by id is refused by name."""
    from pcieperf.capture import fit

    unpriced = fit.unpriced(table)
    ids = sorted(int(r) for r in table.loc[unpriced, "run_id"])
    if ids and asked:
        raise UsageError(
            f"capture run {ids[0]} is of a wire port, one queue or a filter, which the model does "
            "not price (it prices net_null or a pcap replay, every queue, unfiltered); leave it out"
        )
    if len(table) and unpriced.all():
        raise UsageError(
            f"none of the {len(table)} stored runs is one the model prices (net_null or a pcap "
            "replay, every queue, unfiltered); `pcieperf capture run` without --port makes one"
        )
    return table[~unpriced], ids


def _unpriced_line(ids: list[int]) -> str:
    """The line that names the stored runs left out as the model does not price them."""
    if not ids:
        return ""
    return (
        f"  left out: {len(ids)} runs of a wire port, one queue or a filter, which the model "
        f"does not price: {', '.join(map(str, ids))}"
    )


@dataclass(frozen=True)
class StarvedRuns:
    """The runs asked for that the machine starved: why, each; and the line that says so."""

    why: dict[int, str]
    line: str


def _fed(table: pandas.DataFrame, keep: bool) -> tuple[pandas.DataFrame, StarvedRuns]:
    """The runs to fit: those the machine starved left out unless `keep` (all starved:
    refused), none whose measurements contradict each other (refused, naming the first)."""
    found = verdicts.starved(table)
    flagged = found.flagged
    ids = table["run_id"].astype(int).to_numpy()
    why = {int(r): w for r, w in zip(ids, found.reasons, strict=True) if w}
    rules = "; ".join(
        f"{rule}: {', '.join(map(str, ids[flags]))}"
        for rule, flags in found.rules.items()
        if flags.any()
    )
    if flagged.all() and not keep:
        raise UsageError(
            f"every run given ({len(ids)}) was starved by a busy machine ({rules}); fit runs "
            f"made on a quieter machine, or give {param('keep_starved')} to fit these"
        )
    fed = table if keep else table[~flagged]
    line = ""
    if why:
        done = "kept, as asked" if keep else "left out"
        busy = "a busy machine starved (docs/capture.md#a-busy-machine)"
        line = f"  {done}: {len(why)} runs {busy}: {rules}"
    bad = [(r, w) for r, w in zip(fed["run_id"], verdicts.contradictions(fed), strict=True) if w]
    if bad:
        others = (
            f" ({len(bad)} runs do: {', '.join(str(r) for r, _ in bad)})" if len(bad) > 1 else ""
        )
        raise UsageError(
            f"capture run {bad[0][0]}'s measurements contradict each other: {bad[0][1]}{others}; "
            "leave it out (give the ids of the runs to fit)"
        )
    return fed, StarvedRuns(why, line)


def _placement_limit(runs: pandas.DataFrame) -> float:
    """`placement.placement_limit` of the runs; a limit below 1 (sharing lines faster than
    not, which cannot be: an outlier probe split the runs) is refused, naming the runs below."""
    from pcieperf.capture.placement import PROBES, placement_limit

    limit = placement_limit(runs)
    if limit >= 1:
        return limit
    probes = runs.reindex(columns=list(PROBES)).astype(float).min(axis=1)
    low = ", ".join(str(int(r)) for r in runs.loc[probes <= limit, "run_id"])
    raise UsageError(
        f"the runs' placement probes split at x{limit:.3f}, a slowdown below 1, which cannot be "
        f"(shared cache lines are never faster than lines alone): the probes of run(s) {low} "
        "are outliers; leave them out (give the ids of the runs to fit)"
    )


def _placement_lines(meta: Meta) -> list[str]:
    """The runs left out for another placement of the two CPUs, and what they cost."""
    if not meta.other_placement_runs:
        return []
    ratio = meta.loso.get("other_placement_penalty_ratio", math.nan)
    limits = [
        text.format(limit)
        for text, limit in (
            ("a cache line's round trip between them above {:.0f} ns while capturing",
             meta.placement_max_round_trip_ns),
            ("shared cache lines more than {:.2f}x slower than alone before or after",
             meta.placement_max_slowdown),
        )
        if math.isfinite(limit)
    ]  # fmt: skip
    return [
        f"  left out: {len(meta.other_placement_runs)} runs whose CPUs had "
        f"{' or '.join(limits) or 'another placement'} (another placement: "
        f"docs/capture.md#placement); their forwarding penalty was {ratio:.2f}x the fit's"
    ]


def _wakeup_text(w: Wakeup) -> str:
    """The wake-up loss rule fitted, or that no run's capture thread slept."""
    if not w.runs:
        return "none fitted: no run's capture thread slept"
    scale = "" if math.isinf(w.scale_s) else f" x exp(-hold / {1e6 * w.scale_s:.0f} us)"
    return (
        f"{100 * w.loss_at_zero:.2f} %{scale} of copies lost by {w.runs} runs whose capture "
        f"thread slept, their ring holding {1e6 * w.hold_min_s:.0f}-{1e6 * w.hold_max_s:.0f} us "
        f"of copies [x{w.band.low:.2f}-{w.band.high:.2f}]"
    )


def _json(value: object) -> object:
    """A value as JSON holds it (an infinite scale: null)."""
    return finite_or_none(value) if isinstance(value, float) else value


def _fixed(fixed: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k} {v:.1f}" for k, v in fixed.items()) + "}"

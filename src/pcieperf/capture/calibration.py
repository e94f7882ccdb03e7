"""The capture path's calibration file: the costs `capture model` prices, fitted by `capture
calibrate` from stored runs (`capture.fit`), with their spread and how well they predicted runs
they were not fitted to. Every number is checked when loaded (one line naming the key).

Costs are CPU nanoseconds per item of the thread that pays them, never wall rates: the runs
come from a shared machine whose threads get a varying share of a CPU (docs/capture.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf._config import load_toml
from pcieperf.capture.machine import Machine, of_rows
from pcieperf.capture.path import SINKS
from pcieperf.capture.tools import writers
from pcieperf.errors import ProfileError, UsageError, is_number, require_new_file
from pcieperf.outputs import write_text
from pcieperf.results import Report, finite_or_none

if TYPE_CHECKING:
    import pandas

    from pcieperf._values import Value

CALIBRATIONS = Path(__file__).parent / "calibrations"
DEFAULT_CALIBRATION = CALIBRATIONS / "debian12-dpdk22.11-2core.toml"
"""The calibration shipped: `capture calibrate` over this machine kind's real runs (its
[meta] names them; the runs themselves are the CSV beside it)."""


def runs_file(calibration: str | os.PathLike[str]) -> Path:
    """The runs a calibration was fitted to, as `capture calibrate` writes them beside it:
    `NAME-runs.csv` for `NAME.toml` (re-run the fit with `capture calibrate --csv` on it)."""
    path = Path(calibration)
    return path.parent / f"{path.stem}-runs.csv"


MAX_NS = 1e6  # a millisecond of CPU per packet is no packet path: a typo or a broken run
MAX_PER_BYTE_NS = 100.0  # 0.01 GB/s per core: slower than any memory copy
MAX_BAND = 100.0


@dataclass(frozen=True)
class Band:
    """Measured over fitted cost across the runs (their lowest and highest ratio): the spread
    a prediction's `_low`/`_high` bounds carry."""

    low: float = 1.0
    high: float = 1.0


@dataclass(frozen=True)
class Forwarding:
    """Forwarding-lcore CPU per forwarded packet without capture: base + per_byte x bytes."""

    base_ns: float
    per_byte_ns: float
    band: Band = field(default_factory=Band)

    def ns(self, pkt_bytes: Value) -> Value:
        """CPU ns per packet of `pkt_bytes` (the frame less its FCS): an array or a number."""
        return self.base_ns + self.per_byte_ns * pkt_bytes


@dataclass(frozen=True)
class Producer:
    """Forwarding-lcore CPU per copy (inside the Rx/Tx callbacks): fixed[capture path] + per_byte
    x captured bytes + (handoff + cold_byte x the bytes whose lines were no longer cached,
    `capture.pool`) x (the share of copies that reach the consumer: only their mbufs go round
    the pool)."""

    fixed_ns: dict[str, float]
    per_byte_ns: float
    handoff_ns: float
    cold_byte_ns: float = 0.0
    band: Band = field(default_factory=Band)


@dataclass(frozen=True)
class Consumer:
    """Capture-thread CPU per written record into one sink: fixed[writer] + per_byte x record
    bytes + write_call x write calls per record + cold_byte x the bytes it reads from lines
    that were no longer cached (`capture.pool`)."""

    fixed_ns: dict[str, float]
    per_byte_ns: float
    write_call_ns: float
    cold_byte_ns: float = 0.0
    band: Band = field(default_factory=Band)


@dataclass(frozen=True)
class Wakeup:
    """Copies lost while a capture thread that keeps up wakes from its sleeps: dpdk-dumpcap
    sleeps (usleep) once it finds its ring empty 1000 times running (app/dumpcap/main.c
    SLEEP_THRESHOLD), and a copy that arrives while the ring is full meanwhile is dropped. The
    share of copies lost by the runs whose thread slept, at their ring size; dpdk-pdump never
    sleeps."""

    loss: float = 0.0
    loss_low: float = 0.0
    loss_high: float = 0.0
    ring_size: int = 0
    runs: int = 0


@dataclass(frozen=True)
class Writes:
    """Write calls per record of each writer as measured: per_record + per_byte x record bytes
    (a writev per burst is a constant; stdio's buffer flushes once per buffer of bytes), and
    the pcapng Enhanced Packet Block's option bytes that DPDK's rte_pcapng_copy appends."""

    per_record: dict[str, float]
    per_byte: dict[str, float]
    pcapng_options_bytes: float


@dataclass(frozen=True)
class Meta:
    """Where the calibration comes from and how well it predicted runs it was not fitted to."""

    measured_on: str
    dpdk_version: str
    runs: list[int]
    procedure: str = "pcieperf capture calibrate (docs/capture.md#calibration)"
    not_separable: list[str] = field(default_factory=list)
    loso: dict[str, float] = field(default_factory=dict)  # leave-one-size-out judgement
    # the placement probe's limit of the runs fitted (inf: one placement) and the runs left out
    placement_max_slowdown: float = math.inf
    other_placement_runs: list[int] = field(default_factory=list)
    cache_bytes: int = 0  # the cache a pool kept in the runs (their probe's median; 0: unknown)
    placement_max_round_trip_ns: float = math.inf  # the in-run probe's limit (inf: none)
    cpu_model: str = ""  # the kind of machine the runs were made on ('': not recorded)
    cpus: int = 0


@dataclass(frozen=True)
class CaptureCalibration:
    """The capture path's fitted costs, the runs behind them and their judgement."""

    meta: Meta
    forwarding: Forwarding
    producer: Producer
    consumers: dict[str, Consumer]
    writes: Writes
    wakeup: Wakeup = field(default_factory=Wakeup)
    path: str = ""

    def consumer(self, sink: str) -> Consumer:
        """The consumer costs of a sink the runs measured."""
        if sink not in self.consumers:
            raise UsageError(
                f"sink {sink!r} is not in calibration {self.path or '(given)'}; it has "
                f"{', '.join(self.consumers)}"
            )
        return self.consumers[sink]


# --- reading ---------------------------------------------------------------------------------


def load_calibration(path: str | os.PathLike[str] = DEFAULT_CALIBRATION) -> CaptureCalibration:
    """Read and check a calibration file written by `calibration_toml`."""
    where = os.fspath(path)
    data = load_toml(Path(path), f"calibration {where}")
    tables = ("meta", "forwarding", "producer", "consumer", "writes")
    for name in tables:
        if not isinstance(data.get(name), dict):
            raise ProfileError(f"calibration {where}: missing [{name}] table")
    unknown = sorted(set(data) - {*tables, "wakeup"})
    if unknown:
        raise ProfileError(
            f"calibration {where}: unknown key {unknown[0]!r}; allowed: {', '.join(tables)}, wakeup"
        )
    check = _Checker(f"calibration {where}")
    known = tuple(writers())
    return CaptureCalibration(
        meta=check.meta(data["meta"]),
        forwarding=Forwarding(
            check.ns(data["forwarding"], "base_ns", "forwarding"),
            check.per_byte(data["forwarding"], "per_byte_ns", "forwarding"),
            check.band(data["forwarding"], "forwarding"),
        ),
        producer=Producer(
            check.costs(data["producer"], "fixed_ns", known, "producer"),
            check.per_byte(data["producer"], "per_byte_ns", "producer"),
            check.ns(data["producer"], "handoff_ns", "producer"),
            check.per_byte({"cold_byte_ns": 0.0} | data["producer"], "cold_byte_ns", "producer"),
            check.band(data["producer"], "producer"),
        ),
        consumers={
            sink: Consumer(
                check.costs(table, "fixed_ns", known, f"consumer.{sink}"),
                check.per_byte(table, "per_byte_ns", f"consumer.{sink}"),
                check.ns(table, "write_call_ns", f"consumer.{sink}"),
                check.per_byte({"cold_byte_ns": 0.0} | table, "cold_byte_ns", f"consumer.{sink}"),
                check.band(table, f"consumer.{sink}"),
            )
            for sink, table in check.sinks(data["consumer"]).items()
        },
        wakeup=check.wakeup(data.get("wakeup", {})),
        writes=Writes(
            check.costs(data["writes"], "per_record", known, "writes", high=100.0),
            check.costs(data["writes"], "per_byte", known, "writes", high=1.0),
            check.number(data["writes"], "pcapng_options_bytes", "writes", 0, 1024),
        ),
        path=where,
    )


class _Checker:
    """Reads one file's values, each finite and in range, else one line naming the key."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, key: str, value: object, allowed: str) -> ProfileError:
        return ProfileError(f"{self.origin}: {key} = {value!r} is not allowed; {allowed}")

    def number(self, table: dict[str, Any], key: str, where: str, low: float, high: float) -> float:
        value = table.get(key)
        if not is_number(value, low, high):
            raise self.fail(f"[{where}] {key}", value, f"use a number from {low:g} to {high:g}")
        return float(value)  # type: ignore[arg-type]  # a TOML number, checked above

    def ns(self, table: dict[str, Any], key: str, where: str) -> float:
        return self.number(table, key, where, 0, MAX_NS)

    def per_byte(self, table: dict[str, Any], key: str, where: str) -> float:
        return self.number(table, key, where, 0, MAX_PER_BYTE_NS)

    def band(self, table: dict[str, Any], where: str) -> Band:
        low = self.number(table, "band_low", where, 1 / MAX_BAND, 1)
        return Band(low, self.number(table, "band_high", where, 1, MAX_BAND))

    def costs(
        self,
        table: dict[str, Any],
        key: str,
        keys: tuple[str, ...],
        place: str,
        high: float = MAX_NS,
    ) -> dict[str, float]:
        found = table.get(key)
        if not isinstance(found, dict) or not found:
            raise self.fail(f"[{place}] {key}", found, f"give a table of {', '.join(keys)}")
        unknown = sorted(set(found) - set(keys))
        if unknown:
            raise self.fail(f"[{place}] {key}.{unknown[0]}", found[unknown[0]], f"use {keys}")
        return {k: self.number(found, k, f"{place}.{key}", 0, high) for k in found}

    def sinks(self, table: dict[str, Any]) -> dict[str, dict[str, Any]]:
        bad = [s for s, t in table.items() if s not in SINKS or not isinstance(t, dict)]
        if bad or not table:
            shown = bad[0] if bad else "(none)"
            raise self.fail("[consumer] sink", shown, f"give [consumer.SINK] for {SINKS}")
        return table

    def meta(self, table: dict[str, Any]) -> Meta:
        runs, loso = table.get("runs"), table.get("loso", {})
        if not (isinstance(runs, list) and runs and all(type(r) is int for r in runs)):
            raise self.fail("[meta] runs", runs, "list the stored run ids the fit used")
        for key in ("measured_on", "dpdk_version"):
            if not isinstance(table.get(key), str):
                raise self.fail(f"[meta] {key}", table.get(key), "give text")
        if not isinstance(loso, dict):
            raise self.fail("[meta] loso", loso, "give a table of numbers")
        return Meta(
            table["measured_on"],
            table["dpdk_version"],
            runs,
            str(table.get("procedure", Meta.procedure)),
            [str(v) for v in table.get("not_separable", [])],
            {k: self.number(loso, k, "meta.loso", 0, 1e6) for k in loso},
            self.limit(table, "placement_max_slowdown"),
            self.ids(table, "other_placement_runs"),
            int(self.number({"cache_bytes": 0} | table, "cache_bytes", "meta", 0, 2**40)),
            self.limit(table, "placement_max_round_trip_ns"),
            self.text({"cpu_model": ""} | table, "cpu_model"),
            int(self.number({"cpus": 0} | table, "cpus", "meta", 0, 2**20)),
        )

    def text(self, table: dict[str, Any], key: str) -> str:
        value = table.get(key)
        if not isinstance(value, str):
            raise self.fail(f"[meta] {key}", value, "give text")
        return value

    def wakeup(self, table: object) -> Wakeup:
        """The [wakeup] table; none (an earlier version's file): nothing lost on waking."""
        if not isinstance(table, dict):
            raise self.fail("[wakeup]", table, "give a table")
        if not table:
            return Wakeup()
        shares = [self.number(table, k, "wakeup", 0, 1) for k in ("loss", "loss_low", "loss_high")]
        if not shares[1] <= shares[0] <= shares[2]:
            raise self.fail("[wakeup] loss", shares[0], "keep loss_low <= loss <= loss_high")
        counts = [int(self.number(table, k, "wakeup", 0, 2**31)) for k in ("ring_size", "runs")]
        return Wakeup(shares[0], shares[1], shares[2], counts[0], counts[1])

    def limit(self, table: dict[str, Any], key: str) -> float:
        """A positive limit, or inf (TOML's `inf`) for none."""
        if table.get(key, math.inf) == math.inf:
            return math.inf
        return self.number(table, key, "meta", 1e-3, 1e6)

    def ids(self, table: dict[str, Any], key: str) -> list[int]:
        ids = table.get(key, [])
        if not (isinstance(ids, list) and all(type(r) is int for r in ids)):
            raise self.fail(f"[meta] {key}", ids, "list stored run ids")
        return ids


# --- writing ---------------------------------------------------------------------------------


def _toml_value(value: object) -> str:
    """A TOML value: numbers as Python writes them, text quoted, lists and inline tables."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(float(value) if isinstance(value, float) else value)


def calibration_toml(cal: CaptureCalibration, header: str = "") -> str:
    """The calibration as TOML that `load_calibration` reads back to the same values."""
    tables = [
        ("meta", asdict(cal.meta)),
        ("forwarding", _costs(cal.forwarding)),
        ("producer", _costs(cal.producer)),
        *((f"consumer.{sink}", _costs(c)) for sink, c in cal.consumers.items()),
        ("writes", asdict(cal.writes)),
        ("wakeup", asdict(cal.wakeup)),
    ]
    out = [
        "# Written by `pcieperf capture calibrate`; re-run it to regenerate (docs/capture.md).",
        *(f"# {line}" for line in header.splitlines()),
    ]
    for title, table in tables:
        out.append(f"\n[{title}]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
    return "\n".join(out) + "\n"


def _costs(costs: Forwarding | Producer | Consumer) -> dict[str, object]:
    """A cost table's keys, its band as band_low and band_high."""
    out = {f.name: getattr(costs, f.name) for f in fields(costs) if f.name != "band"}
    return out | {"band_low": costs.band.low, "band_high": costs.band.high}


# --- capture calibrate -----------------------------------------------------------------------


def stored_runs(
    runs: Iterable[int] | pandas.DataFrame = (),
    *,
    db: str | os.PathLike[str] | None = None,
    csv: str | os.PathLike[str] | None = None,
) -> pandas.DataFrame:
    """The capture runs asked for: a DataFrame as given, or the ids from an exported CSV or
    the store (`pp.capture_runs`); no ids: every run there."""
    import pandas

    if isinstance(runs, pandas.DataFrame):
        return runs
    if csv is not None:
        table = _runs_csv(Path(csv))
    else:
        from pcieperf.capture.records import capture_runs

        table = capture_runs(db=db).to_frame()
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


def capture_calibrate(
    runs: Iterable[int] | pandas.DataFrame = (),
    *,
    output: str | os.PathLike[str],
    force: bool = False,
    db: str | os.PathLike[str] | None = None,
    csv: str | os.PathLike[str] | None = None,
    measured_on: str | None = None,
) -> Report:
    """Fit the capture path's costs to stored capture runs and write the calibration file
    `output` (`pcieperf capture calibrate`), judged by leaving one frame size out: each
    size's runs predicted from a fit to the others'. `runs`: run ids (none: all) from the
    store `db` or an exported `csv`, or a DataFrame of runs; the runs used are written beside
    `output` (`runs_file`), so that the fit can be re-run from them."""
    from pcieperf.capture import fit, placement

    out = Path(output)
    require_new_file(out, force)
    rewrite_runs = force or runs_file(out) == Path(csv or "")  # its own runs, read back
    require_new_file(runs_file(out), rewrite_runs)
    table = stored_runs(runs, db=db, csv=csv)
    made_on = runs_machine(table)
    where = measured_on or (made_on.words if made_on else NO_MACHINE)
    limit, round_trip = placement.placement_limit(table), placement.round_trip_limit(table)
    near = placement.in_placement(table, limit, round_trip)
    fitted = fit.fit(table[near], where)
    held = fit.leave_one_size_out(table[near], where)
    judged = fit.judgement(held) | fit.other_placement(fitted, table[~near])
    others = sorted(int(r) for r in table.loc[~near, "run_id"])
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
    write_text(runs_file(out), table.to_csv(index=False), rewrite_runs)
    write_text(out, calibration_toml(cal), force)
    payload = {
        "output": str(out),
        "runs_file": str(runs_file(out)),
        "runs": cal.meta.runs,
        "measured_on": cal.meta.measured_on,
        "dpdk_version": cal.meta.dpdk_version,
        "forwarding": _costs(cal.forwarding),
        "producer": _costs(cal.producer),
        "consumer": {sink: _costs(c) for sink, c in cal.consumers.items()},
        "writes": asdict(cal.writes),
        "wakeup": asdict(cal.wakeup),
        "not_separable": cal.meta.not_separable,
        "loso": judged,
        "held_out": held.to_dict("records"),
        "placement": {
            "max_round_trip_ns": finite_or_none(meta.placement_max_round_trip_ns),
            "max_slowdown": finite_or_none(meta.placement_max_slowdown),
            "other_placement_runs": others,
        },
    }
    return Report(payload, _calibration_text(cal, held))


def _calibration_text(cal: CaptureCalibration, held: pandas.DataFrame) -> str:
    """What was written, the fitted costs and the leave-one-size-out table."""
    from pcieperf.results import format_table

    p, f, w = cal.producer, cal.forwarding, cal.wakeup
    lines = [
        f"wrote {cal.path} from {len(cal.meta.runs)} runs (beside it: {runs_file(cal.path).name}) "
        f"({cal.meta.dpdk_version}; {cal.meta.measured_on})",
        f"  forwarding  {f.base_ns:.2f} + {f.per_byte_ns:.4f}/B ns per packet "
        f"[x{f.band.low:.2f}-{f.band.high:.2f}]",
        f"  producer    {_fixed(p.fixed_ns)} + {p.per_byte_ns:.4f}/B + {p.cold_byte_ns:.4f}/cold B"
        f" + {p.handoff_ns:.1f} x delivered ns per copy [x{p.band.low:.2f}-{p.band.high:.2f}]",
        *(
            f"  consumer {sink:<6} {_fixed(c.fixed_ns)} + {c.per_byte_ns:.4f}/B + "
            f"{c.cold_byte_ns:.4f}/cold B + {c.write_call_ns:.0f} x calls ns per record "
            f"[x{c.band.low:.2f}-{c.band.high:.2f}]"
            for sink, c in cal.consumers.items()
        ),
        f"  wakeup      {100 * w.loss:.2f} % of copies lost by {w.runs} runs whose capture "
        f"thread slept [{100 * w.loss_low:.2f}-{100 * w.loss_high:.2f} %], ring {w.ring_size}",
        *(f"  not separable: {n}" for n in cal.meta.not_separable),
        *_placement_lines(cal.meta),
        "leave one frame size out (each size predicted from the other sizes' runs):",
    ]
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


def _fixed(fixed: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k} {v:.1f}" for k, v in fixed.items()) + "}"

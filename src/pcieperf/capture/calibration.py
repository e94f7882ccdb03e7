"""The capture path's calibration file: the costs `capture model` prices, fitted by `capture
calibrate` from stored runs (`capture.calibrate`, `capture.fit`), with their spread and how
well they predicted runs they were not fitted to. Every number is checked when loaded (one line
naming the key).

Costs are CPU nanoseconds per item of the thread that pays them, never wall rates: the runs
come from a shared machine whose threads get a varying share of a CPU (docs/capture.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf._config import load_toml
from pcieperf.capture.path import MODEL_SINKS
from pcieperf.capture.primitives import Probe, probe_of
from pcieperf.capture.tools import writers
from pcieperf.errors import ProfileError, UsageError, is_number

if TYPE_CHECKING:
    from pcieperf._values import Value

CALIBRATIONS = Path(__file__).parent / "calibrations"
DEFAULT_CALIBRATION = CALIBRATIONS / "debian12-dpdk22.11-2core.toml"
"""The calibration shipped: `capture calibrate` over this machine kind's real runs (its
[meta] names them; the runs themselves are the CSV beside it)."""


def machine_calibration(folder: Path, slug: str) -> Path:
    """Where `capture calibrate --here` keeps a machine's calibration and `capture model` looks
    for it: `capture/SLUG.toml` in `folder`, the store's (`primitives.probe_folder`, where
    probes are kept too; `Machine.slug` names the kind)."""
    return folder / "capture" / f"{slug}.toml"


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
    SLEEP_THRESHOLD), and the copies that arrive while it is away longer than its ring holds
    are dropped. So the share lost falls with the time the ring holds copies at their rate
    (`hold_s` = ring size / copies per second): loss_at_zero x exp(-hold_s / scale_s), an
    exponential tail of the time the thread is away, fitted to the runs whose thread slept
    (their hold times from hold_min_s to hold_max_s; `scale_s` inf: a loss the runs showed not
    to fall with it); `band`, their lowest and highest measured over fitted. A tool that never
    sleeps (dpdk-pdump) loses nothing this way."""

    loss_at_zero: float = 0.0
    scale_s: float = math.inf
    band: Band = field(default_factory=Band)
    hold_min_s: float = 0.0
    hold_max_s: float = 0.0
    runs: int = 0

    def loss(self, hold_s: Value, scale: float = 1.0) -> Value:
        """The share of copies lost with a ring that holds `hold_s` seconds of them (`scale`: a
        corner of the band)."""
        import numpy as np

        with np.errstate(over="ignore"):
            return np.minimum(
                1.0, scale * self.loss_at_zero * np.exp(-np.divide(hold_s, self.scale_s))
            )


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
    probe: Probe | None = None  # that machine's primitives (`capture probe`; None: not probed)


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
        bad = [s for s, t in table.items() if s not in MODEL_SINKS or not isinstance(t, dict)]
        if bad or not table:
            shown = bad[0] if bad else "(none)"
            raise self.fail("[consumer] sink", shown, f"give [consumer.SINK] for {MODEL_SINKS}")
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
            self.limit(table, "placement_max_slowdown", low=1.0),  # below 1 cannot be
            self.ids(table, "other_placement_runs"),
            int(self.number({"cache_bytes": 0} | table, "cache_bytes", "meta", 0, 2**40)),
            self.limit(table, "placement_max_round_trip_ns"),
            self.text({"cpu_model": ""} | table, "cpu_model"),
            int(self.number({"cpus": 0} | table, "cpus", "meta", 0, 2**20)),
            probe_of(table["probe"], self.origin) if "probe" in table else None,
        )

    def text(self, table: dict[str, Any], key: str) -> str:
        value = table.get(key)
        if not isinstance(value, str):
            raise self.fail(f"[meta] {key}", value, "give text")
        return value

    def wakeup(self, table: object) -> Wakeup:
        """The [wakeup] table; none (an earlier version's file): nothing lost on waking; an
        earlier version's constant share (`loss` and its lowest and highest): the same share
        at any hold time."""
        if not isinstance(table, dict):
            raise self.fail("[wakeup]", table, "give a table")
        if not table:
            return Wakeup()
        if "loss" in table:
            shares = [
                self.number(table, k, "wakeup", 0, 1) for k in ("loss", "loss_low", "loss_high")
            ]
            if not shares[1] <= shares[0] <= shares[2]:
                raise self.fail("[wakeup] loss", shares[0], "keep loss_low <= loss <= loss_high")
            band = Band(*(s / shares[0] if shares[0] else 1.0 for s in shares[1:]))
            runs = int(self.number(table, "runs", "wakeup", 0, 2**31))
            return Wakeup(shares[0], math.inf, band, runs=runs)
        holds = [self.number(table, k, "wakeup", 0, 1e3) for k in ("hold_min_s", "hold_max_s")]
        return Wakeup(
            self.number(table, "loss_at_zero", "wakeup", 0, 1),
            self.limit({"scale_s": math.inf} | table, "scale_s", "wakeup", low=1e-9),
            self.band(table, "wakeup"),
            holds[0],
            holds[1],
            int(self.number(table, "runs", "wakeup", 0, 2**31)),
        )

    def limit(
        self, table: dict[str, Any], key: str, where: str = "meta", low: float = 1e-3
    ) -> float:
        """A positive limit, or inf (TOML's `inf`) for none."""
        if table.get(key, math.inf) == math.inf:
            return math.inf
        return self.number(table, key, where, low, 1e6)

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
        ("meta", meta_table(cal.meta)),
        ("forwarding", cost_table(cal.forwarding)),
        ("producer", cost_table(cal.producer)),
        *((f"consumer.{sink}", cost_table(c)) for sink, c in cal.consumers.items()),
        ("writes", asdict(cal.writes)),
        ("wakeup", cost_table(cal.wakeup)),
    ]
    out = [
        "# Written by `pcieperf capture calibrate`; re-run it to regenerate (docs/capture.md).",
        *(f"# {line}" for line in header.splitlines()),
    ]
    for title, table in tables:
        out.append(f"\n[{title}]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
    return "\n".join(out) + "\n"


def meta_table(meta: Meta) -> dict[str, object]:
    """The [meta] table's keys, the probe as its table (none without one)."""
    out = {f.name: getattr(meta, f.name) for f in fields(meta) if f.name != "probe"}
    return out | ({"probe": meta.probe.table()} if meta.probe else {})


def cost_table(costs: Forwarding | Producer | Consumer | Wakeup) -> dict[str, object]:
    """A cost table's keys, its band as band_low and band_high."""
    out = {f.name: getattr(costs, f.name) for f in fields(costs) if f.name != "band"}
    return out | {"band_low": costs.band.low, "band_high": costs.band.high}

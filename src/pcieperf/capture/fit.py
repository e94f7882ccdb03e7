"""Fitting the capture path's costs to stored runs (`capture calibrate`), and judging the fit on
runs it was not fitted to (leave one frame size out).

Every cost is a least-squares fit of CPU ns per item of the thread that pays it (the runs'
schedstat CPU time, not wall rates: a shared machine gives each thread a varying share of a
CPU), with relative residuals (weights 1 / measured, so that a 30 ns and a 300 ns run count
alike) and costs kept >= 0 (scipy's NNLS):

  forwarding, per packet, no capture (net_null runs)   base + per_byte x bytes
  producer, per copy: (fwd_cpu_ns - fwd_cpu_ns_no_capture) / copies_per_packet
                                                       fixed[path] + per_byte x captured
                                                       + (handoff + cold_byte x cold bytes,
                                                       capture.pool) x delivered share
  consumer, per record written, per sink (saturated runs: they lost copies and their capture
  thread did not sleep; one that sleeps had CPU to spare, so its CPU per record is an upper
  bound)                                               fixed[writer] + per_byte x record bytes
                                                       it touches (path.touches_bytes)
                                                       + cold_byte x cold bytes it touches
                                                       + write_call x write calls per record
  write calls per record, per writer                   per_record + per_byte x record bytes
  copies lost on waking (runs that slept), against       at_zero x exp(-hold / scale)
  the time their ring held copies (hold)

A term the runs cannot separate from those before it (its column, weighted, lies within 1 %
of their span: a delivered share that never moves, write calls that never vary apart from the
bytes) is left out, its cost counted in the others, and named in [meta] not_separable.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import nnls

from pcieperf.capture.calibration import (
    Band,
    CaptureCalibration,
    Consumer,
    Forwarding,
    Meta,
    Producer,
    Wakeup,
    Writes,
)
from pcieperf.capture.costs import (
    PCAPNG_EPB_BYTES,
    captured_bytes,
    copy_costs,
    prices,
    record_bytes,
    wakeup_of,
    write_calls,
)
from pcieperf.capture.flow import LIMITS, limited_by, solve
from pcieperf.capture.path import FORMATS, MODEL_SINKS, SINKS, touches_bytes
from pcieperf.capture.pool import cold_bytes
from pcieperf.capture.tools import names, tool, writer_name
from pcieperf.capture.verdicts import SATURATED, ring_hold_s, slept
from pcieperf.errors import UsageError
from pcieperf.net.wire import FCS_BYTES

Array = NDArray[np.float64]
SEPARABLE = 0.01  # a term whose column lies within 1 % of the others' span is not separable
COUNTED = 100  # copies lost: a count of 100 is sure to +-10 % (1 / sqrt), fewer are less
HOLD_COLUMNS = ("ring_size", "copies", "written", "capture_pps")  # verdicts.ring_hold_s's
REQUIRED = (
    "run_id",
    "dpdk_version",
    "tool",
    "port",
    "frame_bytes",
    "copies_per_packet",
    "format",
    "snaplen",
    "ring_size",
    "sink",
    "fwd_pps",
    "fwd_cpu_ns_no_capture",
    "fwd_cpu_ns",
    "fwd_cpu_share",
    "copies",
    "written",
    "capture_pps",
    "capture_cpu_ns",
    "capture_cpu_share",
    "bytes_per_record",
    "write_calls_per_packet",
)


def prepared(runs: pd.DataFrame, options_bytes: float | None = None) -> pd.DataFrame:
    """The runs with what the fit reads: bytes DMA'd and captured, record bytes, the capture
    path (`writer`), the delivered share and the producer's CPU per copy."""
    missing = [c for c in REQUIRED if c not in runs.columns]
    if missing:
        raise UsageError(f"capture runs lack column {missing[0]!r}; see docs/capture.md")
    if runs.empty:
        raise UsageError("no capture runs given; `pcieperf capture runs` lists the stored ones")
    check_runs(runs)
    d = runs.copy()
    d["pkt"] = d["frame_bytes"].astype(float) - FCS_BYTES
    d["cap"] = captured_bytes(d["frame_bytes"].to_numpy(float), d["snaplen"].to_numpy())
    d["writer"] = [writer_name(t, f) for t, f in zip(d["tool"], d["format"], strict=True)]
    options = pcapng_options(d) if options_bytes is None else options_bytes
    computed = np.where(
        d["format"] == "pcap",
        record_bytes("pcap", d["cap"].to_numpy(), options),
        record_bytes("pcapng", d["cap"].to_numpy(), options),
    )
    d["rec"] = np.where(d["bytes_per_record"] > 0, d["bytes_per_record"], computed)
    d["share"] = d["written"] / d["copies"].clip(lower=1)
    pools = [tool(t).pool_mbufs(int(r)) for t, r in zip(d["tool"], d["ring_size"], strict=True)]
    d["pool"] = _optional(d, "pool_mbufs").fillna(pd.Series(pools, index=d.index))
    d["cold"] = cold_bytes(
        d["pool"].to_numpy(float), d["cap"].to_numpy(float), _optional(d, "cache_bytes").to_numpy()
    )
    d["slept"] = slept(_optional(d, "capture_sleeps_per_s").to_numpy())
    d["saturated"] = (1 - d["share"] > SATURATED) & ~d["slept"]
    d["prod_ns"] = (d["fwd_cpu_ns"] - d["fwd_cpu_ns_no_capture"]) / d["copies_per_packet"]
    d["hold_s"] = ring_hold_s(*(d[c].to_numpy(float) for c in HOLD_COLUMNS))
    d.attrs["pcapng_options_bytes"] = options
    return d


def _optional(d: pd.DataFrame, column: str) -> pd.Series:
    """A column that runs stored by an earlier version lack (NaN there)."""
    values = d[column] if column in d else pd.Series(np.nan, index=d.index)
    return pd.to_numeric(values, errors="coerce").astype(float)


PRICED_PORTS = ("null", "pcap")
"""The ports whose runs the model prices: net_null and a pcap replay (not a wire's)."""
HELD_OUT_COLUMNS = (  # leave_one_size_out's rows
    "run_id",
    "frame_bytes",
    "sink",
    "writer",
    "capture_pps",
    "capture_pps_predicted",
    "penalty_ns",
    "penalty_ns_predicted",
    "limited_by",
    "limited_by_predicted",
)


def _choices() -> dict[str, tuple[str, ...]]:
    """The values a run's text columns may have."""
    return {"tool": names(), "port": PRICED_PORTS, "format": FORMATS, "sink": SINKS}


def unpriced(runs: pd.DataFrame) -> pd.Series:
    """The runs the model does not price: a wire port's, one queue's or a filtered run."""
    found = ~runs["port"].isin(PRICED_PORTS)
    for column in ("queue", "capture_filter"):  # a run stored before them has neither
        if column in runs:
            found |= runs[column].notna()
    return found


POSITIVE = (
    "frame_bytes",
    "copies_per_packet",
    "fwd_cpu_ns_no_capture",
    "fwd_cpu_ns",
    "fwd_cpu_share",
    "copies",
    "capture_cpu_ns",
    "capture_cpu_share",
)
FINITE = (
    "snaplen",
    "ring_size",
    "written",
    "capture_pps",
    "bytes_per_record",
    "write_calls_per_packet",
)


def check_runs(runs: pd.DataFrame) -> None:
    """Refuse a run the fit cannot read, in one line naming it and the value."""
    for column, allowed in _choices().items():
        bad = runs[~runs[column].isin(allowed)]
        if len(bad):
            _refuse(bad, column, f"use one of {', '.join(allowed)}")
    for column in ("queue", "capture_filter"):  # a run stored before them has neither
        if column in runs and len(bad := runs[runs[column].notna()]):
            _refuse(bad, column, "the model prices copies of every queue, unfiltered")
    for run, name, fmt in zip(runs["run_id"], runs["tool"], runs["format"], strict=True):
        if fmt not in tool(name).formats:
            raise UsageError(f"capture run {run}: {name} writes no {fmt}")
    for columns, low, words in ((POSITIVE, 0, "> 0"), (FINITE, -np.inf, "finite")):
        for column in columns:
            values = pd.to_numeric(runs[column], errors="coerce")
            bad = runs[~(np.isfinite(values) & (values > low))]
            if len(bad):
                _refuse(bad, column, f"it must be a number {words}")


def _refuse(bad: pd.DataFrame, column: str, allowed: str) -> None:
    run, value = bad["run_id"].iloc[0], bad[column].iloc[0]
    shown = repr(value.item() if hasattr(value, "item") else value)
    raise UsageError(f"capture run {run}: {column} = {shown} is not allowed; {allowed}")


def pcapng_options(d: pd.DataFrame) -> float:
    """Option bytes per pcapng record: the median of file bytes per record less the block and
    the padded data, over the pcapng runs that wrote a file (0 where none did)."""
    files = d[(d["format"] == "pcapng") & (d["bytes_per_record"] > 0)]
    padded = 4 * np.ceil(files["cap"] / 4)
    extra = files["bytes_per_record"] - PCAPNG_EPB_BYTES - padded
    return float(max(0.0, extra.median())) if len(extra) else 0.0


def least_squares(columns: dict[str, Array], y: Array) -> tuple[dict[str, float], list[str]]:
    """Costs >= 0 minimising the relative residuals, over the columns the data separates (in
    the order given); a column of zeros (a key no run has) is absent, one the data cannot
    separate is named in the second value."""
    weight = 1 / np.maximum(np.abs(y), 1e-9)
    kept: list[str] = []
    dropped = []
    for name, column in columns.items():
        if not np.any(column):
            continue
        if kept:
            span = np.column_stack([columns[k] for k in kept]) * weight[:, None]
            own = column * weight
            rest = own - span @ np.linalg.lstsq(span, own, rcond=None)[0]
            if np.linalg.norm(rest) <= SEPARABLE * np.linalg.norm(own):
                dropped.append(name)
                continue
        kept.append(name)
    if not kept:
        raise UsageError("the capture runs give nothing to fit (no run has a usable value)")
    matrix = np.column_stack([columns[k] for k in kept]) * weight[:, None]
    coef, _ = nnls(matrix, y * weight)
    return dict(zip(kept, coef.tolist(), strict=True)), dropped


def _band(measured: Array, fitted: Array) -> Band:
    """The lowest and highest measured / fitted ratio, with 1 inside."""
    ratio = measured / np.maximum(fitted, 1e-9)
    return Band(float(min(1.0, ratio.min())), float(max(1.0, ratio.max())))


def _keyed(d: pd.DataFrame, column: str, prefix: str) -> dict[str, Array]:
    """One indicator column per value of `column` (`prefix:value`)."""
    return {f"{prefix}:{k}": (d[column] == k).to_numpy(float) for k in sorted(d[column].unique())}


def fit_forwarding(d: pd.DataFrame) -> Forwarding:
    """Forwarding CPU per packet without capture, over the net_null runs (all if none)."""
    runs = d[d["port"] == "null"] if (d["port"] == "null").any() else d
    y = runs["fwd_cpu_ns_no_capture"].to_numpy(float)
    columns = {"base_ns": np.ones(len(runs)), "per_byte_ns": runs["pkt"].to_numpy(float)}
    coef, _ = least_squares(columns, y)
    fwd = Forwarding(coef.get("base_ns", 0.0), coef.get("per_byte_ns", 0.0))
    return Forwarding(fwd.base_ns, fwd.per_byte_ns, _band(y, fwd.ns(columns["per_byte_ns"])))


def _fit_costs(
    y: Array, keyed: dict[str, Array], terms: dict[str, Array]
) -> tuple[dict[str, float], dict[str, float], Band, list[str]]:
    """A fixed cost per key and the `terms`: the fixed costs by key, every coefficient, the
    band of the fit and the terms it could not separate."""
    columns = keyed | terms
    coef, dropped = least_squares(columns, y)
    fixed = {k.split(":")[1]: v for k, v in coef.items() if k.startswith("fixed:")}
    fitted = sum((coef[k] * columns[k] for k in coef), np.zeros_like(y))
    return fixed, coef, _band(y, fitted), dropped


Costed = TypeVar("Costed", Producer, Consumer)


def _fitted(
    kind: type[Costed], fixed: dict[str, float], coef: dict[str, float], band: Band
) -> Costed:
    """A cost table from a fit: its fixed costs, its band and each term's coefficient (term
    `x` is field `x_ns`; 0 where the runs left it out)."""
    names = [f.name for f in fields(kind) if f.name not in ("fixed_ns", "band")]
    return kind(fixed, band=band, **{n: coef.get(n.removesuffix("_ns"), 0.0) for n in names})


def fit_producer(d: pd.DataFrame) -> tuple[Producer, list[str]]:
    """The producer's CPU per copy, over every run."""
    terms = {
        "per_byte": d["cap"].to_numpy(float),
        "handoff": d["share"].to_numpy(float),
        # only delivered copies go round the whole pool; dropped ones return to the lcore's cache
        "cold_byte": (d["cold"] * d["share"]).to_numpy(float),
    }
    fixed, coef, band, dropped = _fit_costs(
        d["prod_ns"].to_numpy(float), _keyed(d, "writer", "fixed"), terms
    )
    return _fitted(Producer, fixed, coef, band), [f"producer.{k}" for k in dropped]


def fit_consumer(d: pd.DataFrame, sink: str) -> tuple[Consumer, list[str]]:
    """The consumer's CPU per record into one sink, over its saturated runs and the runs of
    writers that never saturated it (their CPU per record, an upper bound, is all there is);
    all its runs if too few are saturated to separate the terms."""
    runs = d[d["sink"] == sink]
    never = ~runs["writer"].isin(runs.loc[runs["saturated"], "writer"])
    notes = [
        f"consumer.{sink}.{w}: no saturated runs; its runs that kept up used (an upper bound)"
        for w in sorted(runs.loc[never, "writer"].unique())
    ]
    saturated = runs[runs["saturated"] | never]
    if runs["saturated"].sum() < 3:
        notes = [f"consumer.{sink}: fewer than 3 saturated runs; all its runs used"]
        saturated = runs
    touched = np.array([touches_bytes(str(w), sink) for w in saturated["writer"]], dtype=float)
    # Write calls first: into /dev/null only stdio writers touch bytes, and they call write
    # once per 4 KiB, so the two are one term there; the per-call cost then carries it (what
    # the study's per-packet writes, priced per call, need).
    terms = {
        "write_call": saturated["write_calls_per_packet"].to_numpy(float),
        "per_byte": saturated["rec"].to_numpy(float) * touched,
        "cold_byte": saturated["cold"].to_numpy(float) * touched,
    }
    fixed, coef, band, dropped = _fit_costs(
        saturated["capture_cpu_ns"].to_numpy(float), _keyed(saturated, "writer", "fixed"), terms
    )
    return _fitted(Consumer, fixed, coef, band), notes + [f"consumer.{sink}.{k}" for k in dropped]


def fit_writes(d: pd.DataFrame) -> Writes:
    """Write calls per record of each writer: per_record + per_byte x record bytes."""
    per_record, per_byte = {}, {}
    for writer, runs in d[d["write_calls_per_packet"] >= 0].groupby("writer"):
        y = runs["write_calls_per_packet"].to_numpy(float)
        columns = {"per_record": np.ones(len(runs)), "per_byte": runs["rec"].to_numpy(float)}
        coef, _ = least_squares(columns, y)
        per_record[str(writer)] = coef.get("per_record", 0.0)
        per_byte[str(writer)] = coef.get("per_byte", 0.0)
    return Writes(per_record, per_byte, float(d.attrs["pcapng_options_bytes"]))


def fit_wakeup(d: pd.DataFrame) -> tuple[Wakeup, list[str]]:
    """The share of copies lost on waking by the runs whose capture thread slept (it had CPU to
    spare), against the time their ring held copies: log(lost) = log(at_zero) - hold / scale,
    least squares, each run weighted as the count of copies it lost is sure (its relative error
    1 / sqrt(count)), one that lost none counted as losing one; a line that would lose more than
    every copy at no hold is made to lose all of them there (at_zero = 1: the runs' holds far
    from zero, the free line's extrapolation gave 301); one hold time, or a loss that does not
    fall with it, gives a constant share (their weighted geometric mean), named in the second
    value."""
    runs = d[d["slept"]]
    if runs.empty:
        return Wakeup(), []
    hold = runs["hold_s"].to_numpy(float)
    copies = runs["copies"].clip(lower=1).to_numpy(float)
    lost = np.maximum(1 - runs["share"].clip(upper=1).to_numpy(float), 1 / copies)
    logs = np.log(lost)
    weights = np.sqrt(lost * copies)  # a count's relative error: 1 / sqrt(copies lost)
    spread = np.ptp(hold) > 0.01 * hold.max()
    slope, at_zero = np.polyfit(hold, logs, 1, w=weights) if spread else (0.0, 0.0)
    if at_zero > 0:  # log(1): through it, least squares with the same weights
        slope, at_zero = np.sum(weights**2 * hold * logs) / np.sum(weights**2 * hold**2), 0.0
    notes = []
    if slope >= 0:
        held = f"{1e6 * hold.min():.0f}-{1e6 * hold.max():.0f} us"
        notes = [f"wakeup.scale: the runs' loss does not fall with their ring's hold ({held})"]
        slope, at_zero = 0.0, float(np.average(logs, weights=weights**2))
    found = Wakeup(float(np.exp(at_zero)), -1 / slope if slope < 0 else math.inf)
    counted = lost * copies >= COUNTED  # a ratio of fewer copies lost is the counting's
    band = _band(lost[counted], np.asarray(found.loss(hold[counted]))) if counted.any() else Band()
    fitted = replace(found, band=band, hold_min_s=hold.min(), hold_max_s=hold.max(), runs=len(runs))
    return fitted, notes


def fit(runs: pd.DataFrame, measured_on: str) -> CaptureCalibration:
    """Every cost of the capture path, fitted to `runs` (the contract's columns)."""
    d = prepared(runs)
    producer, notes = fit_producer(d)
    consumers = {}
    for sink in sorted(set(d["sink"]) & set(MODEL_SINKS)):  # a user's file: its disk's costs
        consumers[str(sink)], dropped = fit_consumer(d, str(sink))
        notes += dropped
    wakeup, constant = fit_wakeup(d)
    notes += constant
    versions = sorted(d["dpdk_version"].astype(str).unique())
    runs_used = sorted(int(r) for r in d["run_id"])
    cache = _optional(d, "cache_bytes").dropna()
    meta = Meta(
        measured_on,
        ", ".join(versions),
        runs_used,
        not_separable=notes,
        cache_bytes=int(cache.median()) if len(cache) else 0,
    )
    return CaptureCalibration(meta, fit_forwarding(d), producer, consumers, fit_writes(d), wakeup)


# --- predicting stored runs, and the judgement ------------------------------------------------


def predict(cal: CaptureCalibration, d: pd.DataFrame) -> pd.DataFrame:
    """What the calibration predicts for each prepared run, given what the run itself had:
    its own forwarding cost without capture, its threads' CPU shares (a whole CPU for a
    capture thread that slept: it had more than it used), net_null's unlimited arrivals.
    Columns: capture_pps, fwd_pps, penalty_ns (forwarding CPU added per packet),
    limited_by."""
    out = []
    for (sink, writer), runs in d.groupby(["sink", "writer"]):
        rec = runs["rec"].to_numpy(float)
        costs = copy_costs(
            cal,
            str(sink),
            str(writer),
            runs["fwd_cpu_ns_no_capture"].to_numpy(float),
            runs["cap"].to_numpy(float),
            rec,
            write_calls(cal, str(writer), rec),
            runs["cold"].to_numpy(float),
        )
        copies = runs["copies_per_packet"].to_numpy(float)
        flow = solve(
            costs.fwd_ns,
            costs.prod_ns,
            costs.handoff_ns,
            costs.cons_ns,
            copies=copies,
            lcores=runs["fwd_cpu_share"].to_numpy(float),
            cores=np.where(runs["slept"], 1.0, runs["capture_cpu_share"].to_numpy(float)),
            arrivals=np.inf,
            wakeup_loss=wakeup_of(cal, str(writer)).loss(runs["hold_s"].to_numpy(float)),
        )
        inf = np.full(len(runs), np.inf)
        out.append(
            pd.DataFrame(
                {
                    "capture_pps": flow.capture_pps,
                    "fwd_pps": flow.fwd_pps,
                    "penalty_ns": copies * (costs.prod_ns + costs.handoff_ns * flow.delivered),
                    "limited_by": limited_by(flow, flow.consumer_pps, inf, inf, inf),
                },
                index=runs.index,
            )
        )
    return pd.concat(out).loc[d.index]


def measured_limit(d: pd.DataFrame) -> NDArray[np.str_]:
    """What limited each run: its consumer where it lost copies without sleeping, else its
    forwarding lcores (net_null arrivals have no line)."""
    return np.where(d["saturated"], LIMITS[0], LIMITS[2])


def _ape(predicted: pd.Series, measured: pd.Series) -> pd.Series:
    return 100 * (predicted - measured).abs() / measured.abs()


def leave_one_size_out(runs: pd.DataFrame, measured_on: str = "") -> pd.DataFrame:
    """For each frame size, fit on the other sizes' runs and predict its runs: one row per
    held-out run with measured and predicted capture pps, forwarding penalty (ns per packet)
    and what limited it."""
    d = prepared(runs)
    sizes = d["frame_bytes"].round().astype(int)
    if sizes.nunique() < 2:
        raise UsageError("leaving one size out needs runs of at least two frame sizes")
    held = []
    for size in sorted(sizes.unique()):
        train, test = d[sizes != size], d[(sizes == size) & d["sink"].isin(MODEL_SINKS)]
        if test.empty:
            continue
        try:
            cal = fit(runs.loc[train.index], measured_on)
            found = predict(cal, prepared(runs.loc[test.index], d.attrs["pcapng_options_bytes"]))
        except UsageError:  # a writer or sink only this size has: nothing to predict it from
            continue
        held.append(
            pd.DataFrame(
                {
                    "run_id": test["run_id"],
                    "frame_bytes": size,
                    "sink": test["sink"],
                    "writer": test["writer"],
                    "capture_pps": test["capture_pps"],
                    "capture_pps_predicted": found["capture_pps"],
                    "penalty_ns": test["prod_ns"] * test["copies_per_packet"],
                    "penalty_ns_predicted": found["penalty_ns"],
                    "limited_by": measured_limit(test),
                    "limited_by_predicted": found["limited_by"],
                }
            )
        )
    if not held:
        raise UsageError("no frame size could be predicted from the others' runs")
    return pd.concat(held, ignore_index=True)[list(HELD_OUT_COLUMNS)]


def other_placement(cal: CaptureCalibration, runs: pd.DataFrame) -> dict[str, float]:
    """How runs in another placement of the two CPUs compare with a fit to the calibration's
    placement: their median measured over predicted forwarding penalty (none: no key), of
    the runs whose capture path and sink the calibration prices."""
    runs = runs[runs["sink"].isin(MODEL_SINKS)]
    if runs.empty:
        return {}
    d = prepared(runs, cal.writes.pcapng_options_bytes)
    d = d[[prices(cal, w, s) for w, s in zip(d["writer"], d["sink"], strict=True)]]
    if d.empty:
        return {}
    penalty = predict(cal, d)["penalty_ns"]
    ratio = d["prod_ns"] * d["copies_per_packet"] / penalty
    return {"other_placement_penalty_ratio": float(ratio.median())}


def judgement(held: pd.DataFrame) -> dict[str, float]:
    """Leave-one-size-out MAPE of capture pps and of the forwarding penalty, per sink and over
    all, and the share of runs whose limit was predicted right ([meta] loso)."""
    out = {}
    for sink, runs in [("all", held), *held.groupby("sink")]:
        out[f"capture_pps_mape_pct_{sink}"] = float(
            _ape(runs["capture_pps_predicted"], runs["capture_pps"]).mean()
        )
        out[f"penalty_mape_pct_{sink}"] = float(
            _ape(runs["penalty_ns_predicted"], runs["penalty_ns"]).mean()
        )
        right = runs["limited_by"] == runs["limited_by_predicted"]
        out[f"limited_by_right_pct_{sink}"] = float(100 * right.mean())
    out["runs_predicted"] = float(len(held))
    return out

"""What one measured bandwidth row does to a prediction (issue 45), for scripts/crossval.py.

Leave one row out: for a host held out of the calibration, every row of its bw_*.csv files is
given to the predictor alone beside its latency files and facts (in memory: the host's parsed
folder with that row as its only bandwidth table, what `bench predict --host` reads from a
folder holding a one-row file), and the window sweeps without that row are scored against the
latency files alone on the same points. Rising tails: how far each host's 64 B window sweeps
climb back past their trough, against what would tell a window mechanism from scatter.
"""

from dataclasses import dataclass, replace

import numpy as np

from pcieperf.pciebench import pin, validate
from pcieperf.pciebench.bench import Point, file_kind
from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.host import LATENCY_SWEEP_FILE, HostRun
from pcieperf.pciebench.predict import SIM_TRANSACTIONS
from pcieperf.pciebench.sim import HostProfile, simulate

WINDOW_PREFIX = "bw_dma_win_sweep_"
TAIL_FILES = {"reads": "bw_dma_win_sweep_rd_rnd_64.csv", "writes": "bw_dma_win_sweep_wr_rnd_64.csv"}
PAST_KNEE = 1 << 20  # every IOTLB knee of the data set lies below 1 MiB (docs/crossval.md)
CACHE_STATES = ("Cold", "DThrash", "DWarm", "HWarm")


@dataclass(frozen=True)
class RowsOut:
    """One host's leave-one-row-out: how many rows it has and what the pin did with them, the
    window sweeps' MAPE (%) from latency files alone and with each row, and the latency-only
    interval's median relative width (%) there."""

    past: np.ndarray  # per row given: whether its window misses in the IOTLB (weighed)
    used: int
    moved: int
    alone: float
    width: float
    with_row: np.ndarray
    alone_without_row: np.ndarray
    worst: str

    @property
    def excess(self) -> np.ndarray:
        """How much worse (MAPE points) each row makes the rest than latency files alone."""
        return self.with_row - self.alone_without_row


def one_row_runs(run: HostRun) -> list[tuple[str, int, HostRun]]:
    """(file, row index, the host's folder with that row as its only bandwidth table) for
    every bandwidth row of `run`."""
    latency = {k: v for k, v in run.tables.items() if file_kind(k) != "bw"}
    out = []
    for name in sorted(k for k in run.tables if file_kind(k) == "bw"):
        columns = run.tables[name]
        for j in range(columns["bw_gbps"].size):
            one = {c: v[j : j + 1] for c, v in columns.items()}
            out.append((name, j, replace(run, tables={**latency, name: one})))
    return out


def _points(matched: validate.Matched) -> list[Point]:
    """The simulator's points of matched rows (key columns without the ordinal)."""
    return [Point(*k[: len(validate.KEY_NAMES)]) for k in matched.keys]


def _mape(predicted: np.ndarray, measured: np.ndarray, keep: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(predicted[keep] / measured[keep] - 1)))


def leave_one_row_out(run: HostRun, calibration: Calibration, alone: validate.Matched) -> RowsOut:
    """Every row of `run` given alone to the predictor (`pin.prepare`) beside its latency files
    and facts; `alone` is the latency-only prediction matched to the measurement."""
    window = np.char.startswith(alone.file.astype(str), WINDOW_PREFIX)
    sweeps = alone.subset(window)
    points = _points(sweeps)
    latency = {k: v for k, v in run.tables.items() if file_kind(k) != "bw"}
    prior = pin.prepare(replace(run, tables=latency), calibration).host
    cache: dict[HostProfile, np.ndarray] = {prior: sweeps.predicted}
    with_row, without, labels, past = [], [], [], []
    used = moved = 0
    for name, j, one in one_row_runs(run):
        prepared = pin.prepare(one, calibration)
        weighed = prepared.pins[0].rows if prepared.pins else ()
        past.append(bool(weighed))
        used += any(r.used for r in weighed)
        moved += prepared.host != prior
        if prepared.host not in cache:
            cache[prepared.host] = _simulated(points, prepared.host, calibration)
        row_key = tuple(run.tables[name][k][j] for k in validate.KEY_NAMES)
        rest = np.array([not (f == name and k[:-1] == row_key) for f, k in _keyed(sweeps)])
        with_row.append(_mape(cache[prepared.host], sweeps.measured, rest))
        without.append(_mape(sweeps.predicted, sweeps.measured, rest))
        labels.append(_label(name, row_key))
    excess = np.array(with_row) - np.array(without)
    return RowsOut(
        np.array(past),
        used,
        moved,
        _mape(sweeps.predicted, sweeps.measured, np.ones(window.sum(), bool)),
        float(100 * np.median(sweeps.relative_width)),
        np.array(with_row),
        np.array(without),
        labels[int(np.argmax(excess))] if excess.max() > 0 else "none worse",
    )


def _keyed(matched: validate.Matched) -> list[tuple[str, tuple]]:
    return list(zip(matched.file.tolist(), matched.keys, strict=True))


def _simulated(points: list[Point], host: HostProfile, calibration: Calibration) -> np.ndarray:
    return np.array(
        [simulate(p, host, calibration.device, SIM_TRANSACTIONS).bw_gbps for p in points]
    )


def _label(file: str, key: tuple) -> str:
    """'rd 64 B Cold 64 MiB' for a row of a window sweep; the file and size otherwise."""
    names = dict(zip(validate.KEY_NAMES, key, strict=True))
    window = names["window_bytes"]
    where = f"{window >> 20} MiB" if window >= 1 << 20 else f"{window >> 10} KiB"
    kind = file.removeprefix(WINDOW_PREFIX)[:2] if file.startswith(WINDOW_PREFIX) else file[:-4]
    return f"{kind} {names['size_bytes']} B {names['cache']} {where}"


def rows_table_row(host: str, out: RowsOut) -> str:
    """A host's line of the leave-one-row-out table."""
    worst = out.excess.max()
    past = out.with_row[out.past] if out.past.any() else np.array([out.alone])
    return (
        f"| {host} | {out.past.size} | {out.past.sum()} | {out.used} | {out.moved} "
        f"| {out.alone:.1f} | {past.min():.1f} | {np.median(past):.1f} | {out.with_row.max():.1f} "
        f"| {out.worst} | {worst:+.1f} | {out.width:.0f} "
        f"| {'yes' if worst <= out.width else '**no**'} |"
    )


def rows_summary(outs: list[tuple[str, RowsOut]]) -> list[str]:
    """The claim over all hosts: the largest excess against its host's interval width."""
    host, out = max(outs, key=lambda o: o[1].excess.max())
    holds = all(o.excess.max() <= o.width for _, o in outs)
    moved = sum(o.moved for _, o in outs)
    return [
        f"- {sum(o.past.size for _, o in outs)} single rows over {len(outs)} hosts: no host gets "
        "worse than from its latency files alone by more than its interval's width with any "
        f"one of them: {'holds' if holds else '**fails**'}. The largest excess: {host}, "
        f"{out.worst}, {out.excess.max():+.1f} points against a width of {out.width:.0f} %",
        f"- rows that moved the walker: {moved}; used without moving it (they agree with the "
        f"latency-derived point): {sum(o.used for _, o in outs) - moved}",
    ]


def _sweep(run: HostRun, file: str, cache: str) -> tuple[np.ndarray, np.ndarray]:
    """(windows, Gb/s) of one cache state of a window sweep, by window."""
    cols = run.tables[file]
    keep = cols["cache"] == cache
    order = np.argsort(cols["window_bytes"][keep])
    return cols["window_bytes"][keep][order], cols["bw_gbps"][keep][order]


def rise(run: HostRun, file: str) -> str:
    """The largest climb (%) from a sweep's trough past the knee to its 64 MiB row over the
    cache states, its state, and the largest of the other states."""
    rises = {}
    for cache in CACHE_STATES:
        window, bw = _sweep(run, file, cache)
        rises[cache] = 100 * (bw[-1] / bw[window >= PAST_KNEE].min() - 1)
    first, *others = sorted(rises, key=lambda s: -rises[s])
    return f"{rises[first]:+.0f} {first}, others <= {rises[others[0]]:+.0f}"


def cold_vs_thrash(run: HostRun) -> float:
    """Largest difference (%) between the Cold and DThrash rows of the 64 B sweeps past the
    knee: two preparations the steady hosts do not tell apart there."""
    gaps = []
    for file in TAIL_FILES.values():
        window, cold = _sweep(run, file, "Cold")
        _, thrash = _sweep(run, file, "DThrash")
        gaps.append(np.abs(thrash / cold - 1)[window >= PAST_KNEE])
    return float(100 * np.max(np.concatenate(gaps)))


def latency_span(run: HostRun) -> float:
    """Span (ns) of the Cold median latency over the sweep's windows from 4 MiB on: a walk
    that got cheaper as the window grows would lower its large windows."""
    sweep = run.tables[LATENCY_SWEEP_FILE]
    keep = (sweep["cache"] == "Cold") & (sweep["window_bytes"] >= 4 << 20)
    return float(np.ptp(sweep["med_ns"][keep]))


def tail_coverage(alone: validate.Matched) -> float:
    """Share (%) of the 64 B sweeps' rows past the knee inside the latency-only interval."""
    window = np.array([k[validate.KEY_NAMES.index("window_bytes")] for k in alone.keys])
    keep = np.isin(alone.file, list(TAIL_FILES.values())) & (window >= PAST_KNEE)
    return float(100 * alone.covered[keep].mean())


def tail_row(host: str, steadiness: float, run: HostRun, alone: validate.Matched) -> str:
    """A host's line of the rising-tail table."""
    reads, writes = (rise(run, f) for f in TAIL_FILES.values())
    return (
        f"| {host} | {steadiness:.0f} | {reads} | {writes} "
        f"| {cold_vs_thrash(run):.1f} | {latency_span(run):.0f} | {tail_coverage(alone):.0f} |"
    )

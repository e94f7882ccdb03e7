"""Compare predicted pcie-bench bandwidth results with measured ones.

Rows are matched on the key columns (Test, PAT, Cache, HO, DO, WinSZ, SZ) file by file; the
error of a point is |predicted / measured - 1|. The *acceptance set* is what issue 3 judges:
the size sweep from 64 B up and the eight window sweeps. Where the predicted directory holds
`bounds.csv` (`bench predict`), each point also has a prediction interval: *coverage* is the
share of measured points inside [low, high], *relative width* (high - low) / predicted.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf.errors import UsageError
from pcieperf.pciebench.bench import KEY_COLUMNS, STORE_NAMES, file_kind, read_result_csv
from pcieperf.pciebench.calibrate import ACCEPTANCE_FILES, MIN_FIT_SIZE
from pcieperf.pciebench.predict import BOUNDS_FILE

OFFSET_PREFIX = "bw_dma_off_"  # the offset sweeps (host and device offsets)

KEY_NAMES = tuple(STORE_NAMES[c] for c in KEY_COLUMNS)  # store names of the key columns


@dataclass(frozen=True)
class Matched:
    """Measured and predicted bandwidth of the points two result directories share."""

    file: NDArray
    test: NDArray
    keys: list[tuple]
    measured: NDArray
    predicted: NDArray
    low: NDArray  # interval bounds; NaN where the prediction has no bounds.csv
    high: NDArray

    @property
    def error(self) -> NDArray:
        """Absolute relative error of every point."""
        return np.abs(self.predicted / self.measured - 1.0)

    @property
    def in_acceptance_set(self) -> NDArray:
        """Points of the size sweep (>= 64 B) and the window sweeps."""
        size = np.array([k[KEY_NAMES.index("size_bytes")] for k in self.keys])
        return np.isin(self.file, ACCEPTANCE_FILES) & (size >= MIN_FIT_SIZE)

    @property
    def in_offset_sweeps(self) -> NDArray:
        """Points of the bw_dma_off_* files."""
        return np.char.startswith(self.file.astype(str), OFFSET_PREFIX)

    @property
    def covered(self) -> NDArray:
        """Whether each measured point lies inside its interval (False without one)."""
        return (self.low <= self.measured) & (self.measured <= self.high)

    @property
    def relative_width(self) -> NDArray:
        """(high - low) / predicted of every point (NaN without an interval)."""
        return (self.high - self.low) / self.predicted

    @property
    def beyond_bound(self) -> NDArray:
        """How far each measured point lies outside its interval, relative to the bound it
        passed: measured / high - 1 above it (> 0), measured / low - 1 below it (< 0), 0
        inside, NaN without an interval."""
        above = np.maximum(self.measured / self.high - 1.0, 0.0)
        below = np.minimum(self.measured / self.low - 1.0, 0.0)
        return above + below

    def subset(self, keep: NDArray) -> Matched:
        """The points where `keep` is true (e.g. without the rows a prediction was pinned to)."""
        return Matched(
            file=self.file[keep],
            test=self.test[keep],
            keys=[k for k, kept in zip(self.keys, keep, strict=True) if kept],
            measured=self.measured[keep],
            predicted=self.predicted[keep],
            low=self.low[keep],
            high=self.high[keep],
        )


def _bandwidth_files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory")
    return {p.name: p for p in sorted(directory.glob("bw_*.csv")) if file_kind(p.name) == "bw"}


def _rows(path: Path) -> dict[tuple, tuple[str, float]]:
    """Rows by key; a key the file repeats (the offset sweeps' HO = DO = 0) gets its ordinal."""
    cols = read_result_csv(path).columns
    seen: dict[tuple, int] = {}
    rows = {}
    for key, bw in zip(
        zip(*(cols[k].tolist() for k in KEY_NAMES), strict=True),
        cols["bw_gbps"].tolist(),
        strict=True,
    ):
        seen[key] = seen.get(key, -1) + 1
        rows[(*key, seen[key])] = (key[0], bw)
    return rows


def _bounds(path: Path) -> dict[tuple, tuple[float, float]]:
    """(file, key..., ordinal) -> (low, high) from a bounds.csv; empty if there is none."""
    if not path.is_file():
        return {}
    seen: dict[tuple, int] = {}
    out = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            key = (row["file"], *_typed_key(row))
            seen[key] = seen.get(key, -1) + 1
            out[(*key, seen[key])] = (float(row["bw_low_gbps"]), float(row["bw_high_gbps"]))
    return out


def _typed_key(row: dict[str, str]) -> tuple:
    """A bounds.csv row's key columns typed as read_result_csv types them."""
    return tuple(
        row[c] if c in ("Test", "PAT", "Cache") else int(float(row[c])) for c in KEY_COLUMNS
    )


def match(measured: Path, predicted: Path) -> Matched:
    """Pair up the rows of every bandwidth file present in both directories."""
    real, guess = _bandwidth_files(measured), _bandwidth_files(predicted)
    bounds = _bounds(predicted / BOUNDS_FILE)
    common = sorted(set(real) & set(guess))
    if not common:
        raise UsageError(f"{measured} and {predicted} share no bandwidth result file (bw_*.csv)")
    files, tests, keys, m, p, lo, hi = [], [], [], [], [], [], []
    for name in common:
        truth, model = _rows(real[name]), _rows(guess[name])
        for key in truth.keys() & model.keys():
            files.append(name)
            tests.append(truth[key][0])
            keys.append(key)
            m.append(truth[key][1])
            p.append(model[key][1])
            low, high = bounds.get((name, *key), (np.nan, np.nan))
            lo.append(low)
            hi.append(high)
    order = sorted(range(len(keys)), key=lambda i: (files[i], keys[i]))
    pick = np.asarray(order, dtype=np.int64)
    return Matched(
        file=np.asarray(files)[pick],
        test=np.asarray(tests)[pick],
        keys=[keys[i] for i in order],
        measured=np.asarray(m, dtype=np.float64)[pick],
        predicted=np.asarray(p, dtype=np.float64)[pick],
        low=np.asarray(lo, dtype=np.float64)[pick],
        high=np.asarray(hi, dtype=np.float64)[pick],
    )


def interval_stats(matched: Matched, mask: NDArray) -> dict | None:
    """Coverage (%) and median relative width (%) of the points in `mask` that have bounds."""
    keep = mask & np.isfinite(matched.low)
    if not keep.any():
        return None
    beyond = np.abs(matched.beyond_bound[keep])
    return {
        "points": int(keep.sum()),
        "coverage_pct": round(100 * float(matched.covered[keep].mean()), 1),
        "median_relative_width_pct": round(100 * float(np.median(matched.relative_width[keep])), 1),
        "outside_points": int(np.count_nonzero(beyond)),
        "max_beyond_bound_pct": round(100 * float(beyond.max()), 1),
    }


def _percent(value: float) -> float | None:
    """A ratio as a rounded percentage; None for NaN (no interval)."""
    return round(100 * value, 2) if np.isfinite(value) else None


def point_rows(matched: Matched) -> list[dict]:
    """Every matched point with its interval and how far beyond it it lies (`validate
    --points`)."""
    return [_point(matched, i) for i in range(matched.measured.size)]


def _point(matched: Matched, i: int) -> dict:
    """One matched point: file, key columns, measured, predicted, its interval and how far
    the measurement lies beyond it."""
    low, high = (float(v[i]) for v in (matched.low, matched.high))
    return {
        "file": str(matched.file[i]),
        **dict(zip(KEY_NAMES, matched.keys[i][: len(KEY_NAMES)], strict=True)),
        "measured_gbps": round(float(matched.measured[i]), 3),
        "predicted_gbps": round(float(matched.predicted[i]), 3),
        "error_pct": round(float(matched.error[i] * 100), 2),
        "low_gbps": round(low, 3) if np.isfinite(low) else None,
        "high_gbps": round(high, 3) if np.isfinite(high) else None,
        "beyond_bound_pct": _percent(float(matched.beyond_bound[i])),
    }


def summary(matched: Matched, worst: int = 5) -> dict:
    """MAPE per file, per test, over all points and over the acceptance set; interval coverage
    and how far points lie beyond their intervals; the worst points."""
    err = matched.error * 100
    accept = matched.in_acceptance_set

    def mape(mask: NDArray) -> float | None:
        return round(float(err[mask].mean()), 2) if mask.any() else None

    worst_idx = np.argsort(-err)[:worst]
    every = np.ones_like(accept)
    offsets = matched.in_offset_sweeps
    return {
        "points": int(err.size),
        "mape_pct": mape(every),
        "mape_without_offset_pct": mape(~offsets),
        "acceptance_points": int(accept.sum()),
        "acceptance_mape_pct": mape(accept),
        "intervals": {
            name: interval_stats(matched, mask)
            for name, mask in (("all", every), ("without_offset", ~offsets), ("acceptance", accept))
        },
        "per_file": {f: mape(matched.file == f) for f in np.unique(matched.file).tolist()},
        "per_test": {t: mape(matched.test == t) for t in np.unique(matched.test).tolist()},
        "worst": [_point(matched, int(i)) for i in worst_idx],
    }

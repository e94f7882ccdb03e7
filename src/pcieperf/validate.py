"""Compare predicted pcie-bench bandwidth results with measured ones.

Rows are matched on the key columns (Test, PAT, Cache, HO, DO, WinSZ, SZ) file by file; the
error of a point is |predicted / measured - 1|. The *acceptance set* is what issue 3 judges:
the size sweep from 64 B up and the eight window sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf.bench import KEY_COLUMNS, STORE_NAMES, file_kind, read_result_csv
from pcieperf.calibrate import FIT_FILES, MIN_FIT_SIZE
from pcieperf.errors import UsageError

KEY_NAMES = tuple(STORE_NAMES[c] for c in KEY_COLUMNS)  # store names of the key columns


@dataclass(frozen=True)
class Matched:
    """Measured and predicted bandwidth of the points two result directories share."""

    file: NDArray
    test: NDArray
    keys: list[tuple]
    measured: NDArray
    predicted: NDArray

    @property
    def error(self) -> NDArray:
        """Absolute relative error of every point."""
        return np.abs(self.predicted / self.measured - 1.0)

    @property
    def in_acceptance_set(self) -> NDArray:
        """Points of the size sweep (>= 64 B) and the window sweeps."""
        size = np.array([k[KEY_NAMES.index("size_bytes")] for k in self.keys])
        return np.isin(self.file, FIT_FILES) & (size >= MIN_FIT_SIZE)


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


def match(measured: Path, predicted: Path) -> Matched:
    """Pair up the rows of every bandwidth file present in both directories."""
    real, guess = _bandwidth_files(measured), _bandwidth_files(predicted)
    common = sorted(set(real) & set(guess))
    if not common:
        raise UsageError(f"{measured} and {predicted} share no bandwidth result file (bw_*.csv)")
    files, tests, keys, m, p = [], [], [], [], []
    for name in common:
        truth, model = _rows(real[name]), _rows(guess[name])
        for key in truth.keys() & model.keys():
            files.append(name)
            tests.append(truth[key][0])
            keys.append(key)
            m.append(truth[key][1])
            p.append(model[key][1])
    order = sorted(range(len(keys)), key=lambda i: (files[i], keys[i]))
    pick = np.asarray(order, dtype=np.int64)
    return Matched(
        file=np.asarray(files)[pick],
        test=np.asarray(tests)[pick],
        keys=[keys[i] for i in order],
        measured=np.asarray(m, dtype=np.float64)[pick],
        predicted=np.asarray(p, dtype=np.float64)[pick],
    )


def summary(matched: Matched, worst: int = 5) -> dict:
    """MAPE per file, per test, over all points and over the acceptance set; worst points."""
    err = matched.error * 100
    accept = matched.in_acceptance_set

    def mape(mask: NDArray) -> float | None:
        return round(float(err[mask].mean()), 2) if mask.any() else None

    worst_idx = np.argsort(-err)[:worst]
    return {
        "points": int(err.size),
        "mape_pct": mape(np.ones_like(accept)),
        "acceptance_points": int(accept.sum()),
        "acceptance_mape_pct": mape(accept),
        "per_file": {f: mape(matched.file == f) for f in np.unique(matched.file).tolist()},
        "per_test": {t: mape(matched.test == t) for t in np.unique(matched.test).tolist()},
        "worst": [
            {
                "file": str(matched.file[i]),
                **dict(zip(KEY_NAMES, matched.keys[i][: len(KEY_NAMES)], strict=True)),
                "measured_gbps": round(float(matched.measured[i]), 3),
                "predicted_gbps": round(float(matched.predicted[i]), 3),
                "error_pct": round(float(err[i]), 2),
            }
            for i in worst_idx
        ],
    }

"""Pin what a host's latency files leave open from bandwidth rows in its folder (issue 29).

One idle latency sweep shows how long an IOTLB walk takes, not how many walks run at once; one
bandwidth row past the IOTLB knee does. `prepare` builds everything `bench predict` simulates
for a host (`Prepared`): where the folder holds `bw_*.csv` rows whose window misses in the
IOTLB, the walker's busy time per miss is fitted to them through the same simulator the
prediction runs, and the provenance says which rows decided, the value and its bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pcieperf.pciebench import calibrate
from pcieperf.pciebench.bench import Point, file_kind
from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.device import DeviceProfile
from pcieperf.pciebench.host import HostRun, iotlb_miss
from pcieperf.pciebench.predict import SIM_TRANSACTIONS, Band
from pcieperf.pciebench.sim import HostProfile, simulate
from pcieperf.pciebench.walker import interval_hosts

HOST_BANDWIDTH = "host bandwidth fit"  # a provenance source beside calibrate's
MAX_PIN_ROWS = 16  # a full result folder has ~300 rows past the knee; the deepest few suffice
_KEY_COLUMNS = ("test", "pattern", "cache", "host_offset", "dev_offset", "window_bytes")


@dataclass(frozen=True)
class PinRow:
    """A measured bandwidth row a pin was fitted to, and what the fitted host gives there."""

    file: str
    point: Point
    measured_gbps: float
    fitted_gbps: float = float("nan")

    def to_json(self) -> dict:
        """The row as `bench predict --json` lists it."""
        p = self.point
        return {
            "file": self.file,
            **dict(zip((*_KEY_COLUMNS, "size_bytes"), _key(p), strict=True)),
            "measured_gbps": round(self.measured_gbps, 3),
            "fitted_gbps": round(self.fitted_gbps, 3),
        }

    def text(self) -> str:
        """'file Test Cache WinSZ SZ: measured / simulated Gb/s' for a provenance line."""
        p = self.point
        return (
            f"{self.file} {p.test} {p.cache} {p.window} B window {p.size} B: "
            f"{self.measured_gbps:.2f} Gb/s measured, {self.fitted_gbps:.2f} simulated"
        )


def _key(p: Point) -> tuple:
    return (p.test, p.pattern, p.cache, p.host_offset, p.dev_offset, p.window, p.size)


@dataclass(frozen=True)
class Pin:
    """A host parameter fitted to the host's own bandwidth rows: its value, the values that
    fit the rows within the calibration's spread (`low`, `high`) and the range searched."""

    parameter: str
    value: float
    low: float
    high: float
    search: tuple[float, float]
    rows: tuple[PinRow, ...]

    def to_json(self) -> dict:
        """The pin as `bench predict --json` reports it (under `pinned`, by parameter)."""
        return {
            "value": round(self.value, 2),
            "low": round(self.low, 2),
            "high": round(self.high, 2),
            "search_low": round(self.search[0], 2),
            "search_high": round(self.search[1], 2),
            "rows": [r.to_json() for r in self.rows],
        }


@dataclass(frozen=True)
class Prepared:
    """What `bench predict` simulates for a host: the point profile, the alternative profiles
    of its interval, each row's band, the provenance and the pins that decided."""

    host: HostProfile
    alternatives: list[HostProfile]
    band: Band
    provenance: list[dict]
    pins: list[Pin]


def bandwidth_rows(run: HostRun) -> list[PinRow]:
    """Every measured row of the host's bw_*.csv files, in file order."""
    rows = []
    for name in sorted(run.tables):
        if file_kind(name) != "bw":
            continue
        cols = run.tables[name]
        keys = zip(*(cols[k].tolist() for k in (*_KEY_COLUMNS, "size_bytes")), strict=True)
        for (test, pattern, cache, ho, do, window, size), bw in zip(
            keys, cols["bw_gbps"].tolist(), strict=True
        ):
            point = Point(test, pattern, cache, int(ho), int(do), int(window), int(size))
            rows.append(PinRow(name, point, float(bw)))
    return rows


def walker_rows(rows: list[PinRow], host: HostProfile) -> list[PinRow]:
    """The rows that miss in the host's IOTLB, those missing most first, at most MAX_PIN_ROWS
    (rows without misses say nothing of the walker)."""
    windows = np.array([r.point.window for r in rows], dtype=np.float64)
    miss = iotlb_miss(windows, host.iotlb_entries, host.iommu)
    order = [i for i in np.argsort(-miss, kind="stable") if miss[i] > 0]
    return [rows[i] for i in order[:MAX_PIN_ROWS]]


def _simulated(rows: list[PinRow], host: HostProfile, device: DeviceProfile, n: int) -> np.ndarray:
    return np.array([simulate(r.point, host, device, transactions=n).bw_gbps for r in rows])


def fit_busy(
    rows: list[PinRow],
    targets: np.ndarray,
    host: HostProfile,
    device: DeviceProfile,
    search: tuple[float, float],
    transactions: int = SIM_TRANSACTIONS,
) -> float:
    """The walker busy time per miss (one walker) within `search` whose simulated bandwidth of
    `rows` is closest to `targets` (least squares of the log ratio, over log busy time)."""
    from scipy.optimize import minimize_scalar  # only pinning needs scipy; keep the CLI quick

    def cost(log_busy: float) -> float:
        trial = replace(host, walk_busy_ns=float(np.exp(log_busy)), walkers=1)
        return float(np.sum(np.log(_simulated(rows, trial, device, transactions) / targets) ** 2))

    bounds = np.log(search)
    result = minimize_scalar(cost, bounds=tuple(bounds), method="bounded", options={"xatol": 1e-3})
    return float(np.exp(result.x))


def pin_walker(
    run: HostRun, calibration: Calibration, host: HostProfile, transactions: int = SIM_TRANSACTIONS
) -> Pin | None:
    """The walker's busy time fitted to the host's bandwidth rows past its IOTLB knee; None
    where the host has no such row.

    Searched from one walk at a time (busy for the whole `walk_ns`) to as many walks at once
    as the device has tags (no more transactions are in flight). `low`/`high` are the busy
    times that fit the rows scaled by the calibration's spread for their category (measured /
    fitted, 2.5th and 97.5th percentile): what one global device fit cannot tell apart.
    """
    rows = walker_rows(bandwidth_rows(run), host) if host.iotlb_entries else []
    if not rows:
        return None
    device = calibration.device
    search = (host.walk_ns / device.tags, host.walk_ns)
    measured = np.array([r.measured_gbps for r in rows])
    bands = np.array([calibration.spread.band(_category(r.point)) for r in rows])
    fit = [
        fit_busy(rows, measured / scale, host, device, search, transactions)
        for scale in (np.ones(len(rows)), bands[:, 0], bands[:, 1])
    ]
    pinned = replace(host, walk_busy_ns=fit[0], walkers=1)
    simulated = _simulated(rows, pinned, device, transactions)
    done = tuple(replace(r, fitted_gbps=float(s)) for r, s in zip(rows, simulated, strict=True))
    return Pin("walk_busy_ns", fit[0], min(fit), max(fit), search, done)


def _category(point: Point) -> str:
    return calibrate.category(point.test, True, point.pattern, point.dev_offset)


def _pin_why(pin: Pin, host: HostProfile, calibration: Calibration) -> str:
    """Which rows decided the walker, the fitted value, its bounds and the range searched."""
    shared = calibration.shared
    shown = "; ".join(r.text() for r in pin.rows[:2])
    more = f" (+{len(pin.rows) - 2} more rows)" if len(pin.rows) > 2 else ""
    at_bound = (
        " (at the end of the range searched)"
        if not (pin.search[0] * 1.01 < pin.value < pin.search[1] * 0.99)
        else ""
    )
    return (
        f"{shown}{more}: {pin.value:.1f} ns per miss{at_bound}, {host.walk_ns / pin.value:.1f} "
        f"walks of {host.walk_ns:.0f} ns at once; {pin.low:.1f}..{pin.high:.1f} ns fit within "
        f"the calibration's spread; searched {pin.search[0]:.1f}..{pin.search[1]:.0f} ns (1 to "
        f"{calibration.device.tags} walks at once); calibrated {shared.walk_busy_ns:.1f} ns on "
        f"{', '.join(shared.walker_generations) or 'no'} hosts"
    )


def prepare(
    run: HostRun, calibration: Calibration, transactions: int = SIM_TRANSACTIONS
) -> Prepared:
    """The host profile, interval and provenance `bench predict` uses for a host's folder:
    latency files and facts as `calibrate.host_profile` reads them, the walker pinned by the
    folder's bandwidth rows where they reach past the IOTLB knee."""
    host = calibrate.host_profile(run, calibration)
    pin = pin_walker(run, calibration, host, transactions)
    if pin is None:
        alternatives = interval_hosts(run, calibration, host)
        return Prepared(
            host,
            alternatives,
            calibrate.interval_band(run, calibration, host),
            calibrate.provenance(run, calibration, host),
            [],
        )
    host = replace(host, walk_busy_ns=pin.value, walkers=1)
    why = _pin_why(pin, host, calibration)
    pinned = {
        "walk_busy_ns": (round(pin.value, 2), HOST_BANDWIDTH, why),
        "walkers": (
            1,
            HOST_BANDWIDTH,
            "busy time fitted with one walker: only its ratio to "
            "the walk latency (walks at once) is observable",
        ),
    }
    rows = [
        dict(zip(row, (row["parameter"], *pinned[row["parameter"]]), strict=True))
        if row["parameter"] in pinned
        else row
        for row in calibrate.provenance(run, calibration, host)
    ]
    return Prepared(host, [], calibrate.interval_band(run, calibration, host), rows, [pin])

"""Pin what a host's latency files leave open from bandwidth rows in its folder (issues 29, 45).

One idle latency sweep shows how long an IOTLB walk takes, not how many walks run at once; a
bandwidth row past the IOTLB knee does. `prepare` builds everything `bench predict` simulates
for a host (`Prepared`): every `bw_*.csv` row in the folder whose window misses in the IOTLB is
weighed first (`pciebench.weigh`): a row moves the walker's busy time per miss only where the
model reaches it with physically possible walkers and the latency files' shape does not decide
it, and only with the rows it agrees with. Rows not used leave the latency-derived point, widen
the interval to include them and are named in the provenance with the reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from pcieperf.pciebench import calibrate
from pcieperf.pciebench.bench import UNSTEADY_RATIO
from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.device import DeviceProfile
from pcieperf.pciebench.host import HostRun, steadiness
from pcieperf.pciebench.predict import SIM_TRANSACTIONS, Band
from pcieperf.pciebench.sim import HostProfile
from pcieperf.pciebench.walker import interval_hosts
from pcieperf.pciebench.weigh import (
    PinRow,
    Weighed,
    bandwidth_rows,
    simulated,
    stretch,
    weigh,
    with_busy,
)
from pcieperf.text import plural

HOST_BANDWIDTH = "host bandwidth fit"  # a provenance source beside calibrate's


@dataclass(frozen=True)
class Pin:
    """A host parameter weighed against the host's own bandwidth rows: its value, the values
    the rows used allow (`low`, `high`), the range searched, every row weighed, whether any
    was used and why."""

    parameter: str
    value: float
    low: float
    high: float
    search: tuple[float, float]
    rows: tuple[PinRow, ...]
    used: bool
    why: str = ""

    def to_json(self) -> dict:
        """The pin as `bench predict --json` reports it (under `pinned`, by parameter)."""
        return {
            "value": round(self.value, 2),
            "low": round(self.low, 2),
            "high": round(self.high, 2),
            "search_low": round(self.search[0], 2),
            "search_high": round(self.search[1], 2),
            "used": self.used,
            "why": self.why,
            "rows": [r.to_json() for r in self.rows],
        }


@dataclass(frozen=True)
class Prepared:
    """What `bench predict` simulates for a host: the point profile, the alternative profiles
    of its interval, each row's band, the provenance and the pins weighed."""

    host: HostProfile
    alternatives: list[HostProfile]
    band: Band
    provenance: list[dict]
    pins: list[Pin]


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

    if search[1] <= search[0] * 1.01:  # the rows leave (almost) one value
        return float(np.sqrt(search[0] * search[1]))

    def cost(log_busy: float) -> float:
        trial = with_busy(host, float(np.exp(log_busy)))
        return float(np.sum(np.log(simulated(rows, trial, device, transactions) / targets) ** 2))

    bounds = np.log(search)
    result = minimize_scalar(cost, bounds=tuple(bounds), method="bounded", options={"xatol": 1e-3})
    return float(np.exp(result.x))


def _unused_text(rows: list[PinRow]) -> str:
    """The first row not used and why, and how many others were not (by reason)."""
    unused = [r for r in rows if not r.used]
    if not unused:
        return ""
    kinds = Counter(r.why.split(":")[0] for r in unused[1:])
    more = "; ".join(f"{n} more: {kind}" for kind, n in kinds.items())
    return f"not used: {unused[0].text()} ({unused[0].why}){'; ' + more if more else ''}"


def _stalls(run: HostRun) -> str:
    """What an unsteady host's stalls do to its rows, for the pin's why ('' if steady)."""
    ratio = steadiness(run)
    if ratio <= UNSTEADY_RATIO:
        return ""
    return (
        f"this host stalls (latency p99.9 {ratio:.0f}x the median): a row's band spans what the "
        "stalls may do to one run; "
    )


def _pin_why(pin: Pin, host: HostProfile, calibration: Calibration, given: int) -> str:
    """Which rows decided the walker, the fitted value, its bounds, the range searched and
    which rows were not used and why."""
    shared = calibration.shared
    used = [r for r in pin.rows if r.used]
    head = f"{plural(given, 'row')} given, {len(pin.rows)} past the IOTLB knee"
    unused = _unused_text(list(pin.rows))
    if not used:
        return (
            f"{head}, none used: the latency-derived point stays, its interval widened where "
            f"they lie outside it; {unused}"
        )
    shown = "; ".join(f"{r.text()} ({r.why})" for r in used[:2])
    more = f" (+{len(used) - 2} more rows)" if len(used) > 2 else ""
    return (
        f"{head}; used {shown}{more}: {pin.value:.1f} ns per miss, {host.walk_ns / pin.value:.1f} "
        f"walks of {host.walk_ns:.0f} ns at once; {pin.low:.1f}..{pin.high:.1f} ns fit the rows "
        f"used within their bands; searched {pin.search[0]:.1f}..{pin.search[1]:.0f} ns (1 to "
        f"{calibration.device.tags} walks at once); calibrated {shared.walk_busy_ns:.1f} ns on "
        f"{', '.join(shared.walker_generations) or 'no'} hosts{'; ' + unused if unused else ''}"
    )


def _pinned(
    run: HostRun, calibration: Calibration, prior: Prepared, given: list[PinRow], n: int
) -> Prepared:
    """`prior` (what the latency files give) after weighing the folder's rows that miss."""
    host, device = prior.host, calibration.device
    weighed = weigh(run, host, device, prior.band, given, n)
    used = any(r.used for r in weighed.rows)
    low, high = weighed.shared
    value, fitted = _value(weighed, host, device, n) if used else (host.walk_busy_ns, False)
    pinned = with_busy(host, value) if used else host
    rows = [
        replace(r, fitted_gbps=float(s))
        for r, s in zip(weighed.rows, simulated(weighed.rows, pinned, device, n), strict=True)
    ]
    if used:
        alternatives = [] if fitted else _clamped(prior.alternatives, low, high)
    else:
        busy = [h.walk_busy_ns for h in (host, *prior.alternatives)]
        low, high, alternatives = min(busy), max(busy), prior.alternatives
    pin = Pin("walk_busy_ns", value, low, high, weighed.search, tuple(rows), used)
    pin = replace(pin, why=_stalls(run) + _pin_why(pin, pinned, calibration, len(given)))
    band = stretch(rows, pinned, prior.band)
    provenance = _provenance(run, calibration, pinned, pin)
    return Prepared(pinned, alternatives, band, provenance, [pin])


def _value(
    weighed: Weighed, host: HostProfile, device: DeviceProfile, n: int
) -> tuple[float, bool]:
    """(busy time per miss, whether rows fixed it): the latency-derived point where the rows
    used agree with it; else the best fit to the rows that fix a value, or the point moved
    into the range the rows allow where none does."""
    low, high = weighed.shared
    if low <= host.walk_busy_ns <= high:
        return host.walk_busy_ns, False
    if not weighed.deciding:
        return float(np.clip(host.walk_busy_ns, low, high)), False
    measured = np.array([r.measured_gbps for r in weighed.deciding])
    return fit_busy(weighed.deciding, measured, host, device, weighed.shared, n), True


def _clamped(hosts: list[HostProfile], low: float, high: float) -> list[HostProfile]:
    """The alternative walkers moved into the busy range the rows allow (each value once)."""
    busy = sorted({float(np.clip(h.walk_busy_ns, low, high)) for h in hosts})
    return [with_busy(hosts[0], b) for b in busy] if hosts else []


_WALKERS_WHY = (
    "busy time fitted with one walker: only its ratio to the walk latency (walks at once) is "
    "observable"
)


def _provenance(run: HostRun, calibration: Calibration, host: HostProfile, pin: Pin) -> list[dict]:
    """calibrate.provenance for `host`, the walker's rows saying what the bandwidth rows did:
    their source where they were used, why they were not where none was."""

    def walker(row: dict) -> dict:
        if pin.used:
            why = pin.why if row["parameter"] == "walk_busy_ns" else _WALKERS_WHY
            return {**row, "source": HOST_BANDWIDTH, "why": why}
        if row["parameter"] == "walk_busy_ns":
            return {**row, "why": f"{row['why']}; bandwidth rows: {pin.why}"}
        return row

    rows = calibrate.provenance(run, calibration, host)
    return [walker(r) if r["parameter"] in ("walk_busy_ns", "walkers") else r for r in rows]


def prepare(
    run: HostRun, calibration: Calibration, transactions: int = SIM_TRANSACTIONS
) -> Prepared:
    """The host profile, interval and provenance `bench predict` uses for a host's folder:
    latency files and facts as `calibrate.host_profile` reads them, the walker weighed against
    the folder's bandwidth rows past the IOTLB knee, where there are any."""
    host = calibrate.host_profile(run, calibration)
    prior = Prepared(
        host,
        interval_hosts(run, calibration, host),
        calibrate.interval_band(run, calibration, host),
        calibrate.provenance(run, calibration, host),
        [],
    )
    given = bandwidth_rows(run)
    if not (given and host.iotlb_entries):
        return prior
    return _pinned(run, calibration, prior, given, transactions)

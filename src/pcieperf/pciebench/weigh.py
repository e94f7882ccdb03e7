"""Weigh a host's measured bandwidth rows before they move the IOTLB walker (issue 45).

`bandwidth_rows` reads every row of a host's bw_*.csv files (`PinRow`). A row moves the walker's
busy time per miss only where the model reaches it with physically possible walkers
(`search_range`) and the latency files' own shape does not decide it: `feasible` finds the busy
times whose simulated bandwidth, with any IOTLB reach the latency sweep cannot tell apart from
the fitted one (`reach_range`), lies within the row's band of the measurement; none means the
model cannot reach the row, all of them that the row says nothing of the walker. `weigh`
screens, ranges and compares the rows (`consistent`: a row whose range misses the value most
of them hold is left out); `stretch` widens the interval to include the rows outside it.
docs/bench.md, "Weighing a row".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from pcieperf.pciebench import calibrate
from pcieperf.pciebench.bench import SMALL_PAGE_BYTES, Point, file_kind
from pcieperf.pciebench.device import DeviceProfile
from pcieperf.pciebench.host import LATENCY_SWEEP_FILE, HostRun, iotlb_miss
from pcieperf.pciebench.predict import Band
from pcieperf.pciebench.sim import HostProfile, simulate

BISECTIONS = 10  # halvings of the log busy range: ~0.3 % on the 1..32 walks searched
MAX_WEIGHED = 16  # a full result folder has ~320 rows past the knee; the deepest few suffice
Search = tuple[float, float]  # busy times per miss (ns): as many walks at once as tags .. one
_NOT_WEIGHED = f"not weighed: {MAX_WEIGHED} rows that miss more, or as much and move more, were"
_KEY_COLUMNS = ("test", "pattern", "cache", "host_offset", "dev_offset", "window_bytes")


@dataclass(frozen=True)
class PinRow:
    """A measured bandwidth row weighed for a pin: what the pinned host gives there, whether
    the pin used it and why (or why not)."""

    file: str
    point: Point
    measured_gbps: float
    fitted_gbps: float = float("nan")
    used: bool = False
    why: str = ""

    def to_json(self) -> dict:
        """The row as `bench predict --json` lists it."""
        p = self.point
        return {
            "file": self.file,
            **dict(zip((*_KEY_COLUMNS, "size_bytes"), _key(p), strict=True)),
            "measured_gbps": round(self.measured_gbps, 3),
            "fitted_gbps": round(self.fitted_gbps, 3),
            "used": self.used,
            "why": self.why,
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


def misses(point: Point, host: HostProfile) -> float:
    """Share of a row's accesses that miss in the host's IOTLB."""
    return float(iotlb_miss(np.array([float(point.window)]), host.iotlb_entries, host.iommu)[0])


def walker_rows(rows: list[PinRow], host: HostProfile) -> list[PinRow]:
    """The rows that miss in the host's IOTLB, those missing most first (rows without misses
    say nothing of the walker)."""
    miss = np.array([misses(r.point, host) for r in rows])
    return [rows[i] for i in np.argsort(-miss, kind="stable") if miss[i] > 0]


def with_busy(host: HostProfile, busy: float) -> HostProfile:
    """`host` with one walker busy `busy` ns per miss (only the ratio to the walk latency, walks
    at once, is observable)."""
    return replace(host, walk_busy_ns=busy, walkers=1)


def simulated(rows: list[PinRow], host: HostProfile, device: DeviceProfile, n: int) -> np.ndarray:
    """Simulated Gb/s of each row on `host` (`n` transactions a row)."""
    return np.array([simulate(r.point, host, device, transactions=n).bw_gbps for r in rows])


@dataclass(frozen=True)
class Feasible:
    """The busy times per miss (ns) that fit one row, or why none does: `low` > `high` when
    the model cannot reach it (`reason` says from which side)."""

    low: float
    high: float
    reason: str = ""

    @property
    def reachable(self) -> bool:
        """Whether some busy time within the range searched fits the row."""
        return self.low <= self.high

    def bounds(self, search: Search) -> tuple[bool, bool]:
        """(has a lower bound, has an upper bound) inside the range searched."""
        return self.low > search[0] * 1.001, self.high < search[1] * 0.999


def reach_range(run: HostRun, entries: int) -> tuple[int, int]:
    """IOTLB entries the latency sweep cannot tell apart from the fitted `entries`: from its
    largest window within that reach to its first window beyond it (in 4 KiB pages)."""
    pages = np.unique(run.tables[LATENCY_SWEEP_FILE]["window_bytes"]) / SMALL_PAGE_BYTES
    below, above = pages[pages <= entries], pages[pages > entries]
    return (
        int(below.max()) if below.size else entries,
        int(above.min()) if above.size else entries,
    )


def search_range(host: HostProfile, device: DeviceProfile) -> Search:
    """Busy times per miss physically possible: as many walks at once as the device has tags
    (no more transactions are in flight) .. one walk at a time (busy for the whole walk)."""
    return host.walk_ns / device.tags, host.walk_ns


def _rate(point: Point, device: DeviceProfile, n: int) -> Callable[[HostProfile, float], float]:
    """Simulated Gb/s of `point` on a host whose walker is busy `busy` ns per miss."""

    def rate(host: HostProfile, busy: float) -> float:
        return simulate(point, with_busy(host, busy), device, transactions=n).bw_gbps

    return rate


def _crossing(rate: Callable[[float], float], target: float, search: Search) -> float:
    """The busy time in `search` where the (falling) `rate` crosses `target`, by bisection of
    the log busy time."""
    lo, hi = np.log(search)
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rate(float(np.exp(mid))) >= target else (lo, mid)
    return float(np.exp((lo + hi) / 2))


def feasible(
    point: Point,
    measured: float,
    hosts: tuple[HostProfile, HostProfile],
    device: DeviceProfile,
    band: tuple[float, float],
    search: Search,
    transactions: int,
) -> Feasible:
    """Busy times in `search` whose bandwidth on one of `hosts` (the smallest and largest
    IOTLB reach the latency sweep allows) lies within `band` (measured / simulated) of the
    measurement. The simulated rate falls with the busy time and rises with the reach."""
    rate = _rate(point, device, transactions)
    narrow, wide = hosts
    fastest, slowest = rate(wide, search[0]), rate(narrow, search[1])
    floor, ceiling = measured / band[1], measured / band[0]  # what the model must give
    if fastest < floor:
        why = f"at most {fastest:.2f} with as many walks at once as tags"
        return Feasible(search[1], search[0], why)
    if slowest > ceiling:
        why = f"at least {slowest:.2f} with one walk at a time"
        return Feasible(search[1], search[0], why)
    high = (
        search[1]
        if rate(wide, search[1]) >= floor
        else _crossing(lambda b: rate(wide, b), floor, search)
    )
    low = (
        search[0]
        if rate(narrow, search[0]) <= ceiling
        else _crossing(lambda b: rate(narrow, b), ceiling, search)
    )
    if low > high:  # the two ends met within the bisection's precision
        low = high = float(np.sqrt(low * high))
    return Feasible(low, high)


def consistent(ranges: list[Feasible], prior: float) -> tuple[list[bool], tuple[float, float]]:
    """Which reachable `ranges` hold the busy time most of them hold (of equals, the one
    nearest `prior`), and the range those share."""
    ends = sorted({r.low for r in ranges if r.reachable} | {r.high for r in ranges if r.reachable})
    if not ends:
        return [False] * len(ranges), (prior, prior)

    def inside(value: float) -> list[bool]:
        return [r.reachable and r.low <= value <= r.high for r in ranges]

    best = max(ends, key=lambda v: (sum(inside(v)), -abs(np.log(v / prior))))
    keep = inside(best)
    shared = [r for r, k in zip(ranges, keep, strict=True) if k]
    return keep, (max(r.low for r in shared), min(r.high for r in shared))


@dataclass(frozen=True)
class Weighed:
    """Rows weighed for the walker: each with used/why, the busy range the used ones share,
    those of them that fix a value (bounded on both sides) and the range searched."""

    rows: list[PinRow]
    shared: Search
    deciding: list[PinRow]
    search: Search


def _screen(
    rows: list[PinRow], host: HostProfile, device: DeviceProfile, band: Band, search: Search, n: int
) -> tuple[list[PinRow], list[PinRow]]:
    """(rows the walker moves by more than their band, those missing most first and of
    those the ones it moves most; the others, with why)."""
    movable: list[tuple[float, float, PinRow]] = []
    still = []
    for row in rows:
        fast, slow = (simulate(row.point, with_busy(host, b), device, n).bw_gbps for b in search)
        low, high = band(row.point)
        moves = np.log(fast / slow) / np.log(high / low)
        if moves > 1:
            movable.append((-misses(row.point, host), -moves, row))
            continue
        why = (
            f"the walker moves it less than its band: x{low:.2f}..x{high:.2f} of the model; "
            f"{slow:.2f} Gb/s one walk at a time, {fast:.2f} with {device.tags} at once"
        )
        still.append(replace(row, why=why))
    return [row for *_, row in sorted(movable, key=lambda m: m[:2])], still


def _verdict(row: PinRow, fits: Feasible, search: Search, reach: tuple[int, int]) -> PinRow:
    """A weighed row before the rows are compared: why it cannot be used, if it cannot."""
    if not fits.reachable:
        why = f"the model cannot reach it: {row.measured_gbps:.2f} Gb/s measured, {fits.reason}"
        return replace(row, why=why)
    if not any(fits.bounds(search)):
        return replace(
            row,
            why=(
                "it does not tell the walker apart: any busy time from "
                f"{search[0]:.1f} to {search[1]:.0f} ns fits it within its band with an IOTLB "
                f"reach of {reach[0]}..{reach[1]} entries (what the latency sweep leaves open)"
            ),
        )
    return replace(row, used=True)


def _range_text(fits: Feasible, search: Search) -> str:
    has_low, has_high = fits.bounds(search)
    if has_low and has_high:
        return f"fits {fits.low:.1f}..{fits.high:.1f} ns"
    bound = f"at most {fits.high:.1f}" if has_high else f"at least {fits.low:.1f}"
    return f"bounds it: {bound} ns"


def _compared(
    verdicts: list[PinRow], fits: list[Feasible], prior: float, search: Search
) -> tuple[list[PinRow], Search, list[PinRow]]:
    """The ranged rows after comparing those that could be used (`consistent`): each with
    used/why, the range the used ones share and those of them that fix a value."""
    candidates = [i for i, v in enumerate(verdicts) if v.used]
    keep, shared = consistent([fits[i] for i in candidates], prior)
    out, deciding = list(verdicts), []
    for i, kept in zip(candidates, keep, strict=True):
        text = _range_text(fits[i], search)
        if not kept:
            why = f"not what the other rows share: {shared[0]:.1f}..{shared[1]:.1f} ns; this row "
            out[i] = replace(out[i], used=False, why=why + text)
            continue
        out[i] = replace(out[i], why=text)
        if all(fits[i].bounds(search)):
            deciding.append(out[i])
    return out, shared, deciding


def weigh(
    run: HostRun, host: HostProfile, device: DeviceProfile, band: Band, rows: list[PinRow], n: int
) -> Weighed:
    """The folder's `rows` that miss in the IOTLB, weighed against `host` (what `run`'s latency
    files give) and `band` (its interval's ratios): screened (`_screen`), the first MAX_WEIGHED
    ranged (`feasible`) and compared (`consistent`); `n` transactions a simulated row."""
    search = search_range(host, device)
    rows = walker_rows(rows, host)
    movable, still = _screen(rows, host, device, band, search, n)
    chosen, rest = movable[:MAX_WEIGHED], movable[MAX_WEIGHED:]
    late = [replace(r, why=_NOT_WEIGHED) for r in rest]
    reach = reach_range(run, host.iotlb_entries)
    hosts = (replace(host, iotlb_entries=reach[0]), replace(host, iotlb_entries=reach[1]))
    fits = [
        feasible(r.point, r.measured_gbps, hosts, device, band(r.point), search, n) for r in chosen
    ]
    verdicts = [_verdict(r, f, search, reach) for r, f in zip(chosen, fits, strict=True)]
    verdicts, shared, deciding = _compared(verdicts, fits, host.walk_busy_ns, search)
    return Weighed(verdicts + late + still, shared, deciding, search)


def stretch(rows: list[PinRow], host: HostProfile, band: Band) -> Band:
    """`band` widened to include every row weighed that lies outside it (one the rows did not
    decide, or one only an IOTLB reach the latency sweep leaves open fits), at the points of its
    category and window."""
    outside: dict[tuple[str, int], list[float]] = {}
    for row in rows:
        ratio = row.measured_gbps / row.fitted_gbps
        low, high = band(row.point)
        if not low <= ratio <= high:
            outside.setdefault(_place(row.point, host), []).append(ratio)
    extent = {place: (min(r), max(r)) for place, r in outside.items()}

    def widened(point: Point) -> tuple[float, float]:
        low, high = band(point)
        extra = extent.get(_place(point, host))
        return (low, high) if extra is None else (min(low, extra[0]), max(high, extra[1]))

    return widened if extent else band


def _place(point: Point, host: HostProfile) -> tuple[str, int]:
    """A point's spread category and window: where a row outside its band widens the band."""
    missing = misses(point, host) > 0
    return calibrate.category(point.test, missing, point.pattern, point.dev_offset), point.window

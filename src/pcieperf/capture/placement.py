"""Where the host placed the two CPUs a capture run uses, as their cache lines show it: the
slowdown of a store loop when both CPUs share its buffer (pcieperf._core's probe). On a VM it
switches between placements for tens of seconds at a time, and the forwarding lcore's cost per
copy follows it (docs/capture.md, "Placement"); a run is comparable with a calibration only
when the probe, taken before and after the run, says the same placement as the calibration's.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import TYPE_CHECKING

from pcieperf import _native
from pcieperf.errors import PcieperfError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

PROBE_STORES = 4_000_000  # per loop and CPU: ~4 ms alone here, at most ~40 ms far apart


def run_cpus() -> tuple[int, int]:
    """The CPUs of testpmd's main lcore and first forwarding lcore (capture.run places them
    there), which the capture tool shares with the main lcore."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[0], cpus[1 % len(cpus)]


def cross_cpu_slowdown() -> float:
    """CPU ns per store with the run's two CPUs storing into one buffer over the same alone
    (1.0: sharing lines costs nothing)."""
    first, second = run_cpus()
    return _native.core().shared_store_slowdown(first, second, PROBE_STORES)


ROUND_TRIP_BURSTS = 21  # bursts per probe: the median ignores those a CPU was taken away in
ROUND_TRIPS = 50  # per burst: ~2.5 us near, ~25 us far; a probe holds both CPUs ~0.1-1 ms


def round_trip_ns() -> float:
    """Wall ns per round trip of a cache line between the run's two CPUs now, also while busy
    threads hold them (NaN: the second CPU did not answer, or real-time priority was refused)."""
    first, second = run_cpus()
    return _native.core().round_trip_ns(first, second, ROUND_TRIP_BURSTS, ROUND_TRIPS)


ROUND_TRIP_PERIOD_S = 0.5  # a probe each: 0.02-0.2 % of the two CPUs' time


class RoundTripSampler:
    """`round_trip_ns` every half second on a thread of its own while a run forwards (the
    probes before and after it see idle CPUs only), each value kept with its monotonic time;
    `start` it once its `stop` is sure to be called."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def start(self) -> None:
        """Start probing."""
        self._thread.start()

    def _probe(self) -> None:
        while not self._stopped.wait(ROUND_TRIP_PERIOD_S):
            try:
                found = round_trip_ns()
            except PcieperfError:  # the CPUs are no longer this process's: no answer
                found = math.nan
            self.samples.append((time.monotonic(), found))

    def stop(self) -> None:
        """Stop probing (after the probe under way, if any)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def worst(self, start: float, end: float) -> float:
        """The highest round trip probed between monotonic times `start` and `end` (NaN: none
        answered): a window in which the CPUs moved apart shows their far value."""
        found = [ns for t, ns in self.samples if start <= t <= end and math.isfinite(ns)]
        return max(found, default=math.nan)


PROBES = ("cross_cpu_slowdown_before", "cross_cpu_slowdown_after")
SPLIT_RATIO = 2.0
"""Two placements are told apart only where the probe values fall into two groups whose
geometric means differ by this factor or more: within one placement they spread up to 1.8x
(1.0-1.8 on a quiet machine, up to 2.9 under load), between placements the groups were
3.5-4.5x apart (docs/capture.md, "Placement")."""


def moved(first: float, second: float) -> bool:
    """Whether two probes of one run (round trips, or slowdowns) say two placements: one is
    SPLIT_RATIO or more times the other."""
    return max(first, second) >= SPLIT_RATIO * min(first, second)


ROUND_TRIP = "round_trip_ns"
"""The in-run probe of a stored run: the worst round trip while capturing. Where a run has it,
it decides the run's placement; the probes before and after decide only for older runs."""


def _split(values: NDArray[np.float64]) -> float:
    """The highest value of the lower group: the geometric middle of the widest jump between
    consecutive sorted values, when the values below and above it differ by SPLIT_RATIO or
    more (geometric means); infinity when they form one group (or are fewer than two)."""
    import numpy as np  # here: `capture run` imports this module for the probes alone

    logs = np.sort(np.log(values[np.isfinite(values) & (values > 0)]))
    if len(logs) < 2:
        return math.inf
    widest = int(np.argmax(np.diff(logs)))
    below, above = logs[: widest + 1].mean(), logs[widest + 1 :].mean()
    if above - below < math.log(SPLIT_RATIO):
        return math.inf
    return float(math.exp((logs[widest] + logs[widest + 1]) / 2))


def _round_trips(runs: pd.DataFrame) -> pd.Series:
    """Each run's in-run round trip (NaN: a run stored before the probe, or none answered)."""
    return runs.reindex(columns=[ROUND_TRIP])[ROUND_TRIP].astype(float)


def placement_limit(runs: pd.DataFrame) -> float:
    """The highest before-and-after probe value of the nearer placement among `runs`
    (`_split` of every run's probes; they decide only for runs without an in-run round trip);
    infinity for one placement (or runs not probed)."""
    return _split(runs.reindex(columns=list(PROBES)).to_numpy(float).ravel())


def round_trip_limit(runs: pd.DataFrame) -> float:
    """The highest in-run round trip (ns) of the nearer placement among `runs` (`_split`)."""
    return _split(_round_trips(runs).to_numpy(float))


def in_placement(runs: pd.DataFrame, limit: float, round_trip_ns: float = math.inf) -> pd.Series:
    """Runs whose in-run round trip stays within `round_trip_ns`, or, without one, whose
    probes before and after both stay within `limit` (a run not probed counts as within:
    nothing says otherwise)."""
    trips = _round_trips(runs)
    probes = runs.reindex(columns=list(PROBES)).astype(float)
    by_probes = (probes.isna() | (probes <= limit)).all(axis=1)
    return by_probes.where(trips.isna(), trips <= round_trip_ns)

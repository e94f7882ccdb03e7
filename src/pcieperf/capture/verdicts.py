"""What a capture run's own measurements say about it, one rule each, for every command that
judges a run (`capture run`, `capture show`, `capture calibrate`): whether its capture thread
had CPU to spare, whether its consumer was the limit, whether the machine starved it, and
whether its measurements contradict each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

Array = NDArray[np.float64]

SATURATED = 1e-3  # a run that lost more than 0.1 % of its copies had its consumer saturated...
SLEPT_PER_S = 100.0
"""...unless its capture thread slept this often per second or more: dumpcap with copies to
spare slept 286-8419 times a second in 180 runs here, a saturated one 0.25-68 times (blocking
calls), dpdk-pdump (which polls without sleeping) 0.25-1.4 (docs/capture.md)."""


def slept(sleeps_per_s: NDArray[np.float64] | float) -> NDArray[np.bool_]:
    """Whether a capture thread that slept this often had nothing to do for a while (SLEPT_PER_S;
    NaN, not measured: no)."""
    return np.asarray(sleeps_per_s, dtype=np.float64) >= SLEPT_PER_S


def spare(sleeps_per_s: NDArray[np.float64] | float, loss: NDArray[np.float64] | float) -> bool:
    """Whether a capture thread had CPU to spare: it slept, and lost no copies (one that slept
    and lost copies woke too late to empty its ring: it did not have CPU to spare)."""
    kept = np.asarray(loss, dtype=np.float64) <= SATURATED
    return bool(np.all(slept(sleeps_per_s) & kept))


def ring_hold_s(ring_size: Array, copies: Array, written: Array, capture_pps: Array) -> Array:
    """The seconds of copies a run's ring held, at the rate the primary made them (copies over
    the tool's wall seconds, written / capture_pps)."""
    return np.asarray(ring_size * written / (np.maximum(copies, 1) * capture_pps))


GOT = 0.75
"""A thread that had work got too little of the machine when it had less than this share of
the CPU it asked for: quiet runs here gave the forwarding lcore 0.96-1.00 of its CPU and a
saturated capture thread 0.88-0.98 (the shipped calibration's 90 runs), the issue's loaded VM
(2 vCPUs, load 4-9) 0.15-0.67 (issue 43). The host's steal takes the rest: more than 1 - GOT
of each CPU starves a run too."""
WAKE_OF_HOLD = 0.5
"""A capture thread that slept (SLEPT_PER_S) and waits for a CPU, each time it wakes, this share
of the time its ring holds copies or more loses copies to the machine, not to its own work
(docs/capture.md, "A busy machine"). Not one that hardly sleeps: it waits between the slices
another thread preempts, 74-485 us each on a quiet 2-CPU VM here (20 of `capture calibrate
--here`'s 24 runs, 1-2 % of their time), and `GOT` judges it by its share."""


@dataclass(frozen=True)
class Starved:
    """The runs the machine starved: for each rule (in words), the runs it flags; for each
    run, why, in one line ('' for a run that got what it asked for, also one whose
    measurements were not recorded: a run stored before them is not starved)."""

    rules: dict[str, NDArray[np.bool_]]
    reasons: list[str]

    @property
    def flagged(self) -> NDArray[np.bool_]:
        """The runs any rule flags."""
        return np.array([bool(r) for r in self.reasons], dtype=bool)


QUEUE_SPARE = 0.5
"""Threads beyond the run's own that the run queue may hold on average, before the run counts as
starved: pcieperf's own samplers (the placement probe's two threads every 0.5 s, the statistics
reader) and testpmd's housekeeping come and go (a near-quiet run read 2.0-2.1 on 2 CPUs); a
CPU hog on each CPU adds 2, another engineer's build 2-4 (3.9 and 8.0 measured: issue 43)."""


def starved(runs: pd.DataFrame) -> Starved:
    """Which of `runs` (the stored columns) got too little of the machine while capturing,
    and why."""
    col = _columns(runs)
    lost = col("loss") > SATURATED
    lcores, cpus = col("fwd_lcores"), col("cpus")
    # they poll, so each asks for a whole CPU, unless the run's own threads (they and the
    # capture thread) outnumber the CPUs: then for their even part (a run of unknown CPUs: all)
    asked_cpus = np.fmin(lcores, cpus * lcores / (lcores + 1))
    fwd = col("fwd_cpu_share") / asked_cpus
    own = np.maximum(cpus, lcores + 1)  # the threads the run keeps busy, or the CPUs if more
    waited = col("capture_wait_share")
    asked = np.where(np.isnan(waited), np.nan, col("capture_cpu_share") + waited)
    cap = np.where(np.isnan(asked), col("capture_cpu_share"), col("capture_cpu_share") / asked)
    judged = ~np.isnan(waited) | (col("capture_sleeps_per_s") < SLEPT_PER_S)  # busy: asked 1
    steal = col("steal_cpu_share") / cpus
    queue = col("run_queue_threads")
    hold_us = 1e6 * ring_hold_s(col("ring_size"), col("copies"), col("written"), col("capture_pps"))
    wake_us = col("capture_wait_ns") / 1e3
    rules = {
        "forwarding lcores with under 3/4 of the CPUs they asked for": (fwd < GOT, lambda i: (
            f"the forwarding lcore(s) had {fwd[i]:.2f} of the {asked_cpus[i]:.3g} CPU(s) they "
            "asked for")),
        "a capture thread with under 3/4 of the CPU it asked while losing copies": (
            lost & judged & (cap < GOT), lambda i: (
                f"the capture thread had {cap[i]:.2f} of the CPU it asked for while it lost "
                f"{100 * col('loss')[i]:.1f} % of the copies")),
        "steal above 1/4 of the CPUs": (steal > 1 - GOT, lambda i: (
            f"the host took {steal[i]:.2f} of each of its {cpus[i]:.0f} CPUs (steal)")),
        "a run queue longer than the CPUs": (queue > own + QUEUE_SPARE, lambda i: (
            f"{queue[i]:.1f} threads ran or waited for its {cpus[i]:.0f} CPUs")),
        "a capture thread waking later than half its ring's hold": (
            slept(col("capture_sleeps_per_s")) & (wake_us >= WAKE_OF_HOLD * hold_us), lambda i: (
                f"the capture thread waited {wake_us[i]:.0f} us for a CPU per wake-up, "
                f"{wake_us[i] / hold_us[i]:.1f}x the {hold_us[i]:.0f} us of copies its ring "
                "holds")),
    }  # fmt: skip
    reasons = [
        "; ".join(words(i) for flags, words in rules.values() if flags[i]) for i in range(len(runs))
    ]
    return Starved({rule: flags for rule, (flags, _) in rules.items()}, reasons)


TOO_MUCH = 1.05  # CPU seconds per wall second of a thread: one CPU, give or take the sampling
PROBE_FLOOR = 0.5
"""Shared cache lines cannot be faster than lines alone (a slowdown below 1); within one
placement the probe spreads up to 1.8x (docs/capture.md, "Placement"), so a value below half
of alone is a disturbed probe, not a placement."""


def contradictions(runs: pd.DataFrame) -> list[str]:
    """For each of `runs`, the measurements that contradict each other, in one line ('':
    none)."""
    col = _columns(runs)
    copies, written = col("copies"), col("written")
    fwd, lcores, cap = col("fwd_cpu_share"), col("fwd_lcores"), col("capture_cpu_share")
    alone, capturing = col("fwd_cpu_ns_no_capture"), col("fwd_cpu_ns")
    probes = np.fmin(col("cross_cpu_slowdown_before"), col("cross_cpu_slowdown_after"))
    checks = [
        (written > copies, lambda i: f"{written[i]:.0f} records written of {copies[i]:.0f} copies"),
        (fwd > TOO_MUCH * lcores, lambda i: (
            f"{lcores[i]:.0f} forwarding lcore(s) ran {fwd[i]:.2f} CPUs")),
        (cap > TOO_MUCH, lambda i: f"one capture thread ran {cap[i]:.2f} CPUs"),
        (capturing < alone, lambda i: (
            f"forwarding cost less capturing ({capturing[i]:.1f} ns/packet) than alone "
            f"({alone[i]:.1f})")),
        (probes < PROBE_FLOOR, lambda i: (
            f"shared cache lines ran x{probes[i]:.2f} of their speed alone (faster: a "
            "disturbed probe)")),
    ]  # fmt: skip
    return ["; ".join(words(i) for bad, words in checks if bad[i]) for i in range(len(runs))]


def _columns(runs: pd.DataFrame) -> Callable[[str], Array]:
    """A reader of `runs`' columns as floats (NaN where a run, or all, lack one)."""

    def col(name: str) -> Array:
        if name not in runs:
            return np.full(len(runs), np.nan)
        return np.asarray(runs[name].astype(float).to_numpy(), dtype=np.float64)

    return col

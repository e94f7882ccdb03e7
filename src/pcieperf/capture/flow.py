"""The capture path's fixed point: with `s` the share of copies delivered, forwarding runs at
F(s) = min(arrivals, L / (fwd + copies x (prod + handoff x s))) and the consumer writes
W = min(copies x F, its capacity), so s = W / (copies x F), solved in closed form; and what
holds each rate back (docs/capture.md, "Model")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
LOSS_FLOOR = 1e-9  # a delivered share below 1 - this is loss (rounding is not)


@dataclass(frozen=True)
class Flow:
    """The rates the capture path settles at (arrays): forwarded packets, records written,
    the share of copies delivered, the consumer's own capacity and where it is the limit (its
    capacity, not its wake-ups, loses copies)."""

    fwd_pps: Array
    fwd_pps_no_capture: Array
    capture_pps: Array
    delivered: Array
    consumer_pps: Array
    saturated: NDArray[np.bool_]


def solve(
    fwd_ns: Array,
    prod_ns: Array,
    handoff_ns: Array,
    cons_ns: Array,
    *,
    copies: Array | float,
    lcores: Array | float,
    cores: Array | float,
    arrivals: Array | float,
    sink_pps: Array | float = np.inf,
    wakeup_loss: Array | float = 0.0,
) -> Flow:
    """The delivered share s = min(1, W / (copies F(s))) in closed form. With the consumer
    saturated (W its capacity C), s is C / (copies x arrivals) while the lcores keep up, else
    the root of s = a + b s, a = C (fwd + copies x prod) / (copies L), b = C x handoff / L; s is
    the larger of the two, at most 1, and 1 where b >= 1 (delivering C copies would take more
    than the lcores have: the consumer cannot be the limit). A consumer that keeps up still
    loses `wakeup_loss` of the copies while it wakes from its sleeps (`Wakeup`)."""
    cpu = np.asarray(lcores, dtype=np.float64) * 1e9
    consumer = np.minimum(np.asarray(cores, dtype=np.float64) * 1e9 / cons_ns, sink_pps)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept_up = consumer / (copies * np.asarray(arrivals, dtype=np.float64))
        a = consumer * (fwd_ns + copies * prod_ns) / (copies * cpu)
        b = consumer * handoff_ns / cpu
        cpu_bound = np.where(b < 1, a / (1 - b), np.inf)
    capacity = np.minimum(1.0, np.maximum(kept_up, cpu_bound))
    share = np.minimum(capacity, 1 - np.asarray(wakeup_loss, dtype=np.float64))
    fwd = np.minimum(arrivals, cpu / (fwd_ns + copies * (prod_ns + handoff_ns * share)))
    return Flow(
        fwd_pps=fwd,
        fwd_pps_no_capture=np.minimum(arrivals, cpu / fwd_ns),
        capture_pps=share * copies * fwd,
        delivered=share,
        consumer_pps=consumer,
        saturated=capacity < 1 - LOSS_FLOOR,
    )


LIMITS = ("capture_cpu", "sink", "forwarding_cpu", "line", "pcie", "offered")


def limited_by(
    flow: Flow,
    consumer_cpu_pps: Array,
    sink_pps: Array | float,
    line: Array | float,
    pcie: Array | float,
    offered: Array | float = np.inf,
) -> NDArray[np.str_]:
    """What holds the capture back: the consumer (its CPU or the sink) where it cannot write
    every copy, else what holds the forwarding back: its lcores, or the lowest of what arrives
    (the NIC's PCIe ceiling, the offer below line rate, the line)."""
    lost = flow.saturated
    consumer = np.where(np.asarray(sink_pps) < consumer_cpu_pps, "sink", "capture_cpu")
    given = np.minimum(line, offered)
    forwarding = np.where(
        flow.fwd_pps < np.minimum(given, pcie) * (1 - LOSS_FLOOR),
        "forwarding_cpu",
        np.where(pcie < given, "pcie", np.where(offered < line, "offered", "line")),
    )
    return np.where(lost, consumer, forwarding)

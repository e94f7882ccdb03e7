"""Forwarding as a capture run measures it: testpmd's periodic statistics blocks, each with the
Rx packets so far, the forwarding lcores' CPU time and the host's steal, and the interval
between two or more blocks (its rate, CPU ns per packet, CPU share, spread over its periods)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """One statistics block: when it arrived, testpmd's cumulative Rx packets, the CPU ns
    the forwarding lcores had run by then, and the host's steal so far (all CPUs, ns)."""

    t: float
    packets: int
    cpu_ns: int
    steal_ns: int = 0


@dataclass(frozen=True)
class Interval:
    """Forwarding over consecutive statistics blocks (two or more): its periods in between."""

    samples: tuple[Sample, ...]

    @property
    def first(self) -> Sample:
        """The block the interval starts at."""
        return self.samples[0]

    @property
    def last(self) -> Sample:
        """The block the interval ends at."""
        return self.samples[-1]

    @property
    def wall_s(self) -> float:
        """Wall seconds from the first block to the last."""
        return self.last.t - self.first.t

    @property
    def pps(self) -> float:
        """Packets forwarded per wall second."""
        return (self.last.packets - self.first.packets) / self.wall_s

    @property
    def cpu_ns_per_packet(self) -> float:
        """CPU ns the forwarding lcores spent per forwarded packet."""
        return _ns_per_packet(self.first, self.last)

    @property
    def cpu_ns_spread(self) -> float:
        """The costliest period's CPU ns per packet over the cheapest's: near 1 when the
        forwarding ran alike throughout, more when its CPUs changed under it (NaN: one period)."""
        costs = [_ns_per_packet(a, b) for a, b in itertools.pairwise(self.samples)]
        costs = [c for c in costs if c > 0]
        return max(costs) / min(costs) if len(costs) >= 2 else float("nan")

    @property
    def cpu_share(self) -> float:
        """CPUs the forwarding lcores had: their CPU seconds per wall second."""
        return (self.last.cpu_ns - self.first.cpu_ns) / 1e9 / self.wall_s

    @property
    def steal_share(self) -> float:
        """CPUs the host took from this machine meanwhile (steal seconds per wall second)."""
        return (self.last.steal_ns - self.first.steal_ns) / 1e9 / self.wall_s


def _ns_per_packet(first: Sample, last: Sample) -> float:
    """CPU ns per packet between two blocks (NaN: none forwarded)."""
    packets = last.packets - first.packets
    return (last.cpu_ns - first.cpu_ns) / packets if packets else float("nan")

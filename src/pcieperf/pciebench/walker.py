"""The IOTLB walker's throughput as a prediction uses it when no bandwidth row pins it.

A latency sweep shows how long one walk takes (`walk_ns`) but not how many run at once. The
calibration's busy time per miss holds for the CPU generations it saw (`walker_generations`);
for another generation the walker lies between that and one walk at a time, and the point
prediction takes the middle of that interval (docs/bench.md, "Walker throughput"). A host's
own bandwidth rows can pin it instead (`pciebench.pin`).
"""

from __future__ import annotations

from dataclasses import replace

from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.host import HostRun
from pcieperf.pciebench.sim import HostProfile


def walker_unknown(run: HostRun, calibration: Calibration) -> bool:
    """Whether the host misses in its IOTLB on a CPU generation whose walker throughput the
    calibration never saw (its busy time was fitted on `walker_generations` only)."""
    return run.iommu.misses and run.generation not in calibration.shared.walker_generations


def busy_range(calibration: Calibration, walk_ns: float) -> tuple[float, float]:
    """(fast, slow) busy time per miss an unknown walker may have: the calibrated one, and the
    whole walk latency (one walk at a time)."""
    fast = calibration.shared.walk_busy_ns
    return fast, max(walk_ns, fast)


def point_busy_ns(run: HostRun, calibration: Calibration, walk_ns: float) -> float:
    """The busy time per miss of the point prediction: calibrated where the generation was
    calibrated, else the middle of `busy_range`.

    The middle in time is the harmonic mean of the two bounds' walker-bound bandwidths, the
    point whose relative error |predicted / measured - 1| is the same at either end.
    """
    if not walker_unknown(run, calibration):
        return calibration.shared.walk_busy_ns
    return sum(busy_range(calibration, walk_ns)) / 2


def interval_hosts(run: HostRun, calibration: Calibration, host: HostProfile) -> list[HostProfile]:
    """The other host profiles the evidence leaves possible besides `host`.

    Where the walker throughput is unknown (`walker_unknown`), both ends of `busy_range`: the
    calibrated walker and one miss at a time, busy for the whole walk latency the sweep shows.
    """
    if not walker_unknown(run, calibration):
        return []
    return [
        replace(host, walk_busy_ns=busy, walkers=1)
        for busy in busy_range(calibration, host.walk_ns)
    ]


def walker_why(run: HostRun, calibration: Calibration, host: HostProfile) -> tuple[bool, str]:
    """(assumed, why) of the walker's busy time and count in a prediction's provenance."""
    gens = ", ".join(calibration.shared.walker_generations) or "none"
    if not walker_unknown(run, calibration):
        return False, f"fitted on IOTLB-miss hosts of {gens}"
    fast, slow = busy_range(calibration, host.walk_ns)
    return True, (
        f"CPU {run.generation} is not among the calibrated walker generations ({gens}): "
        f"point = the middle of {fast:.1f} ns (calibrated) .. {slow:.0f} ns (one walk at a "
        "time), bounds at both ends; a bandwidth row past the IOTLB knee in the host folder "
        "pins it"
    )

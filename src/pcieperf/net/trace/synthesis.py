"""Synthetic traffic (`trace synth`): a frame-size mix arriving constant, Poisson or in on/off
bursts, streamed to a capture file chunk by chunk."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import progress
from pcieperf._native import call, core
from pcieperf._numpy import np
from pcieperf.errors import UsageError, param, require_choice, require_positive
from pcieperf.net.trace.files import NS_PER_S
from pcieperf.net.trace.rewrite import _check_output, _write_atomically, output_format
from pcieperf.net.wire import FCS_BYTES

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from pcieperf.net.ethernet import Ethernet, PacketMix

ARRIVALS = ("constant", "poisson", "onoff")
# A fixed start for synthetic captures (2026-01-01T00:00:00Z), so that they are reproducible.
SYNTH_START_NS = 1_767_225_600 * NS_PER_S
# Packets generated and written per step of `trace synth` (rounded down to whole on/off bursts):
# memory stays at a few MiB whatever the duration.
SYNTH_CHUNK = 1 << 18


@dataclass(frozen=True)
class SynthPlan:
    """A checked request for synthetic traffic: `packets` frames drawn from `mix`, arriving by
    `arrival` at mean rate `pps`. Arrivals are generated chunk by chunk (`chunks`), so memory
    does not depend on the duration."""

    eth: Ethernet
    mix: PacketMix
    pps: float
    arrival: str
    burst: int
    seed: int
    packets: int

    def frames(self) -> Iterator[NDArray[np.int64]]:
        """Frame sizes (incl. FCS) in chunks of whole bursts: one uniform draw per frame, so
        the chunks are the draws of one `rng.choice` over every frame."""
        rng = np.random.default_rng(self.seed)
        chunk = max(SYNTH_CHUNK // self.burst, 1) * self.burst
        for start in range(0, self.packets, chunk):
            size = min(chunk, self.packets - start)
            yield rng.choice(self.mix.sizes, size=size, p=self.mix.weights)

    def gap_rng(self) -> np.random.Generator:
        """The generator of the arrival process: the seed's stream after the frames' draws
        (each frame takes one 64-bit draw), as when frames were drawn first, all at once."""
        bits = np.random.PCG64(self.seed)
        bits.advance(self.packets)
        return np.random.Generator(bits)

    def _wire_ns(self, frames: NDArray[np.int64]) -> NDArray[np.float64]:
        """Each frame's time on the wire (`wire_bytes` of an array is an array, the same one
        `asarray` hands back)."""
        return np.asarray(self.eth.wire_bytes(frames)) * 8 / self.eth.rate_gbps

    def _idle_mean_ns(self) -> float:
        """On/off: the mean idle gap before a burst that brings the mean rate to `pps`: a
        burst's period minus its mean wire time, from a first pass over the frames."""
        burst_ns, bursts = [], 0
        for frames in self.frames():
            sums = np.add.reduceat(self._wire_ns(frames), np.arange(0, frames.size, self.burst))
            burst_ns.append(math.fsum(sums))
            bursts += sums.size
        return max(self.burst * NS_PER_S / self.pps - math.fsum(burst_ns) / bursts, 0.0)

    def chunks(
        self, gaps: np.random.Generator | None = None
    ) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
        """(arrival ns from 0, frame sizes) in chunks. Running sums carry over from chunk to
        chunk in the order a single cumulative sum adds them, so the times are those of one
        pass over every packet. `gaps`: `gap_rng()`, made beforehand."""
        gaps = gaps or self.gap_rng()
        idle_mean = self._idle_mean_ns() if self.arrival == "onoff" else 0.0
        wire_at, idle_at, start = 0.0, 0.0, 0
        for frames in self.frames():
            index = np.arange(start, start + frames.size)
            if self.arrival == "constant":
                ts = index * (NS_PER_S / self.pps)
            elif self.arrival == "poisson":
                drawn = gaps.exponential(NS_PER_S / self.pps, frames.size)
                times = np.cumsum(np.concatenate(([idle_at], drawn)))
                ts, idle_at = times[:-1], times[-1]
            else:
                wire = np.cumsum(np.concatenate(([wire_at], self._wire_ns(frames))))
                idle = gaps.exponential(idle_mean, frames.size)
                idle[(index % self.burst != 0) | (index == 0)] = 0.0
                idle = np.cumsum(np.concatenate(([idle_at], idle)))
                # A burst's frames go back to back at line rate; each burst waits an idle gap.
                ts = wire[:-1] + idle[1:]
                wire_at, idle_at = wire[-1], idle[-1]
            start += frames.size
            yield ts.astype(np.int64), frames


def plan_synthetic(
    *,
    eth: Ethernet,
    mix: PacketMix,
    pps: float,
    duration_s: float,
    arrival: str = "constant",
    burst: int = 32,
    seed: int = 1,
) -> SynthPlan:
    """Check a synthetic-traffic request before any work: positive rate, duration and burst, at
    least one packet, and a mean rate the line carries for the mix's mean frame."""
    require_positive(param("pps"), pps)
    require_positive(param("duration"), duration_s)
    require_positive(param("burst"), burst)
    require_choice(param("arrival"), arrival, ARRIVALS)
    n = round(pps * duration_s)
    if n < 1:
        raise UsageError(f"{pps:g} pps for {duration_s:g} s is less than one packet")
    line_pps = eth.rate_gbps * 1e9 / (8 * mix.mean(eth.wire_bytes(mix.sizes)))
    if pps > line_pps:
        raise UsageError(
            f"{pps / 1e6:g} Mpps of {mix.name} exceeds {eth.rate_gbps:g} GbE line rate "
            f"({line_pps / 1e6:.2f} Mpps); lower {param('pps')} or raise {param('eth')}"
        )
    return SynthPlan(eth, mix, float(pps), arrival, int(burst), int(seed), n)


# Bytes a record adds to its data: pcap record header; pcapng EPB header and trailer (+ padding).
RECORD_OVERHEAD_BYTES = {"pcap": 16, "pcapng": 32 + 3}


def _require_room(output: Path, fmt: str, plan: SynthPlan) -> None:
    """Refuse, before writing, a capture larger than the free space of its folder (estimated
    from the mix's mean frame)."""
    mean_caplen = float(plan.mix.mean(plan.mix.sizes)) - FCS_BYTES
    need = plan.packets * (mean_caplen + RECORD_OVERHEAD_BYTES[fmt])
    free = shutil.disk_usage(output.absolute().parent).free
    if need > free:
        raise UsageError(
            f"{plan.packets} packets make about {need / 1e9:.4g} GB, but {output.absolute().parent}"
            f" has {free / 1e9:.4g} GB free; shorten {param('duration')} or lower {param('pps')}"
        )


def synth(
    output: str | os.PathLike, *, flows: int = 1024, force: bool = False, **kw: object
) -> dict:
    """Write the traffic `plan_synthetic(**kw)` plans (frames drawn from the mix, arriving by
    the arrival process from SYNTH_START_NS) as Ethernet/IPv4/UDP frames cycling over `flows`
    UDP flows,
    generated and written chunk by chunk (bounded memory at any duration), with a progress
    bar where one is seen."""
    fmt = output_format(output)
    require_positive(param("flows"), flows)
    _check_output(output, [], force)
    plan = plan_synthetic(**kw)  # type: ignore[arg-type]  # plan_synthetic's keywords
    _require_room(Path(output), fmt, plan)

    # numpy.random is imported here, before the temporary exists: a signal that lands while a
    # module is being imported can be lost (a Cython module's init), and the write must stop.
    gaps = plan.gap_rng()

    def write(tmp: Path) -> dict:
        writer = core().TraceSynth(os.fspath(tmp), fmt, int(flows))
        with progress.bar(plan.packets, f"synth {Path(output).name}", "pkt") as bar:
            for ts, frames in plan.chunks(gaps):
                call(writer.push, SYNTH_START_NS + ts, (frames - FCS_BYTES).astype(np.uint32))
                bar.update(ts.size)
        return call(writer.close)

    return {
        "file": os.fspath(output),
        "format": fmt,
        "arrival": plan.arrival,
        **_write_atomically(output, force, write),
    }

"""Costs that travel: a calibration's costs carried to another kind of machine, each scaled by
the ratio of the primitive it is made of (this machine's probe over the calibration machine's,
`capture.primitives`), with bands widened for what that ratio cannot know.

Which primitive prices which cost (docs/capture.md, "Costs that travel"):
- forwarding per packet (net_null's Rx and Tx: mbufs taken from and given back to the lcore's
  mempool cache) and the producer's fixed cost per copy (an mbuf taken from the capture pool,
  the packet's header copied, the copy put in the ring): one thread's work on its own lines,
  a ring's item on one CPU. Not the ring between two CPUs: on the shipped calibration's VM that
  one is 8x dearer when the host puts the two vCPUs far apart (10 and 80 ns per item), while the
  runs in that placement cost the forwarding only 1.16x more per copy ([meta] loso
  other_placement_penalty_ratio);
- the consumer's fixed cost per record (a burst of copies taken out of the ring the other CPU
  filled, each made a record): a ring's item between the two CPUs;
- the hand-off per copy delivered (its mbuf's lines go round to the consumer's CPU and back):
  a cache line's round trip;
- every per-byte cost: a byte copied warm; every cold byte: a byte copied from lines no longer
  cached; a consumer's write call: a `write` of a record into that sink.
The wake-up loss (how long a sleeping thread stays away, the host's scheduler's) has no
primitive and is kept as fitted.

A scaled cost's band is its table's band times the lowest and highest of each ratio over both
probes' spreads, and reaches from the cost not moving at all (ratio 1) to it moving with its
primitive: the probe says which way a cost moves and how far its primitive moved, not what share
of the cost the primitive is. On the calibration's own kind of machine nothing is scaled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from pcieperf.capture.calibration import Band, CaptureCalibration, Consumer, Forwarding, Producer
from pcieperf.capture.primitives import Probe, ratio, write_key

WRITE = "write"  # the consumer's write call: the primitive of a write into its sink
PRICED_BY = {
    "forwarding": {"base_ns": "ring_local_ns", "per_byte_ns": "copy_warm_ns_per_byte"},
    "producer": {
        "fixed_ns": "ring_local_ns",
        "per_byte_ns": "copy_warm_ns_per_byte",
        "handoff_ns": "round_trip_ns",
        "cold_byte_ns": "copy_cold_ns_per_byte",
    },
    "consumer": {
        "fixed_ns": "ring_ns",
        "per_byte_ns": "copy_warm_ns_per_byte",
        "cold_byte_ns": "copy_cold_ns_per_byte",
        "write_call_ns": WRITE,
    },
}
"""Each cost table's costs and the primitive each is made of."""

Costs = TypeVar("Costs", Forwarding, Producer, Consumer)


def travelled(
    cal: CaptureCalibration, here: Probe
) -> tuple[CaptureCalibration, dict[str, dict[str, object]]]:
    """`cal` with its costs scaled to the machine `here` was probed on, and which cost was
    scaled by which primitive's ratio (its median, lowest and highest); `cal` itself, and no
    ratios, where its runs were made on that kind of machine or it records no probe."""
    there = cal.meta.probe
    if there is None or there.kind == here.kind:
        return cal, {}
    used: dict[str, dict[str, object]] = {}
    forwarding = _scaled(cal.forwarding, "forwarding", "", here, there, used)
    producer = _scaled(cal.producer, "producer", "", here, there, used)
    consumers = {
        sink: _scaled(c, f"consumer.{sink}", sink, here, there, used)
        for sink, c in cal.consumers.items()
    }
    moved = replace(cal, forwarding=forwarding, producer=producer, consumers=consumers)
    return moved, used


def _scaled(
    costs: Costs,
    table: str,
    sink: str,
    here: Probe,
    there: Probe,
    used: dict[str, dict[str, object]],
) -> Costs:
    """One cost table with each cost times its primitive's ratio (where both probes have it),
    its band widened (`_widened`); each ratio used is added to `used`."""
    changes: dict[str, Any] = {}  # each a float, or a dict of floats (fixed_ns)
    spreads = []
    for key, primitive in PRICED_BY[table.split(".")[0]].items():
        name = write_key(sink) if primitive == WRITE else primitive
        found = ratio(here, there, name)
        if found is None:
            continue
        value = getattr(costs, key)
        scale = found[0]
        changes[key] = (
            {k: v * scale for k, v in value.items()} if isinstance(value, dict) else value * scale
        )
        spreads.append(found)
        used[f"{table}.{key}"] = {
            "primitive": name,
            "ratio": scale,
            "low": found[1],
            "high": found[2],
        }
    return replace(costs, **changes, band=_widened(costs.band, spreads))


def _widened(band: Band, ratios: list[tuple[float, float, float]]) -> Band:
    """`band` times, for each ratio, its lowest and highest over its median and the cost not
    moving at all (1 over the median): the scaled cost's truth lies between them."""
    lows = [min(low, 1.0) / median for median, low, _ in ratios]
    highs = [max(high, 1.0) / median for median, _, high in ratios]
    return Band(band.low * min([1.0, *lows]), band.high * max([1.0, *highs]))

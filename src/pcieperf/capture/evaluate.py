"""The capture path evaluated per frame size or mix, for a setup and a calibration: the
arrivals (offer, line, the NIC's PCIe ceiling from the shared forwarding model), each thread's
costs, the fixed point they settle at (`capture.flow`) with the loss waking at each row's ring
hold time, and bounds over every corner of the calibration's spread."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np
from numpy.typing import NDArray

from pcieperf.capture.calibration import CaptureCalibration
from pcieperf.capture.costs import Costs, path_costs, wakeup_of, writer_of
from pcieperf.capture.flow import Flow, limited_by, solve
from pcieperf.capture.setup import CaptureSetup
from pcieperf.dpdk.forwarding import ForwardingConfig, forwarding_rate
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile
from pcieperf.pcie.link import Link

Array = NDArray[np.float64]


OUTPUTS = (
    "capture_pps",
    "capture_gbps",
    "loss",
    "fwd_pps_no_capture",
    "fwd_pps",
    "fwd_gbps",
    "fwd_penalty_ns_per_packet",  # forwarding-lcore CPU the copies add per forwarded packet
)


def _corners(cal: CaptureCalibration, setup: CaptureSetup) -> list[tuple[float, ...]]:
    """(forwarding, producer, consumer) scales, buffer shares and wake-up loss scales spanning
    the spread: each thread's cost at its band's ends, the buffer share at 0 and 1 (contiguous
    only), the wake-up loss at its band's ends."""
    bands = (cal.forwarding.band, cal.producer.band, cal.consumer(setup.sink).band)
    shares = (0.0, setup.buffer_share, 1.0) if setup.shape.contiguous else (setup.buffer_share,)
    wakeup = wakeup_of(cal, writer_of(cal, setup, setup.sink))
    losses = {wakeup.band.low, wakeup.band.high}  # one corner where they are one
    return list(product(*((b.low, b.high) for b in bands), shares, sorted(losses)))


@dataclass(frozen=True)
class CaptureRows:
    """The model's outputs per row (size or mix), each with `_low`/`_high` bounds, what limits
    each row, and the central costs behind them."""

    labels: list[str]
    frame_bytes: Array
    values: dict[str, Array]
    limited_by: NDArray[np.str_]
    saturated: NDArray[np.bool_]  # the consumer cannot write every copy (not its wake-ups)
    costs: Costs
    copies: float
    ring_holds_s: Array  # how long the ring holds the copies that arrive (central)
    consumer_pps: Array  # the records the capture thread (or the sink) can write per second


def evaluate_capture(
    cal: CaptureCalibration,
    setup: CaptureSetup,
    mixes: list[PacketMix],
    *,
    eth: float = 10,
    link: Link | None = None,
    profile: str = DEFAULT_PROFILE,
    pps: float | None = None,
    fwd_ns: float | None = None,
    forwarding: ForwardingConfig | None = None,
) -> CaptureRows:
    """The capture path at each size or mix: arrivals from the offer (default: line rate on
    every port), the ports' line and the NIC's PCIe ceiling with the `forwarding` setup (the
    shared forwarding model, `dpdk.forwarding.forwarding_rate`: dpdk-fwd's descriptors,
    thresholds and batches; default its defaults); costs central and at every corner of the
    calibration's spread (bounds: the lowest and highest value over them)."""
    port = Ethernet(eth)
    setup_fwd = forwarding or ForwardingConfig()
    nic = forwarding_rate(setup_fwd, link or Link(), port, load_profile(profile), mixes)
    line, pcie = setup.ports * nic.line_pps, nic.pcie_max_pps
    offered = line if pps is None else np.minimum(pps, line)  # more than the line never arrives
    arrivals = np.minimum(offered, pcie)
    wire_bits = nic.per_packet(port.wire_bytes(nic.sizes)) * 8

    wakeup = wakeup_of(cal, writer_of(cal, setup, setup.sink))

    def rows_at(
        share: float, scale: tuple[float, float, float], waking: float = 1.0
    ) -> tuple[Costs, Flow, Array | float, Array]:
        per_size = path_costs(cal, setup, nic.sizes, share, fwd_ns).scaled(*scale)
        costs = Costs(*(nic.per_packet(getattr(per_size, f)) for f in Costs.__dataclass_fields__))
        sink_pps = (
            np.inf if setup.sink_gbps is None else setup.sink_gbps * 1e9 / 8 / costs.record_bytes
        )

        def settle(lost_waking: Array | float) -> Flow:
            return solve(
                costs.fwd_ns,
                costs.prod_ns,
                costs.handoff_ns,
                costs.cons_ns,
                copies=setup.copies,
                lcores=setup.fwd_lcores,
                cores=setup.capture_cores,
                arrivals=arrivals,
                sink_pps=sink_pps,
                wakeup_loss=lost_waking,
            )

        # how long the ring holds the copies that arrive, and what is lost waking with that
        with np.errstate(divide="ignore"):
            hold = setup.ring_size / (setup.copies * settle(0.0).fwd_pps)
        return costs, settle(wakeup.loss(hold, waking)), sink_pps, hold

    def outputs(costs: Costs, flow: Flow) -> dict[str, Array]:
        rates = {k: getattr(flow, k) for k in ("capture_pps", "fwd_pps_no_capture", "fwd_pps")}
        penalty = setup.copies * (costs.prod_ns + costs.handoff_ns * flow.delivered)
        return rates | {
            "capture_gbps": flow.capture_pps * wire_bits / 1e9,
            "fwd_gbps": flow.fwd_pps * wire_bits / 1e9,
            "loss": 1 - flow.delivered,
            "fwd_penalty_ns_per_packet": penalty,
        }

    costs, flow, sink_pps, hold = rows_at(setup.buffer_share, (1.0, 1.0, 1.0))
    central = outputs(costs, flow)
    spread = [outputs(*rows_at(s, (f, p, c), w)[:2]) for f, p, c, s, w in _corners(cal, setup)]
    values: dict[str, Array] = {}
    for key in OUTPUTS:
        stacked = np.stack([central[key], *(corner[key] for corner in spread)])
        values |= {key: central[key], f"{key}_low": stacked.min(0), f"{key}_high": stacked.max(0)}
    consumer_cpu = setup.capture_cores * 1e9 / costs.cons_ns
    return CaptureRows(
        labels=list(nic.label),
        frame_bytes=nic.mean_frame_bytes,
        values=values,
        limited_by=limited_by(flow, consumer_cpu, sink_pps, line, pcie, offered),
        saturated=flow.saturated,
        costs=costs,
        copies=setup.copies,
        ring_holds_s=hold,
        consumer_pps=flow.consumer_pps,
    )

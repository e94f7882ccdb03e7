"""What to change: the rate gained by smaller rings (`gain`), single changes swept and the
smallest that restores the IOMMU-free rate recommended (`advise`), and the ring sweep."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TypeVar

from pcieperf.dpdk.port import PAGE_SIZES, RING_MIN, PortSetup
from pcieperf.errors import UsageError
from pcieperf.iommu.model import SATURATED, IommuResult, Model
from pcieperf.iommu.platform import Platform, Traffic
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.progress import wrap as with_progress
from pcieperf.units import decimal

T = TypeVar("T")
R = TypeVar("R")


def in_parallel(evaluate: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """`evaluate` of each item, in the items' order, on a thread per CPU: a timed run releases
    the GIL (rust/py `port_simulate`), so independent setups simulate on every core at once."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = [pool.submit(evaluate, item) for item in items]
        for future in futures:
            yield future.result()


def gain(
    platform: Platform,
    eth: Ethernet,
    setup: PortSetup,
    to_rxd: int,
    to_txd: int,
    mixes: list[PacketMix],
    packets: int | None = None,
    offer_from: Traffic | None = None,
) -> list[dict[str, object]]:
    """Packet rate with the IOMMU before and after a ring-size change, per packet size or mix;
    each size offered at line rate, or as `offer_from`'s offered load says (its share of line
    rate and its rate cap)."""
    after = replace(setup, rxd=to_rxd, txd=to_txd)

    def both(mix: PacketMix) -> tuple[IommuResult, IommuResult]:
        traffic = Traffic(mix, eth)
        if offer_from is not None:
            traffic = replace(
                traffic, offer_share=offer_from.offer_share, offer_mpps=offer_from.offer_mpps
            )
        model = Model(platform, traffic, packets)
        return model.evaluate(setup), model.evaluate(after)

    runs = in_parallel(both, mixes)
    return [_gain_row(mix, *next(runs)) for mix in with_progress(mixes, "simulating", "size")]


def _gain_row(mix: PacketMix, before: IommuResult, then: IommuResult) -> dict[str, object]:
    """One `gain` row; with the rates' standard errors where the runs had them."""
    row = {
        "size": mix.name,
        "mpps_from": before.mpps_iommu,
        "mpps_to": then.mpps_iommu,
        "gain_pct": 100 * (then.mpps_iommu / before.mpps_iommu - 1),
        "misses_per_pkt_from": before.iotlb_misses_per_pkt,
        "misses_per_pkt_to": then.iotlb_misses_per_pkt,
        "mpps_no_iommu": before.mpps_no_iommu,
        "state_from": before.state,
        "state_to": then.state,
    }
    if before.mpps_iommu_stderr is None or then.mpps_iommu_stderr is None:
        return row
    return row | {
        "mpps_from_stderr": before.mpps_iommu_stderr,
        "mpps_to_stderr": then.mpps_iommu_stderr,
    }


@dataclass(frozen=True)
class Candidate:
    """One single change to a setup, in the order a user would rather make them."""

    knob: str
    description: str
    setup: PortSetup


def candidates(setup: PortSetup, poll_delays: tuple[float, ...] = ()) -> list[Candidate]:
    """Single changes, smallest first: shrink both rings one step at a time, shrink the pool
    (matters once mbufs cycle through the common ring), then larger pages, then Rx pacing
    (a poll delay)."""
    out = []
    ring = min(setup.rxd, setup.txd) // 2
    while ring >= RING_MIN:
        with suppress(UsageError):  # thresholds that no longer fit a ring this small
            out.append(Candidate("rings", f"rxd/txd {ring}", replace(setup, rxd=ring, txd=ring)))
        ring //= 2
    pool = setup.pool // 2
    while pool >= setup.min_pool:
        out.append(Candidate("pool", f"pool {pool} mbufs", replace(setup, pool=pool)))
        pool //= 2
    for page in ("2m", "1g"):
        if PAGE_SIZES[page] > setup.page_bytes:
            out.append(Candidate("page", f"{page.upper()} pages", replace(setup, page=page)))
    for delay in poll_delays:
        paced = replace(setup, poll_delay_us=delay)
        out.append(Candidate("pacing", f"Rx poll delay {delay:g} us", paced))
    return out


@dataclass(frozen=True)
class Advice:
    """The sweep behind a recommendation and the recommendation itself."""

    current: IommuResult
    target_mpps: float
    options: list[tuple[Candidate, IommuResult]]
    choice: Candidate | None
    chosen: IommuResult
    restores: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return {
            "current": self.current.as_dict(),
            "target_mpps": self.target_mpps,
            "recommendation": self.choice.description if self.choice else "no change",
            "knob": self.choice.knob if self.choice else None,
            "restores_target": self.restores,
            "restores_line_rate": self.chosen.mpps_iommu >= SATURATED * self.chosen.line_mpps,
            "reason": self.reason,
            "result": self.chosen.as_dict(),
            "options": [
                {"knob": c.knob, "change": c.description, **r.as_dict()} for c, r in self.options
            ],
        }


def advise(
    platform: Platform,
    traffic: Traffic,
    setup: PortSetup,
    packets: int | None = None,
    progress: Callable[[list[Candidate]], Iterable[Candidate]] = lambda items: items,
) -> Advice:
    """Sweep single changes and pick the first (smallest) that restores the IOMMU-free rate,
    else the one with the best rate."""
    model = Model(platform, traffic, packets)
    current = model.evaluate(setup)
    target = current.mpps_no_iommu
    best = model.best_poll_delay(setup) if not setup.poll_delay_us else None
    delays = (best, 2 * best) if best else ()
    changes = candidates(setup, delays)
    results = in_parallel(lambda c: model.evaluate(c.setup), changes)
    options = [(c, next(results)) for c in progress(changes)]
    if current.mpps_iommu >= SATURATED * target:
        return Advice(current, target, options, None, current, True, _reason_ok(current))
    restoring = [(c, r) for c, r in options if r.mpps_iommu >= SATURATED * target]
    # max() keeps the first of equals, so ties go to the smaller change.
    choice, chosen = restoring[0] if restoring else max(options, key=lambda o: o[1].mpps_iommu)
    return Advice(
        current,
        target,
        options,
        choice,
        chosen,
        bool(restoring),
        _reason(current, choice, chosen, bool(restoring)),
    )


def _traffic_name(mix: str) -> str:
    return f"{mix} B" if mix.isdigit() else mix


def _reason_ok(current: IommuResult) -> str:
    return (
        f"With {current.page.upper()} pages and rxd/txd {current.rxd}/{current.txd} the IOMMU "
        f"costs {decimal(current.iotlb_misses_per_pkt)} page walks per packet, which the walkers "
        f"absorb at {current.mpps_iommu:.1f} Mpps, so nothing needs to change."
    )


def _reason(current: IommuResult, choice: Candidate, chosen: IommuResult, restores: bool) -> str:
    verdict = (
        f"restores {chosen.mpps_iommu:.1f} Mpps"
        if restores
        else f"is the best found at {chosen.mpps_iommu:.1f} Mpps "
        f"(without IOMMU {current.mpps_no_iommu:.1f})"
    )
    return (
        f"{current.working_set_pages} pages in flight against {current.iotlb_entries} IOTLB "
        f"entries cost {decimal(current.iotlb_misses_per_fwd_pkt)} page walks per forwarded packet"
        f"{_state_note(current)} and cap {_traffic_name(current.mix)} forwarding at "
        f"{current.mpps_iommu:.1f} Mpps; {choice.description} cuts that to "
        f"{decimal(chosen.iotlb_misses_per_fwd_pkt)} walks per forwarded packet "
        f"({chosen.working_set_pages} pages) and {verdict}."
    )


def _state_note(result: IommuResult) -> str:
    """Why walks per forwarded packet exceed one per packet, if a ring is full."""
    if result.state == "tx-full":
        return (
            " (the walks outrun the walkers, so the Tx ring fills, every Tx read misses again "
            f"and the lcore drops {decimal(result.drops_per_fwd_pkt)} received packets per "
            "forwarded one)"
        )
    if result.state in ("rx-full", "both-full"):
        return " (the lcores poll slower than packets arrive, so packets wait a full Rx ring)"
    return ""


RING_SWEEP = (64, 128, 256, 512, 1024, 2048, 4096)


def ring_sweep(
    platform: Platform,
    eth: Ethernet,
    mixes: list[PacketMix],
    pages: tuple[str, ...] = ("4k", "2m"),
    rings: tuple[int, ...] = RING_SWEEP,
    packets: int | None = None,
    progress: Callable[[list[PacketMix]], Iterable[PacketMix]] = lambda items: items,
) -> list[IommuResult]:
    """Every (mix, page size, rxd = txd) of the sweep; the pool grows when the rings need it."""
    rows = []
    for mix in progress(mixes):
        model = Model(platform, Traffic(mix, eth), packets)
        for page in pages:
            for ring in rings:
                shape = PortSetup(page=page, rxd=ring, txd=ring, pool=1 << 20)
                rows.append(model.evaluate(replace(shape, pool=max(8192, shape.min_pool))))
    return rows

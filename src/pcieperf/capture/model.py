"""The capture path as a model (`pcieperf capture model`, `pp.capture_model`): DPDK forwarding
with pdump copying packets on the forwarding lcores into a ring that a capture process empties
into a file, per frame size or mix.

Per forwarded packet a forwarding lcore spends `fwd` ns, plus, for each of its `copies`, the
producer's fixed + per-byte cost and a hand-off paid only for copies that reach the consumer
(a copy dropped at a full ring is freed while still in cache: the study's "testpmd most of the
time discards, which is cheaper"). The capture core spends `cons` ns per written record. With
`s` the share of copies delivered, forwarding runs at F(s) = min(arrivals, L / (fwd + copies x
(prod + handoff x s))) and the consumer writes W = min(copies x F, its capacity), so s = W /
(copies x F): a fixed point, solved in closed form (`capture.flow`). Costs come from a
calibration of this machine's runs (`capture.calibration`); arrivals are min(offer, ports x
line, PCIe), the PCIe ceiling that of the NIC's forwarding profile (`pcieperf dpdk-fwd`'s
pcie_max_pps).
"""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import NDArray

from pcieperf.capture.advice import advice, verdict
from pcieperf.capture.calibration import (
    DEFAULT_CALIBRATION,
    CaptureCalibration,
    Wakeup,
    load_calibration,
    machine_calibration,
)
from pcieperf.capture.costs import wakeup_of, writer_of, writer_source
from pcieperf.capture.evaluate import CaptureRows, evaluate_capture
from pcieperf.capture.machine import Machine
from pcieperf.capture.model_text import model_table
from pcieperf.capture.path import BUFFER_SHARE, CAPTURE_SIZES
from pcieperf.capture.primitives import cache_file, cached, probe_folder
from pcieperf.capture.setup import CaptureSetup
from pcieperf.capture.travel import travelled
from pcieperf.dpdk.forwarding import ForwardingConfig
from pcieperf.errors import UsageError, param, require_positive
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pcie.link import Link
from pcieperf.results import Table, finite_or_none

Array = NDArray[np.float64]


def capture_model(
    *,
    sizes: str | int | list[int | str] = CAPTURE_SIZES,
    design: str = "batched",
    file_format: str | None = None,
    sink: str = "null",
    sink_gbps: float | None = None,
    direction: str = "both",
    capture_ports: int = 1,
    ports: int = 2,
    eth: int = 10,
    pps: float | str | None = None,
    fwd_lcores: float = 2,
    capture_cores: float = 1,
    snaplen: int = 0,
    ring_size: int = 2048,
    buffer_share: float = BUFFER_SHARE,
    pool_mbufs: int | None = None,
    cache_mib: float | None = None,
    profile: str = DEFAULT_PROFILE,
    fwd_ns: float | None = None,
    from_run: int | None = None,
    db: str | os.PathLike[str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
    **options: object,
) -> Table:
    """Will a capture keep up, and what does it cost the forwarding? Capture and forwarding
    rates per frame size or mix for one design (`pcieperf capture model`); defaults are the
    study's: testpmd forwarding 2x10 GbE on an XL710 at line rate with 2 lcores, Rx and Tx of
    one port captured by one core, written to /dev/null. `pps` is the offer over all ports
    (default: line rate), `fwd_ns` replaces the calibration's forwarding cost per packet, and
    `from_run` takes it from stored capture run N instead (its forwarding lcores' CPU ns per
    packet without capture; the store `db`). `pool_mbufs` is the capture pool (default: the
    design's tool's), `cache_mib` the cache it must fit (default: the calibration runs').
    `calibration`: a `capture calibrate` file; default this machine's (`capture calibrate
    --here`) where there is one, else the shipped one. `options` are `dpdk-fwd`'s forwarding
    setup (`rs_thresh`, `batch`, ...: `dpdk.api.forwarding_config`'s keywords) and the link
    (`make_link`'s), checked as there."""
    from pcieperf.dpdk.api import link_and_config
    from pcieperf.nic.api import frame_mixes
    from pcieperf.units import parse_rate

    setup = CaptureSetup(
        design, file_format, sink, sink_gbps, direction, capture_ports, ports, fwd_lcores,
        capture_cores, snaplen, ring_size, buffer_share, pool_mbufs, cache_mib,
    )  # fmt: skip
    if fwd_ns is not None:
        require_positive(param("fwd_ns"), fwd_ns)
    fwd_from = "given (fwd_ns)" if fwd_ns is not None else "calibration"
    if from_run is not None:
        if fwd_ns is not None:
            raise UsageError(
                f"give {param('fwd_ns')} or {param('from_run')}, not both: each sets the "
                "forwarding cost"
            )
        fwd_ns = _run_forwarding_ns(from_run, db)
        fwd_from = f"capture run {from_run} (fwd_cpu_ns_no_capture)"
    link, forwarding = link_and_config(None, **options)
    offer = None if pps is None else parse_rate(str(pps))
    mixes = frame_mixes(sizes, None)
    loaded, chosen = chosen_calibration(calibration, db)
    cal, scaled = carried(loaded, db)

    def evaluate(at: CaptureSetup) -> CaptureRows:
        return evaluate_capture(
            cal, at, mixes, eth=eth, link=link, profile=profile, pps=offer, fwd_ns=fwd_ns,
            forwarding=forwarding,
        )  # fmt: skip

    found = evaluate(setup)
    provenance = _provenance(cal, setup, fwd_from) | scaled | {"chosen": chosen}
    payload = {
        "inputs": _inputs(setup, cal, eth, offer, profile, link, forwarding),
        "calibration": provenance,
        "verdict": verdict(found, setup, provenance),
        "advice": advice(found, setup, cal, evaluate),
        "rows": _rows(found, setup),
    }
    return model_table(payload)


def chosen_calibration(
    calibration: str | os.PathLike[str] | None, db: str | os.PathLike[str] | None = None
) -> tuple[CaptureCalibration, str]:
    """The calibration to price with, and why it: the one given, else this machine's own
    (`capture calibrate --here`) beside the store `db` where it exists, else the shipped one."""
    if calibration is not None:
        return load_calibration(calibration), "given"
    own = machine_calibration(probe_folder(db), Machine.here().slug)
    if own.is_file():
        return load_calibration(own), "this machine's: capture calibrate --here"
    return load_calibration(DEFAULT_CALIBRATION), "shipped"


def _inputs(
    setup: CaptureSetup,
    cal: CaptureCalibration,
    eth: int,
    offer: float | None,
    profile: str,
    link: Link,
    forwarding: ForwardingConfig,
) -> dict[str, object]:
    """The inputs that decided the rows, as scalars."""
    return {
        "design": setup.design,
        "format": setup.file_format,
        "sink": setup.sink,
        "sink_gbps": setup.sink_gbps,
        "direction": setup.direction,
        "capture_ports": setup.capture_ports,
        "ports": setup.ports,
        "copies_per_packet": setup.copies,
        "eth_gbps": eth,
        "offered_pps": offer,
        "fwd_lcores": setup.fwd_lcores,
        "capture_cores": setup.capture_cores,
        "snaplen": setup.snaplen,
        "ring_size": setup.ring_size,
        "pool_mbufs": setup.pool,
        "cache_mib": setup.cache_bytes(cal) / 2**20,
        "buffer_share": setup.buffer_share if setup.shape.contiguous else None,
        "profile": profile,
        "link": f"Gen{link.gen} x{link.lanes}",
        "forwarding": {  # the forwarding setup the PCIe ceiling is priced with (dpdk-fwd's)
            "rx_desc_bytes": forwarding.rx_desc_bytes,
            "tx_desc_bytes": forwarding.tx_desc_bytes,
            "rs_thresh_txd": forwarding.rs_thresh,
            "rx_free_thresh_rxd": forwarding.rx_free_thresh,
            "batch": forwarding.batch,
            "doorbell_bytes": forwarding.doorbell_bytes,
            "tx_wb_full_line": forwarding.full_line_tx_writeback,
        },
    }


def _run_forwarding_ns(run_id: int, db: str | os.PathLike[str] | None) -> float:
    """A stored capture run's forwarding cost: its lcores' CPU ns per packet, alone."""
    from pcieperf.capture.stored import read_runs

    (found,) = read_runs([run_id], db)
    return float(found["fwd_cpu_ns_no_capture"])


def _provenance(cal: CaptureCalibration, setup: CaptureSetup, fwd_from: str) -> dict[str, object]:
    """Which calibration the costs came from, where the forwarding cost did, and whether its
    runs were made on this kind of machine."""
    here = Machine.here()
    return {
        "file": cal.path,
        "measured_on": cal.meta.measured_on,
        "dpdk_version": cal.meta.dpdk_version,
        "runs": len(cal.meta.runs),
        "fwd_cost_from": fwd_from,
        "writes_from": writer_source(cal, setup),
        "cache_from": "given (cache_mib)" if setup.cache_mib is not None else "calibration runs",
        "wakeup": _wakeup(wakeup_of(cal, writer_of(cal, setup, setup.sink))),
        "machine": f"{cal.meta.cpu_model}, {cal.meta.cpus} CPUs" if cal.meta.cpu_model else None,
        "this_machine": f"{here.cpu_model}, {here.cpus} CPUs",
        "measured_here": measured_here(cal),
    }


def carried(
    cal: CaptureCalibration, db: str | os.PathLike[str] | None
) -> tuple[CaptureCalibration, dict[str, object]]:
    """`cal` as it prices this machine: on another kind of machine than its runs', its costs
    scaled by this machine's kept probe (`capture probe`) over the one it records
    (`capture.travel`), with which probe and ratios; on its own kind, itself and nothing."""
    if measured_here(cal) is not False:
        return cal, {}
    kind = Machine.here().kind
    here = cached(probe_folder(db), kind)
    if here is None or cal.meta.probe is None:
        return cal, {"scaled_by": {}, "probe_here": None}
    moved, ratios = travelled(cal, here)
    return moved, {"scaled_by": ratios, "probe_here": str(cache_file(probe_folder(db), kind))}


def _wakeup(wakeup: Wakeup) -> dict[str, object]:
    """The wake-up loss rule the rows used: its share at no hold time, its scale (None: a
    constant share) and the hold times of the runs it was fitted to."""
    return {
        "loss_at_zero": wakeup.loss_at_zero,
        "scale_us": finite_or_none(1e6 * wakeup.scale_s),
        "runs": wakeup.runs,
        "hold_us_measured": [1e6 * wakeup.hold_min_s, 1e6 * wakeup.hold_max_s],
    }


def measured_here(cal: CaptureCalibration) -> bool | None:
    """Whether the calibration's runs were made on this kind of machine (CPU model and count);
    None if it does not say which machine."""
    if not cal.meta.cpu_model:
        return None
    return (cal.meta.cpu_model, cal.meta.cpus) == Machine.here().kind


def _rows(found: CaptureRows, setup: CaptureSetup) -> list[dict[str, object]]:
    """One JSON row per size or mix: the contract's outputs with bounds, then the costs."""
    v = found.values
    dropped = found.copies * v["fwd_pps"] - v["capture_pps"]  # copies per second the ring drops
    with np.errstate(divide="ignore"):
        ring_s = np.where(found.saturated, setup.ring_size / dropped, np.nan)
    columns = {
        "size": np.array([int(x) if x.isdecimal() else x for x in found.labels], dtype=object),
        "frame_bytes": found.frame_bytes,
        **v,
        "limited_by": found.limited_by,
        "fwd_ns_per_packet": found.costs.fwd_ns,
        "producer_ns_per_copy": found.costs.prod_ns,
        "handoff_ns_per_copy": found.costs.handoff_ns,
        "consumer_ns_per_record": found.costs.cons_ns,
        "record_bytes": found.costs.record_bytes,
        "records_per_buffer": found.costs.per_buffer,
        "ring_full_after_s": ring_s,  # how long the ring hides the loss from a fresh start
        "ring_holds_s": found.ring_holds_s,  # the ring's copies at the rate they arrive
    }
    rows = [
        dict(zip(columns, row, strict=True))
        for row in zip(*(c.tolist() for c in columns.values()), strict=True)
    ]
    for row in rows:  # NaN: the ring never fills; inf: nothing arrives
        for key in ("ring_full_after_s", "ring_holds_s"):
            row[key] = finite_or_none(row[key])
    return rows

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
from dataclasses import dataclass, replace
from itertools import product
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf.capture import tools
from pcieperf.capture.calibration import (
    DEFAULT_CALIBRATION,
    CaptureCalibration,
    Wakeup,
    load_calibration,
)
from pcieperf.capture.flow import Flow, limited_by, solve
from pcieperf.capture.machine import Machine
from pcieperf.capture.model_text import model_table
from pcieperf.capture.path import (
    BUFFER_SHARE,
    CAPTURE_SIZES,
    DESIGNS,
    DIRECTIONS,
    FORMATS,
    Design,
    design,
    touches_bytes,
)
from pcieperf.capture.pool import cold_bytes
from pcieperf.dpdk.forwarding import ForwardingConfig, forwarding_profile
from pcieperf.errors import UsageError, param, require_choice, require_positive
from pcieperf.net.ethernet import Ethernet, PacketMix
from pcieperf.net.wire import FCS_BYTES
from pcieperf.nic.nic import evaluate
from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile
from pcieperf.nic.rows import mix_rows
from pcieperf.pcie.link import Link
from pcieperf.results import Table

if TYPE_CHECKING:
    from typing import Unpack

    from pcieperf.pcie.api import LinkOptions

Array = NDArray[np.float64]
MBUF_DATA_ROOM = 2048  # RTE_MBUF_DEFAULT_DATAROOM (lib/mbuf/rte_mbuf.h): contiguous buffers
PCAP_RECORD_HEADER = 16  # pcap-savefile(5): ts_sec, ts_usec, caplen, len, 4 B each
PCAPNG_EPB_BYTES = 32  # pcapng (draft-ietf-opsawg-pcapng §4.3) Enhanced Packet Block: type, length,
# interface, timestamp (2 x 4 B), captured and original length, trailing length; the data is
# padded to 32 bits and options follow (their bytes are calibrated: Writes.pcapng_options_bytes)
BURST = 32  # app/dumpcap/main.c BURST_SIZE: one ring dequeue, one writev per burst


@dataclass(frozen=True)
class CaptureSetup:
    """How the capture runs: the design, what is copied, where it is written, the cores."""

    design: str = "batched"
    format: str | None = None  # None: the design's (pcap for per-packet, else pcapng)
    sink: str = "null"
    sink_gbps: float | None = None  # a bandwidth the sink writes at most (None: CPU only)
    direction: str = "both"
    capture_ports: int = 1
    ports: int = 2
    fwd_lcores: float = 2
    capture_cores: float = 1
    snaplen: int = 0
    ring_size: int = 2048
    buffer_share: float = BUFFER_SHARE
    pool_mbufs: int | None = None  # None: the design's tool's (dumpcap: 2 x ring; pdump: 65535)
    cache_mib: float | None = None  # None: what the calibration's runs measured

    def __post_init__(self) -> None:
        require_choice(param("design"), self.design, DESIGNS)
        require_choice(param("direction"), self.direction, tuple(DIRECTIONS))
        if self.format is not None:
            require_choice(param("file_format"), self.format, FORMATS)
        if self.format is not None and self.format not in self.tool.formats:
            raise UsageError(
                f"{param('design')} {self.design} is {self.tool.binary}'s: {param('file_format')} "
                f"{' or '.join(self.tool.formats)} only"
            )
        for name in ("fwd_lcores", "capture_cores", "ports", "capture_ports", "ring_size"):
            require_positive(param(name), getattr(self, name))
        for name in ("pool_mbufs", "cache_mib"):
            if getattr(self, name) is not None:
                require_positive(param(name), getattr(self, name))
        if self.capture_ports > self.ports:
            raise UsageError(
                f"{param('capture_ports')} {self.capture_ports} is more than "
                f"{param('ports')} {self.ports}"
            )
        if self.sink_gbps is not None:
            require_positive(param("sink_gbps"), self.sink_gbps)
        if not (isinstance(self.snaplen, int) and self.snaplen >= 0):
            raise UsageError(
                f"{param('snaplen')} {self.snaplen!r} is not allowed; use bytes >= 0 (0: all)"
            )
        if not 0 <= self.buffer_share <= 1:
            raise UsageError(
                f"{param('buffer_share')} {self.buffer_share!r} is not allowed; use 0 to 1"
            )

    @property
    def shape(self) -> Design:
        """The design's row (`capture.path`)."""
        return design(self.design)

    @property
    def tool(self) -> tools.CaptureTool:
        """The tool whose copies and writes the design is."""
        return tools.tool(self.shape.tool)

    @property
    def file_format(self) -> str:
        """The format written: as given, else the design's own."""
        return self.format or self.shape.format

    @property
    def pool(self) -> int:
        """The capture pool's mbufs: as given, else what the design's tool makes."""
        return self.pool_mbufs or self.tool.pool_mbufs(self.ring_size)

    def cache_bytes(self, cal: CaptureCalibration) -> float:
        """The cache the pool must fit: as given, else what the calibration's runs measured."""
        return self.cache_mib * 2**20 if self.cache_mib is not None else cal.meta.cache_bytes

    @property
    def copies(self) -> float:
        """Copies per forwarded packet: each captured port's directions, over all ports (the
        study captures Rx and Tx of one port of two: one copy per forwarded packet)."""
        return DIRECTIONS[self.direction] * self.capture_ports / self.ports


# --- costs per packet ------------------------------------------------------------------------


def captured_bytes(frame_bytes: ArrayLike, snaplen: ArrayLike) -> Array:
    """Bytes a copy keeps of each frame: the mbuf holds the frame less its FCS, cut at
    `snaplen` where one is set (0: all)."""
    pkt = np.asarray(frame_bytes, dtype=np.float64) - FCS_BYTES
    return np.where(np.asarray(snaplen) > 0, np.minimum(pkt, snaplen), pkt)


def record_bytes(fmt: str, captured: Array, options_bytes: float) -> Array:
    """File bytes per record: pcap's header + data, or pcapng's EPB, padded data and options."""
    if fmt == "pcap":
        return PCAP_RECORD_HEADER + captured
    return PCAPNG_EPB_BYTES + 4 * np.ceil(captured / 4) + options_bytes


def writer_of(cal: CaptureCalibration, setup: CaptureSetup, sink: str) -> str:
    """The consumer's write path: the design's tool's writer of its format where the
    calibration has it for `sink`, else the design's stand-in (per-packet: dumpcap -P's
    pcap_dump for dpdk-pdump's)."""
    own = setup.tool.writer(setup.file_format).name
    stand_in = setup.shape.stand_in
    if stand_in is None or own in cal.consumer(sink).fixed_ns:
        return own
    return stand_in


def stood_in(cal: CaptureCalibration, setup: CaptureSetup) -> bool:
    """Whether the design's writes are its stand-in's, at the study's write calls per record
    (its tool was not calibrated)."""
    return writer_of(cal, setup, setup.sink) != setup.tool.writer(setup.file_format).name


def writer_source(cal: CaptureCalibration, setup: CaptureSetup) -> str:
    """Where the design's writes come from: the runs of its writer, or, for a design whose
    tool was not calibrated, its stand-in with the study's write calls per record."""
    writer = writer_of(cal, setup, setup.sink)
    if stood_in(cal, setup):
        return (
            f"{writer}'s costs with the study's {setup.shape.stand_in_writes:g} write calls "
            f"per record (no {setup.tool.name} runs)"
        )
    return f"the {writer} runs' write calls"


@dataclass(frozen=True)
class Costs:
    """CPU ns per item of each thread, per distinct frame size (arrays), and record sizes."""

    fwd_ns: Array  # forwarding lcore, per forwarded packet, without capture
    prod_ns: Array  # forwarding lcore, per copy, whether delivered or dropped
    handoff_ns: Array  # forwarding lcore, per copy delivered
    cons_ns: Array  # capture core, per record written
    record_bytes: Array
    per_buffer: Array  # records per buffer, ring slot and hand-off (1 but for contiguous)

    def scaled(self, fwd: float, prod: float, cons: float) -> Costs:
        """The costs with each thread's scaled (a corner of the calibration's spread)."""
        return replace(
            self,
            fwd_ns=self.fwd_ns * fwd,
            prod_ns=self.prod_ns * prod,
            handoff_ns=self.handoff_ns * prod,
            cons_ns=self.cons_ns * cons,
        )


def path_costs(
    cal: CaptureCalibration,
    setup: CaptureSetup,
    frames: NDArray[np.int64],
    buffer_share: float,
    fwd_ns: float | None = None,
) -> Costs:
    """Each thread's cost per item at each frame size (incl. FCS) for `setup`'s design."""
    pkt = frames.astype(np.float64) - FCS_BYTES  # the mbuf holds the frame less its FCS
    cap = captured_bytes(frames, setup.snaplen)
    fmt = setup.file_format
    rec = record_bytes(fmt, cap, cal.writes.pcapng_options_bytes)
    writer = writer_of(cal, setup, setup.sink)
    per_buffer = np.ones_like(rec)
    if setup.shape.contiguous:
        per_buffer = np.maximum(1.0, np.floor(MBUF_DATA_ROOM / rec))
    calls = (
        np.full_like(rec, setup.shape.stand_in_writes)
        if stood_in(cal, setup)
        else write_calls(cal, writer, rec, per_buffer)
    )
    forwarding = cal.forwarding.ns(pkt) if fwd_ns is None else np.full_like(pkt, fwd_ns)
    shared = (1 - buffer_share) + buffer_share / per_buffer  # of each fixed cost, per record
    # a contiguous buffer holds per_buffer copies: its mbuf's lines are theirs
    cold = cold_bytes(setup.pool, cap * per_buffer, setup.cache_bytes(cal)) / per_buffer
    costs = copy_costs(
        cal,
        setup.sink,
        writer,
        np.asarray(forwarding, np.float64),
        cap,
        rec,
        calls,
        cold,
        shared,
    )
    return replace(costs, per_buffer=per_buffer)


def write_calls(
    cal: CaptureCalibration, writer: str, rec: Array, per_buffer: Array | float = 1.0
) -> Array:
    """Write calls per record as the calibration measured them for `writer`: its calls per
    burst spread over the records a buffer holds, and its calls per byte."""
    writes = cal.writes
    return (
        writes.per_record.get(writer, 1 / BURST) / per_buffer
        + writes.per_byte.get(writer, 0.0) * rec
    )


def copy_costs(
    cal: CaptureCalibration,
    sink: str,
    writer: str,
    fwd_ns: Array,
    cap: Array,
    rec: Array,
    calls: Array,
    cold: Array,
    shared: Array | float = 1.0,
) -> Costs:
    """The threads' costs per item: forwarding as given, the producer's copy and the
    consumer's writes of capture path `writer` into `sink` with `calls` write calls per
    record, `cold` bytes of each copy on lines no longer cached (`capture.pool`); `shared`
    scales the fixed costs (records per buffer, `path_costs`). One engine for the model and
    the fit's predictions of stored runs (`capture.fit`)."""
    consumer, producer = cal.consumer(sink), cal.producer
    for what, have, key in (
        ("copy", producer.fixed_ns, writer),
        ("write", consumer.fixed_ns, writer),
    ):
        if key not in have:
            raise UsageError(
                f"calibration {cal.path or '(given)'} has no {key} runs: no {what} cost for it"
            )
    return Costs(
        fwd_ns=fwd_ns,
        prod_ns=producer.fixed_ns[writer] * shared + producer.per_byte_ns * cap,
        handoff_ns=producer.handoff_ns * shared + producer.cold_byte_ns * cold,
        cons_ns=consumer.fixed_ns[writer] * shared
        + (consumer.per_byte_ns * rec + consumer.cold_byte_ns * cold) * touches_bytes(writer, sink)
        + consumer.write_call_ns * calls,
        record_bytes=rec,
        per_buffer=np.ones_like(rec),
    )


# --- per size or mix, with bounds ------------------------------------------------------------

OUTPUTS = (
    "capture_pps",
    "capture_gbps",
    "loss",
    "fwd_pps_no_capture",
    "fwd_pps",
    "fwd_gbps",
    "fwd_penalty_ns_per_packet",  # forwarding-lcore CPU the copies add per forwarded packet
)


def wakeup_of(cal: CaptureCalibration, writer: str) -> Wakeup:
    """What a consumer that keeps up loses on waking: the calibration's wake-up loss for the
    writers of a tool that sleeps, none for one that polls without sleeping."""
    return cal.wakeup if tools.tool_of(writer).sleeps else Wakeup()


def wakeup_loss(cal: CaptureCalibration, writer: str) -> float:
    """The share of copies a consumer that keeps up loses on waking (`wakeup_of`)."""
    return wakeup_of(cal, writer).loss


def _corners(cal: CaptureCalibration, setup: CaptureSetup) -> list[tuple[float, ...]]:
    """(forwarding, producer, consumer) scales, buffer shares and wake-up losses spanning the
    spread: each thread's cost at its band's ends, the buffer share at 0 and 1 (contiguous
    only), the wake-up loss at its lowest and highest (a consumer that sleeps)."""
    bands = (cal.forwarding.band, cal.producer.band, cal.consumer(setup.sink).band)
    shares = (0.0, setup.buffer_share, 1.0) if setup.shape.contiguous else (setup.buffer_share,)
    wakeup = wakeup_of(cal, writer_of(cal, setup, setup.sink))
    losses = {wakeup.loss_low, wakeup.loss_high}  # one corner where they are one (pdump: 0)
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
) -> CaptureRows:
    """The capture path at each size or mix: arrivals from the offer (default: line rate on
    every port), the ports' line and the NIC's PCIe ceiling; costs central and at every corner
    of the calibration's spread (bounds: the lowest and highest value over them)."""
    port, rows = Ethernet(eth), mix_rows(mixes)
    nic = evaluate(
        forwarding_profile(ForwardingConfig(), load_profile(profile)), link or Link(), port, rows
    )
    line, pcie = setup.ports * nic.line_pps, nic.pcie_max_pps
    offered = line if pps is None else np.minimum(pps, line)  # more than the line never arrives
    arrivals = np.minimum(offered, pcie)
    wire_bits = nic.per_packet(port.wire_bytes(nic.sizes)) * 8

    central_loss = wakeup_loss(cal, writer_of(cal, setup, setup.sink))

    def rows_at(
        share: float, scale: tuple[float, float, float], lost_waking: float = central_loss
    ) -> tuple[Costs, Flow, Array | float]:
        per_size = path_costs(cal, setup, nic.sizes, share, fwd_ns).scaled(*scale)
        costs = Costs(*(nic.per_packet(getattr(per_size, f)) for f in Costs.__dataclass_fields__))
        sink_pps = (
            np.inf if setup.sink_gbps is None else setup.sink_gbps * 1e9 / 8 / costs.record_bytes
        )
        flow = solve(
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
        return costs, flow, sink_pps

    def outputs(costs: Costs, flow: Flow) -> dict[str, Array]:
        rates = {k: getattr(flow, k) for k in ("capture_pps", "fwd_pps_no_capture", "fwd_pps")}
        penalty = setup.copies * (costs.prod_ns + costs.handoff_ns * flow.delivered)
        return rates | {
            "capture_gbps": flow.capture_pps * wire_bits / 1e9,
            "fwd_gbps": flow.fwd_pps * wire_bits / 1e9,
            "loss": 1 - flow.delivered,
            "fwd_penalty_ns_per_packet": penalty,
        }

    costs, flow, sink_pps = rows_at(setup.buffer_share, (1.0, 1.0, 1.0))
    central = outputs(costs, flow)
    spread = [outputs(*rows_at(s, (f, p, c), w)[:2]) for f, p, c, s, w in _corners(cal, setup)]
    values: dict[str, Array] = {}
    for key in OUTPUTS:
        stacked = np.stack([central[key], *(corner[key] for corner in spread)])
        values |= {key: central[key], f"{key}_low": stacked.min(0), f"{key}_high": stacked.max(0)}
    consumer_cpu = setup.capture_cores * 1e9 / costs.cons_ns
    return CaptureRows(
        labels=rows.label,
        frame_bytes=nic.mean_frame_bytes,
        values=values,
        limited_by=limited_by(flow, consumer_cpu, sink_pps, offered, pcie),
        saturated=flow.saturated,
        costs=costs,
        copies=setup.copies,
    )


# --- the public function ---------------------------------------------------------------------


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
    calibration: str | os.PathLike[str] = DEFAULT_CALIBRATION,
    **link_options: Unpack[LinkOptions],
) -> Table:
    """Will a capture keep up, and what does it cost the forwarding? Capture and forwarding
    rates per frame size or mix for one design (`pcieperf capture model`); defaults are the
    study's: testpmd forwarding 2x10 GbE on an XL710 at line rate with 2 lcores, Rx and Tx of
    one port captured by one core, written to /dev/null. `pps` is the offer over all ports
    (default: line rate), `fwd_ns` replaces the calibration's forwarding cost per packet, and
    `from_run` takes it from stored capture run N instead (its forwarding lcores' CPU ns per
    packet without capture; the store `db`). `pool_mbufs` is the capture pool (default: the
    design's tool's), `cache_mib` the cache it must fit (default: the calibration runs')."""
    from pcieperf.nic.api import frame_mixes
    from pcieperf.pcie.api import make_link
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
    link = make_link(**link_options)
    offer = None if pps is None else parse_rate(str(pps))
    mixes = frame_mixes(sizes, None)
    cal = load_calibration(calibration)
    found = evaluate_capture(
        cal, setup, mixes, eth=eth, link=link, profile=profile, pps=offer, fwd_ns=fwd_ns
    )
    payload = {
        "inputs": _inputs(setup, cal, eth, offer, profile, link, fwd_ns),
        "calibration": _provenance(cal, setup, fwd_from),
        "rows": _rows(found, setup),
    }
    return model_table(payload)


def _inputs(
    setup: CaptureSetup,
    cal: CaptureCalibration,
    eth: int,
    offer: float | None,
    profile: str,
    link: Link,
    fwd: float | None,
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
        "wakeup_loss": wakeup_loss(cal, writer_of(cal, setup, setup.sink)),
        "machine": f"{cal.meta.cpu_model}, {cal.meta.cpus} CPUs" if cal.meta.cpu_model else None,
        "this_machine": f"{here.cpu_model}, {here.cpus} CPUs",
        "measured_here": measured_here(cal),
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
    }
    rows = [
        dict(zip(columns, row, strict=True))
        for row in zip(*(c.tolist() for c in columns.values()), strict=True)
    ]
    for row in rows:
        if row["ring_full_after_s"] != row["ring_full_after_s"]:  # NaN: it never fills
            row["ring_full_after_s"] = None
    return rows

"""What each thread of the capture path spends per item, per frame size, for a setup: the
forwarding lcore per packet, the producer (the lcore's Rx/Tx callbacks) per copy and per copy
delivered, the consumer (the tool's capture thread) per record written, and what a consumer
that keeps up loses while it wakes; one engine for the model and for the fit's predictions of
stored runs (`capture.fit`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf.capture import tools
from pcieperf.capture.calibration import CaptureCalibration, Wakeup
from pcieperf.capture.path import touches_bytes
from pcieperf.capture.pool import cold_bytes
from pcieperf.capture.setup import CaptureSetup
from pcieperf.errors import UsageError
from pcieperf.net.wire import FCS_BYTES

Array = NDArray[np.float64]
MBUF_DATA_ROOM = 2048  # RTE_MBUF_DEFAULT_DATAROOM (lib/mbuf/rte_mbuf.h): contiguous buffers
PCAP_RECORD_HEADER = 16  # pcap-savefile(5): ts_sec, ts_usec, caplen, len, 4 B each
PCAPNG_EPB_BYTES = 32  # pcapng (draft-ietf-opsawg-pcapng §4.3) Enhanced Packet Block: type, length,
# interface, timestamp (2 x 4 B), captured and original length, trailing length; the data is
# padded to 32 bits and options follow (their bytes are calibrated: Writes.pcapng_options_bytes)
BURST = 32  # app/dumpcap/main.c BURST_SIZE: one ring dequeue, one writev per burst


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
    if not prices(cal, writer, sink):
        raise UsageError(_unmeasured(cal, writer, sink))
    consumer, producer = cal.consumer(sink), cal.producer
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


def prices(cal: CaptureCalibration, writer: str, sink: str) -> bool:
    """Whether `cal`'s runs measured capture path `writer` into `sink`."""
    consumer = cal.consumers.get(sink)
    return writer in cal.producer.fixed_ns and consumer is not None and writer in consumer.fixed_ns


def _unmeasured(cal: CaptureCalibration, writer: str, sink: str) -> str:
    """Why a capture path into a sink has no price, and the runs that would give it one."""
    tool = tools.tool_of(writer)
    fmt = tool.writers[[w.name for w in tool.writers].index(writer)].format
    has = ", ".join(cal.consumer(sink).fixed_ns)
    return (
        f"calibration {cal.path or '(given)'} has no runs of {tool.name} writing {fmt} into "
        f"{sink} (it has {has} there): measure them with `pcieperf capture run --tool "
        f"{tool.name} --capture-format {fmt} --sink {sink}` at two frame sizes or more and "
        "`pcieperf capture calibrate`"
    )


def wakeup_of(cal: CaptureCalibration, writer: str) -> Wakeup:
    """What a consumer that keeps up loses on waking: the calibration's wake-up loss for the
    writers of a tool that sleeps, none for one that polls without sleeping."""
    return cal.wakeup if tools.tool_of(writer).sleeps else Wakeup()

"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns, statistics
(rates per window, frame sizes, bursts at line rate), merging, synthetic traffic, and the
per-window bandwidth a trace needs from a per-packet cost.

Parsing, writing and merging run in the Rust core (`pcieperf._core`); this module validates
arguments, names files in errors and does the vectorised statistics.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pcieperf._native import core
from pcieperf.errors import UsageError, require_choice, require_new_file, require_positive
from pcieperf.ethernet import FCS_BYTES, MIN_FRAME_BYTES, Ethernet, PacketMix

NS_PER_S = 1_000_000_000
WINDOWS_NS = (1_000_000, NS_PER_S)  # the 1 ms and 1 s rate windows
ARRIVALS = ("constant", "poisson", "onoff")
FORMATS = ("pcap", "pcapng")
# Frame-size buckets of RMON etherStatsPkts64Octets..Pkts1024to1518Octets (RFC 2819), frame
# bytes incl. FCS, with the runts below and the jumbo/GSO frames above them.
SIZE_BINS = (0, 64, 65, 128, 256, 512, 1024, 1519)
SIZE_LABELS = ("<64", "64", "65-127", "128-255", "256-511", "512-1023", "1024-1518", ">1518")
# Link-layer header bytes to remove to reach the Ethernet frame (minus its 14-byte header):
# LINKTYPE_ETHERNET 1, LINUX_SLL 113 (16-byte header), LINUX_SLL2 276 (20 bytes), and raw IP
# (RAW 101, IPV4 228, IPV6 229) that has no link header (draft-ietf-opsawg-pcaplinktype).
ETHERNET_HEADER_BYTES = 14
LINK_HEADER_BYTES = {1: ETHERNET_HEADER_BYTES, 113: 16, 276: 20, 101: 0, 228: 0, 229: 0}
# A fixed start for synthetic captures (2026-01-01T00:00:00Z), so that they are reproducible.
SYNTH_START_NS = 1_767_225_600 * NS_PER_S


class TraceFileError(UsageError):
    """A capture file is missing, unreadable or damaged; the message names file and offset."""


@dataclass(frozen=True)
class Interface:
    """One capture interface (pcapng IDB, or the single interface of a pcap file)."""

    linktype: int
    snaplen: int
    tsresol: int
    tsoffset_s: int
    name: str | None
    section: int


@dataclass(frozen=True)
class Trace:
    """Every packet of a capture as columns; `iface` indexes `interfaces` (numbered across
    pcapng sections in file order)."""

    path: str
    format: str
    ts_ns: NDArray[np.int64]
    caplen: NDArray[np.uint32]
    wirelen: NDArray[np.uint32]
    iface: NDArray[np.uint32]
    interfaces: tuple[Interface, ...]
    skipped: int = 0
    untimed: int = 0
    offset: NDArray[np.uint64] | None = None

    @property
    def packets(self) -> int:
        """Number of packet records."""
        return int(self.ts_ns.size)

    def frame_bytes(self) -> NDArray[np.int64]:
        """Ethernet frame size of each packet incl. FCS, padded to the 64-byte minimum: what
        the NIC moves. Captures hold frames without the FCS; other link layers are converted."""
        linktypes = np.array([i.linktype for i in self.interfaces], dtype=np.int64)
        unknown = sorted(set(linktypes[np.unique(self.iface)].tolist()) - set(LINK_HEADER_BYTES))
        if unknown:
            raise UsageError(
                f"{self.path}: link type {unknown[0]} has no Ethernet equivalent; traces for "
                f"the models need link types {', '.join(map(str, LINK_HEADER_BYTES))}"
            )
        header = np.array([LINK_HEADER_BYTES.get(int(t), 0) for t in linktypes], dtype=np.int64)
        frame = self.wirelen.astype(np.int64) - header[self.iface] + ETHERNET_HEADER_BYTES
        return np.maximum(frame + FCS_BYTES, MIN_FRAME_BYTES)


def _core_call(func: object, *args: object, **kwargs: object) -> dict:
    """Calls a Rust trace function, turning its one-line errors into TraceFileError."""
    try:
        return func(*args, **kwargs)  # type: ignore[operator]
    except ValueError as exc:
        raise TraceFileError(str(exc)) from None


def read(path: str | os.PathLike, *, skip_bad: bool = False, offsets: bool = False) -> Trace:
    """Read a pcap or pcapng file; `skip_bad` passes over damaged records (counted in
    `skipped`), `offsets` also returns where each packet's bytes start in the file."""
    raw = _core_call(core().trace_read, os.fspath(path), skip_bad=skip_bad, offsets=offsets)
    return Trace(
        path=os.fspath(path),
        format=raw["format"],
        ts_ns=raw["ts_ns"],
        caplen=raw["caplen"],
        wirelen=raw["wirelen"],
        iface=raw["iface"],
        interfaces=tuple(Interface(**i) for i in raw["interfaces"]),
        skipped=raw["skipped"],
        untimed=raw["untimed"],
        offset=raw.get("offset"),
    )


def output_format(path: str | os.PathLike) -> str:
    """The output format (pcap or pcapng), from the output file's suffix."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise UsageError(f"output {os.fspath(path)!r} must end in .pcap or .pcapng")
    return suffix


def _check_output(
    output: str | os.PathLike, inputs: Sequence[str | os.PathLike], force: bool
) -> None:
    out = Path(output)
    if any(out.resolve() == Path(i).resolve() for i in inputs):
        raise UsageError(f"output {os.fspath(output)!r} is also an input; choose another name")
    require_new_file(out, force)


def _atomic_output(output: str | os.PathLike) -> Path:
    """A temporary file beside `output`: renamed onto it only once the write succeeded."""
    out = Path(output)
    handle, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent or ".")
    os.close(handle)
    return Path(tmp)


def _write_atomically(output: str | os.PathLike, write: object) -> dict:
    tmp = _atomic_output(output)
    try:
        stats = write(tmp)  # type: ignore[operator]
        tmp.replace(output)
    except TraceFileError as exc:  # name the file the user asked for, not the temporary one
        raise TraceFileError(str(exc).replace(str(tmp), os.fspath(output))) from None
    finally:
        tmp.unlink(missing_ok=True)
    return stats


def merge(
    inputs: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    force: bool = False,
    skip_bad: bool = False,
) -> dict:
    """Merge captures into `output` (.pcap or .pcapng) in timestamp order, stable for equal
    timestamps; pcapng output keeps one interface per input interface."""
    if not inputs:
        raise UsageError("merge needs at least one input capture")
    fmt = output_format(output)
    _check_output(output, inputs, force)
    paths = [os.fspath(p) for p in inputs]
    return _write_atomically(
        output,
        lambda tmp: _core_call(core().trace_merge, paths, os.fspath(tmp), fmt, skip_bad),
    )


def convert(source: str | os.PathLike, output: str | os.PathLike, *, force: bool = False) -> dict:
    """Rewrite a capture as ns pcap or pcapng (by suffix), packet for packet."""
    fmt = output_format(output)
    _check_output(output, [source], force)
    trace = read(source, offsets=True)
    data = np.memmap(source, dtype=np.uint8, mode="r") if trace.packets else np.zeros(1, np.uint8)

    def write(tmp: Path) -> dict:
        first, *rest = trace.interfaces
        writer = _core_call(
            core().TraceWriter, os.fspath(tmp), fmt, first.linktype, first.snaplen, first.name
        )
        ids = [0] + [
            _core_call(writer.add_interface, iface.linktype, iface.snaplen, iface.name)
            for iface in rest
        ]
        _core_call(
            writer.write_batch,
            trace.ts_ns,
            np.array(ids, dtype=np.uint32)[trace.iface],
            trace.wirelen,
            trace.caplen,
            data,
            trace.offset,
        )
        return _core_call(writer.close)

    if not trace.interfaces:
        raise UsageError(f"{os.fspath(source)}: no interface defined, nothing to convert")
    return _write_atomically(output, write)


# --- statistics -------------------------------------------------------------------------------


MAX_WINDOWS = 10_000_000  # a dense series longer than this is a mistake (wrong window or ts)


def window_sums(
    ts_ns: NDArray[np.int64], weights: NDArray[np.float64] | None, window_ns: int
) -> NDArray[np.float64]:
    """Sum of `weights` (or packet count) per window of `window_ns` from the first packet."""
    if ts_ns.size == 0:
        return np.zeros(0)
    index = (ts_ns - ts_ns.min()) // window_ns
    if index.max() >= MAX_WINDOWS:
        raise UsageError(
            f"the trace spans {(ts_ns.max() - ts_ns.min()) / NS_PER_S:.6g} s, which is "
            f"{int(index.max()) + 1} windows of {window_ns} ns; allowed are {MAX_WINDOWS}, "
            "so pass a larger --window"
        )
    return np.bincount(index, weights=weights).astype(np.float64)


def _rates(ts: NDArray[np.int64], wire_bits: NDArray[np.float64], window_ns: int) -> dict:
    """Peak packet and bit rates over windows of `window_ns` (only occupied windows are
    counted, so a trace spanning years costs no more than one spanning a second)."""
    if ts.size == 0:
        return {"window_ns": window_ns, "windows": 0, "peak_pps": 0.0, "peak_gbps": 0.0}
    occupied, index = np.unique((ts - ts.min()) // window_ns, return_inverse=True)
    packets = np.bincount(index)
    bits = np.bincount(index, weights=wire_bits)
    per_s = NS_PER_S / window_ns
    return {
        "window_ns": window_ns,
        "windows": int(occupied[-1] + 1),
        "peak_pps": float(packets.max() * per_s),
        "peak_gbps": float(bits.max() * per_s / 1e9),
    }


def size_histogram(frames: NDArray[np.int64]) -> dict[str, int]:
    """Packets per RMON frame-size bucket (frame bytes incl. FCS)."""
    counts = np.bincount(np.searchsorted(SIZE_BINS, frames, side="right") - 1, minlength=8)
    return {label: int(n) for label, n in zip(SIZE_LABELS, counts, strict=True)}


def _wire_frames(trace: Trace) -> NDArray[np.int64]:
    """Frame bytes incl. FCS where the link type is known, else the recorded wire length."""
    known = all(i.linktype in LINK_HEADER_BYTES for i in trace.interfaces)
    return trace.frame_bytes() if known else trace.wirelen.astype(np.int64)


def bursts(
    ts_ns: NDArray[np.int64], frames: NDArray[np.int64], eth: Ethernet, resolution_ns: int
) -> dict:
    """Runs of back-to-back packets: a packet is back-to-back with its predecessor when it
    starts no later than the predecessor's wire time at line rate (+ timestamp resolution)."""
    if ts_ns.size < 2:
        return {"bursts": 0, "packets_in_bursts": 0, "max_burst": int(ts_ns.size)}
    gap = np.diff(ts_ns)
    wire_ns = eth.wire_bytes(frames[:-1]) * 8 / eth.rate_gbps
    b2b = gap <= wire_ns + resolution_ns
    edges = np.diff(np.concatenate(([0], b2b.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    lengths = ends - starts + 1  # a run of k back-to-back gaps is a burst of k+1 packets
    return {
        "bursts": int(lengths.size),
        "packets_in_bursts": int(lengths.sum()),
        "mean_burst": float(lengths.mean()) if lengths.size else 0.0,
        "max_burst": int(lengths.max(initial=1)),
        "gap_ns_p50": float(np.percentile(gap, 50)),
        "gap_ns_p99": float(np.percentile(gap, 99)),
        "gap_ns_min": int(gap.min()),
    }


def _resolution_ns(trace: Trace) -> int:
    """Coarsest timestamp resolution among the interfaces, in ns (at least 1)."""
    worst = 1.0
    for i in trace.interfaces:
        base = 2.0 if i.tsresol & 0x80 else 10.0
        worst = max(worst, NS_PER_S * base ** -(i.tsresol & 0x7F))
    return int(np.ceil(worst))


def _summary(
    ts: NDArray[np.int64], wirelen: NDArray[np.uint32], caplen: NDArray[np.uint32]
) -> dict:
    n = int(ts.size)
    first = int(ts.min()) if n else None
    last = int(ts.max()) if n else None
    duration = (last - first) / NS_PER_S if n else 0.0
    wire = int(wirelen.sum(dtype=np.int64))
    return {
        "packets": n,
        "bytes_captured": int(caplen.sum(dtype=np.int64)),
        "bytes_wire": wire,
        "first_ts_ns": first,
        "last_ts_ns": last,
        "duration_s": duration,
        "mean_pps": n / duration if duration > 0 else None,
        "mean_gbps": wire * 8 / duration / 1e9 if duration > 0 else None,
    }


def stats(trace: Trace, eth: Ethernet) -> dict:
    """Everything `pcieperf trace stats` reports for one file (see the README's contract)."""
    order = np.argsort(trace.ts_ns, kind="stable")
    ts = trace.ts_ns[order]
    frames = _wire_frames(trace)[order]
    data_bits = trace.wirelen[order].astype(np.float64) * 8  # capinfos' "data bit rate"
    result = {
        "file": trace.path,
        "format": trace.format,
        **_summary(trace.ts_ns, trace.wirelen, trace.caplen),
        "out_of_order": int(np.count_nonzero(np.diff(trace.ts_ns) < 0)),
        "skipped": trace.skipped,
        "untimed": trace.untimed,
        "rates": [_rates(ts, data_bits, w) for w in WINDOWS_NS],
        "size_histogram": size_histogram(frames),
        "bursts": {"eth_gbps": eth.rate_gbps, **bursts(ts, frames, eth, _resolution_ns(trace))},
        "interfaces": [],
    }
    for k, iface in enumerate(trace.interfaces):
        mine = trace.iface == k
        result["interfaces"].append(
            {
                "id": k,
                "linktype": iface.linktype,
                "name": iface.name,
                "snaplen": iface.snaplen,
                "section": iface.section,
                **_summary(trace.ts_ns[mine], trace.wirelen[mine], trace.caplen[mine]),
            }
        )
    return result


# --- synthetic traffic ------------------------------------------------------------------------


def arrival_times(
    frames: NDArray[np.int64],
    pps: float,
    arrival: str,
    eth: Ethernet,
    rng: np.random.Generator,
    burst: int = 32,
) -> NDArray[np.int64]:
    """Arrival times (ns from 0) of `frames` at mean rate `pps`: evenly spaced, Poisson, or
    on/off bursts of `burst` back-to-back frames at line rate with exponential idle gaps."""
    require_choice("arrival process", arrival, ARRIVALS)
    n = frames.size
    if arrival == "constant":
        return (np.arange(n) * (NS_PER_S / pps)).astype(np.int64)
    if arrival == "poisson":
        gaps = rng.exponential(NS_PER_S / pps, n)
        return np.concatenate(([0.0], np.cumsum(gaps[:-1]))).astype(np.int64)
    wire_ns = eth.wire_bytes(frames) * 8 / eth.rate_gbps
    in_burst = np.arange(n) % burst != 0
    # Each burst occupies its wire time; the idle gap before it makes the mean rate `pps`.
    idle_mean = burst * NS_PER_S / pps - np.add.reduceat(wire_ns, np.arange(0, n, burst)).mean()
    idle = np.where(in_burst, 0.0, rng.exponential(max(idle_mean, 0.0), n))
    idle[0] = 0.0
    starts = np.concatenate(([0.0], np.cumsum(wire_ns[:-1]))) + np.cumsum(idle)
    return starts.astype(np.int64)


def synthetic(
    *,
    eth: Ethernet,
    mix: PacketMix,
    pps: float,
    duration_s: float,
    arrival: str = "constant",
    burst: int = 32,
    seed: int = 1,
) -> Trace:
    """An in-memory Ethernet trace: frames drawn from `mix`, arriving by `arrival` at mean rate
    `pps` for `duration_s` seconds (captured lengths exclude the FCS, as on Linux)."""
    require_positive("packet rate", pps)
    require_positive("duration", duration_s)
    require_positive("burst", burst)
    n = round(pps * duration_s)
    if n < 1:
        raise UsageError(f"{pps:g} pps for {duration_s:g} s is less than one packet")
    rng = np.random.default_rng(seed)
    frames = rng.choice(mix.sizes, size=n, p=mix.weights)
    line_pps = eth.rate_gbps * 1e9 / (8 * eth.wire_bytes(frames).mean())
    if pps > line_pps:
        raise UsageError(
            f"{pps / 1e6:g} Mpps of {mix.name} exceeds {eth.rate_gbps:g} GbE line rate "
            f"({line_pps / 1e6:.2f} Mpps); lower --pps or raise --eth"
        )
    ts = SYNTH_START_NS + arrival_times(frames, pps, arrival, eth, rng, int(burst))
    captured = (frames - FCS_BYTES).astype(np.uint32)
    return Trace(
        path=f"synthetic {mix.name} {arrival} {pps / 1e6:g} Mpps",
        format="synthetic",
        ts_ns=ts,
        caplen=captured,
        wirelen=captured,
        iface=np.zeros(n, dtype=np.uint32),
        interfaces=(Interface(1, 0, 9, 0, None, 0),),
    )


def synth(
    output: str | os.PathLike, *, flows: int = 1024, force: bool = False, **kw: object
) -> dict:
    """Write `synthetic(**kw)` as Ethernet/IPv4/UDP frames cycling over `flows` UDP flows."""
    fmt = output_format(output)
    _check_output(output, [], force)
    made = synthetic(**kw)  # type: ignore[arg-type]
    stats_out = _write_atomically(
        output,
        lambda tmp: _core_call(
            core().trace_synth, os.fspath(tmp), fmt, made.ts_ns, made.wirelen, int(flows)
        ),
    )
    return {
        "file": os.fspath(output),
        "format": fmt,
        "arrival": kw.get("arrival", "constant"),
        **stats_out,
    }


# --- bandwidth a trace needs --------------------------------------------------------------------


@dataclass(frozen=True)
class Demand:
    """PCIe bandwidth that replaying a trace needs, per time window, against the link."""

    window_ns: int
    start_ns: int
    up_gbps: NDArray[np.float64]
    down_gbps: NDArray[np.float64]
    capacity_gbps: float

    def summary(self) -> dict:
        """Mean and peak per direction, and how often a window exceeds the link."""
        over = (self.up_gbps > self.capacity_gbps) | (self.down_gbps > self.capacity_gbps)
        return {
            "window_ns": self.window_ns,
            "windows": int(self.up_gbps.size),
            "capacity_gbps": self.capacity_gbps,
            "mean_up_gbps": float(self.up_gbps.mean()) if self.up_gbps.size else 0.0,
            "mean_down_gbps": float(self.down_gbps.mean()) if self.down_gbps.size else 0.0,
            "peak_up_gbps": float(self.up_gbps.max(initial=0)),
            "peak_down_gbps": float(self.down_gbps.max(initial=0)),
            "windows_over_capacity": int(over.sum()),
            "fits": bool(not over.any()),
        }


def demand(
    ts_ns: NDArray[np.int64],
    up_bytes: NDArray[np.float64],
    down_bytes: NDArray[np.float64],
    window_ns: int,
    capacity_bytes_per_s: float,
) -> Demand:
    """Per-window bandwidth from per-packet PCIe wire bytes up and down."""
    if ts_ns.size == 0:
        raise UsageError("the trace has no packets; nothing to replay")
    return Demand(
        window_ns=int(window_ns),
        start_ns=int(ts_ns.min()),
        up_gbps=window_gbps(ts_ns, up_bytes, window_ns),
        down_gbps=window_gbps(ts_ns, down_bytes, window_ns),
        capacity_gbps=capacity_bytes_per_s * 8 / 1e9,
    )


def window_gbps(
    ts_ns: NDArray[np.int64], byte_counts: NDArray[np.float64], window_ns: int
) -> NDArray[np.float64]:
    """Gb/s per window of `window_ns` for bytes attributed to each packet."""
    require_positive("window", window_ns)
    return window_sums(ts_ns, byte_counts, window_ns) * 8 / window_ns


def poll_batches(ts_ns: NDArray[np.int64], poll_ns: int, burst: int = 32) -> dict[int, float]:
    """Rx batch histogram {batch: rx_burst calls} of a PMD that polls every `poll_ns` and takes
    up to `burst` packets per call: packets that arrive within one poll period share a call."""
    require_positive("poll period", poll_ns)
    slot = (ts_ns - ts_ns.min()) // poll_ns
    _, per_slot = np.unique(slot, return_counts=True)
    full, rest = np.divmod(per_slot, burst)
    hist = {burst: float(full.sum())} if full.sum() else {}
    sizes, calls = np.unique(rest[rest > 0], return_counts=True)
    hist.update({int(s): float(c) for s, c in zip(sizes, calls, strict=True)})
    return hist

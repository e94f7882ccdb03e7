"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns, statistics
(rates per window, frame sizes, bursts at line rate), merging, synthetic traffic, and the
per-window bandwidth a trace needs from a per-packet cost.

Parsing, writing, merging and the statistics of captures run in the Rust core
(`pcieperf._core`); this module validates arguments, names files in errors, turns the core's
exact counts into rates and computes per-window demand over numpy columns.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import _lazy, progress
from pcieperf._native import call, checked, core
from pcieperf.errors import (
    TraceFileError,
    UsageError,
    require_choice,
    require_new_file,
    require_positive,
)
from pcieperf.net import wire
from pcieperf.net.wire import FCS_BYTES, MIN_FRAME_BYTES

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from pcieperf.net.ethernet import Ethernet, PacketMix

# numpy on first use: merge, convert and the statistics of files do not need it (docs/trace.md).
np = _lazy.module("numpy")

NS_PER_S = 1_000_000_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # timestamps are int64 ns
WINDOWS_NS = (1_000_000, NS_PER_S)  # the 1 ms and 1 s rate windows
GAP_PERCENTILES = (50, 99)  # gap_ns_p50 and gap_ns_p99 of `trace stats`
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
# Packets generated and written per step of `trace synth` (rounded down to whole on/off bursts):
# memory stays at a few MiB whatever the duration.
SYNTH_CHUNK = 1 << 18
# Names of the link types in the LINKTYPE registry (draft-ietf-opsawg-pcaplinktype, the
# descriptions shortened as capinfos prints them); others are shown as "linktype N".
LINKTYPE_NAMES = {
    0: "BSD loopback",
    1: "Ethernet",
    6: "Token Ring",
    8: "SLIP",
    9: "PPP",
    10: "FDDI",
    50: "PPP in HDLC-like framing",
    51: "PPPoE",
    101: "Raw IP",
    104: "Cisco HDLC",
    105: "IEEE 802.11",
    107: "Frame Relay",
    108: "OpenBSD loopback",
    113: "Linux cooked",
    117: "OpenBSD pflog",
    127: "IEEE 802.11 radiotap",
    143: "DOCSIS",
    187: "Bluetooth HCI H4",
    189: "USB Linux",
    195: "IEEE 802.15.4",
    220: "USB Linux mmapped",
    227: "SocketCAN",
    228: "Raw IPv4",
    229: "Raw IPv6",
    231: "D-Bus",
    249: "USBPcap",
    252: "Wireshark Upper PDU",
    253: "Netlink",
    276: "Linux cooked v2",
    279: "EBHSCR",
} | {147 + k: f"User {k}" for k in range(16)}


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
    snaplen_exceeded: int = 0
    wirelen_below_caplen: int = 0
    cut_short: str | None = None
    compression: str = "none"

    @property
    def truncated(self) -> bool:
        """Whether the capture ends inside a record (what came before was read)."""
        return self.cut_short is not None

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


def linktype_name(linktype: int) -> str:
    """The registry name of a link type ("Ethernet", "Raw IP", ...), or "linktype N"."""
    return LINKTYPE_NAMES.get(linktype, f"linktype {linktype}")


def read(
    path: str | os.PathLike,
    *,
    skip_bad: bool = False,
    offsets: bool = False,
    strict: bool = False,
) -> Trace:
    """Read a pcap or pcapng file (`-` is standard input; gzip and zstd are unpacked, told by
    their magic). `skip_bad` passes over damaged records (counted in `skipped`); a capture cut
    short inside a record keeps what came before (`cut_short` says where) unless `strict`,
    which makes it an error; `offsets` also returns where each packet's bytes start in the
    (decompressed) capture."""
    raw = core().trace_read(os.fspath(path), skip_bad=skip_bad, offsets=offsets, strict=strict)
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
        snaplen_exceeded=raw["snaplen_exceeded"],
        wirelen_below_caplen=raw["wirelen_below_caplen"],
        cut_short=raw["cut_short"],
        compression=raw["compression"],
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
    if any(i != "-" and out.resolve() == Path(i).resolve() for i in map(os.fspath, inputs)):
        raise UsageError(f"output {os.fspath(output)!r} is also an input; choose another name")
    require_new_file(out, force)


def _temporary_beside(output: str | os.PathLike) -> Path:
    """A fresh name beside `output` for the file being written, renamed onto `output` only
    once complete. It is not created here: the writer creates it like any new file, so it
    gets the user's umask (a mkstemp file would stay 0600)."""
    out = Path(output)
    return out.parent / f".{out.name}.{os.urandom(8).hex()}.part"


def _write_atomically(output: str | os.PathLike, write: Callable[[Path], dict]) -> dict:
    tmp = _temporary_beside(output)
    try:
        stats = write(tmp)
        tmp.replace(output)
    except TraceFileError as exc:  # name the file the user asked for, not the temporary one
        raise TraceFileError(str(exc).replace(str(tmp), os.fspath(output))) from None
    finally:
        tmp.unlink(missing_ok=True)
    return stats


def _check_inputs(inputs: Sequence[str | os.PathLike]) -> list[str]:
    """Input paths as strings; standard input (`-`) can be read once only."""
    paths = [os.fspath(p) for p in inputs]
    if paths.count("-") > 1:
        raise UsageError("standard input (-) can be given once only")
    return paths


def merge(
    inputs: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
) -> dict:
    """Merge captures into `output` (.pcap or .pcapng) in timestamp order, stable for equal
    timestamps; pcapng output keeps one interface per input interface. Inputs are streamed:
    memory does not grow with their size. `truncated` counts inputs cut short (everything
    before the cut is merged) unless `strict` makes that an error."""
    if not inputs:
        raise UsageError("merge needs at least one input capture")
    fmt = output_format(output)
    paths = _check_inputs(inputs)
    _check_output(output, paths, force)
    return _write_atomically(
        output,
        lambda tmp: core().trace_merge(paths, os.fspath(tmp), fmt, skip_bad, strict),
    )


def convert(
    source: str | os.PathLike,
    output: str | os.PathLike,
    *,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
) -> dict:
    """Rewrite a capture as ns pcap or pcapng (by suffix), packet for packet, interfaces and
    their names kept; streamed like `merge`."""
    fmt = output_format(output)
    (path,) = _check_inputs([source])
    _check_output(output, [path], force)
    return _write_atomically(
        output,
        lambda tmp: core().trace_convert(
            path, os.fspath(tmp), fmt, skip_bad=skip_bad, strict=strict
        ),
    )


# --- statistics -------------------------------------------------------------------------------


MAX_WINDOWS = 10_000_000  # a dense series longer than this is a mistake (wrong window or ts)


@dataclass(frozen=True)
class Windows:
    """Windows of `window_ns` from the first packet: each packet's window index, and how much
    of the capture the last window covers. Every window covers `window_ns` but the last, which
    covers only up to the last packet: rates divide by the covered time, so a part-filled last
    window shows its true rate instead of a false dip. A last packet exactly on a window start
    would leave a window that covers nothing; it is counted in the window before (which then
    covers up to it), so the covered times add up to the capture's duration."""

    window_ns: int
    index: NDArray[np.int64]
    count: int
    last_covered_ns: int

    @classmethod
    def of(cls, ts_ns: NDArray[np.int64], window_ns: int) -> Windows:
        """The windows of a non-empty set of timestamps."""
        first = int(ts_ns.min())
        span = int(ts_ns.max()) - first
        last, covered = divmod(span, window_ns)
        if covered == 0 and last > 0:
            last, covered = last - 1, window_ns
        # A capture without duration has nothing to divide by: its one window counts as whole.
        covered = covered or window_ns
        return cls(window_ns, np.minimum((ts_ns - first) // window_ns, last), last + 1, covered)

    def covered_ns(self, windows: NDArray[np.int64]) -> NDArray[np.int64]:
        """Time covered by each of the given window indices."""
        return np.where(windows == self.count - 1, self.last_covered_ns, self.window_ns)


def window_sums(
    ts_ns: NDArray[np.int64], weights: NDArray[np.float64] | None, window_ns: int
) -> NDArray[np.float64]:
    """Sum of `weights` (or packet count) per window of `window_ns` from the first packet (see
    `Windows` for the last one)."""
    if ts_ns.size == 0:
        return np.zeros(0)
    windows = Windows.of(ts_ns, window_ns)
    if windows.count > MAX_WINDOWS:
        raise UsageError(
            f"the trace spans {(ts_ns.max() - ts_ns.min()) / NS_PER_S:.6g} s, which is "
            f"{windows.count} windows of {window_ns} ns; allowed are {MAX_WINDOWS}, "
            "so pass a larger --window"
        )
    return np.bincount(windows.index, weights=weights, minlength=windows.count).astype(np.float64)


def _per_s(events: int, ns: int) -> float:
    """Events in `ns` nanoseconds per second, rounded once (int / int is correctly rounded)."""
    return events * NS_PER_S / ns


def _gbps(bits: int, ns: int) -> float:
    """Bits in `ns` nanoseconds (bits per ns are Gb/s), rounded once."""
    return bits / ns


def _largest_ratio(pairs: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The (amount, ns) pair of the largest amount per ns, compared exactly (in integers)."""
    best = pairs[0]
    for amount, ns in pairs[1:]:
        if amount * best[1] > best[0] * ns:
            best = (amount, ns)
    return best


def _stats_config(eth_gbps: float, overhead_bytes: int, windows_ns: Sequence[int]) -> dict:
    """What the Rust statistics need: the rate windows, how a record becomes a frame and how
    long the frame is on the wire, the RMON buckets and the gap percentiles."""
    for window in windows_ns:
        require_positive("rate window", window)
    return {
        "windows_ns": [int(w) for w in windows_ns],
        "eth_gbps": float(eth_gbps),
        "overhead_bytes": int(overhead_bytes),
        "fcs_bytes": FCS_BYTES,
        "min_frame_bytes": MIN_FRAME_BYTES,
        "ethernet_header_bytes": ETHERNET_HEADER_BYTES,
        "link_header_bytes": list(LINK_HEADER_BYTES.items()),
        "size_bins": list(SIZE_BINS),
        "percentiles": [float(p) for p in GAP_PERCENTILES],
    }


def stats_config(eth_gbps: float, windows_ns: Sequence[int]) -> dict:
    """The checked configuration of the statistics of files at `eth_gbps` GbE."""
    wire.check_rate(eth_gbps)
    return _stats_config(eth_gbps, wire.overhead_bytes(), windows_ns)


def _summary(totals: dict) -> dict:
    """Packets, bytes, first/last time, duration and mean rates of a set of packets."""
    n, wire_bytes = totals["packets"], totals["bytes_wire"]
    span_ns = totals["last_ts_ns"] - totals["first_ts_ns"] if n else 0
    return {
        "packets": n,
        "bytes_captured": totals["bytes_captured"],
        "bytes_wire": wire_bytes,
        "first_ts_ns": totals["first_ts_ns"] if n else None,
        "last_ts_ns": totals["last_ts_ns"] if n else None,
        "duration_s": span_ns / NS_PER_S,
        # Exact ratios rounded once, like the peaks they are compared with.
        "mean_pps": _per_s(n, span_ns) if span_ns else None,
        "mean_gbps": _gbps(wire_bytes * 8, span_ns) if span_ns else None,
    }


def _rates(window: dict, totals: dict) -> dict:
    """Peak packet and bit rates over windows of one length, each window's sums divided by the
    time it covers (the last covers only up to the last packet: see `Windows`), so a peak is
    never below the mean. A capture without duration has no rate (None), as it has no mean."""
    n = totals["packets"]
    if n == 0 or totals["first_ts_ns"] == totals["last_ts_ns"]:
        return {
            "window_ns": window["window_ns"],
            "windows": int(n > 0),
            "peak_pps": None,
            "peak_gbps": None,
        }
    groups = window["groups"]  # (covered ns, largest packet count, largest bit sum)
    return {
        "window_ns": window["window_ns"],
        "windows": window["last_index"] + 1,
        "peak_pps": _per_s(*_largest_ratio([(packets, c) for c, packets, _ in groups])),
        "peak_gbps": _gbps(*_largest_ratio([(bits, c) for c, _, bits in groups])),
    }


def _bursts(raw: dict | None, packets: int) -> dict:
    """Runs of back-to-back packets and gap percentiles (none below two packets)."""
    if raw is None:
        return {"bursts": 0, "packets_in_bursts": 0, "max_burst": packets}
    p50, p99 = raw["gap_percentiles"]
    return {
        "bursts": raw["bursts"],
        "packets_in_bursts": raw["packets_in_bursts"],
        "mean_burst": raw["packets_in_bursts"] / raw["bursts"] if raw["bursts"] else 0.0,
        "max_burst": raw["max_burst"],
        "gap_ns_p50": p50,
        "gap_ns_p99": p99,
        "gap_ns_min": raw["gap_min_ns"],
    }


def _report(path: str, raw: dict, interfaces: Sequence[Interface], eth_gbps: float) -> dict:
    """The `trace stats` JSON of one file (see the README's contract) from the Rust counts."""
    untimed, out_of_order = raw["untimed"], raw["out_of_order"]
    return {
        "file": path,
        "format": raw["format"],
        "compression": raw["compression"],
        **_summary(raw),
        "out_of_order": out_of_order,
        # capinfos -o: no packet earlier than the one before it (equal times allowed); unknown
        # (None), as capinfos says, where none is but some carry no timestamp (Simple Packet
        # Blocks).
        "strict_time_order": False if out_of_order else (None if untimed else True),
        "skipped": raw["skipped"],
        "untimed": untimed,
        "snaplen_exceeded": raw["snaplen_exceeded"],
        "wirelen_below_caplen": raw["wirelen_below_caplen"],
        "truncated": raw["cut_short"] is not None,
        "cut_short": raw["cut_short"],
        "rates": [_rates(w, raw) for w in raw["rates"]],
        "size_histogram": dict(zip(SIZE_LABELS, raw["size_histogram"], strict=True)),
        "bursts": {"eth_gbps": eth_gbps, **_bursts(raw["bursts"], raw["packets"])},
        "interfaces": [
            {
                "id": k,
                "linktype": iface.linktype,
                "linktype_name": linktype_name(iface.linktype),
                "name": iface.name,
                "snaplen": iface.snaplen,
                "section": iface.section,
                **_summary(totals),
            }
            for k, (iface, totals) in enumerate(zip(interfaces, raw["per_interface"], strict=True))
        ],
    }


def stats(trace: Trace, eth: Ethernet, windows_ns: Sequence[int] = WINDOWS_NS) -> dict:
    """`trace stats` of a trace in memory (see `stats_files` for files, which need no columns):
    the same keys, computed by the same Rust code."""
    columns = (
        np.ascontiguousarray(trace.ts_ns, dtype=np.int64),
        *(np.ascontiguousarray(c, dtype=np.uint32) for c in (trace.caplen, trace.wirelen)),
        np.ascontiguousarray(trace.iface, dtype=np.uint32),
    )
    raw = core().trace_stats_columns(
        *columns,
        [(i.linktype, i.tsresol) for i in trace.interfaces],
        _stats_config(eth.rate_gbps, eth.overhead_bytes, windows_ns),
    )
    read = {
        "format": trace.format,
        "compression": trace.compression,
        "skipped": trace.skipped,
        "untimed": trace.untimed,
        "snaplen_exceeded": trace.snaplen_exceeded,
        "wirelen_below_caplen": trace.wirelen_below_caplen,
        "cut_short": trace.cut_short,
    }
    return _report(trace.path, raw | read, trace.interfaces, eth.rate_gbps)


def stats_files(
    paths: Sequence[str | os.PathLike],
    *,
    eth_gbps: float = 40,
    windows_ns: Sequence[int] = WINDOWS_NS,
    skip_bad: bool = False,
    strict: bool = False,
) -> Iterator[dict]:
    """`trace stats` of each file, in order: every file is summarised while it is decoded, in
    bounded memory (docs/trace.md), the files in parallel across cores. Arguments are checked
    before any file is read; a file that cannot be read raises when its turn comes, after the
    files before it were yielded."""
    config = stats_config(eth_gbps, windows_ns)
    files = _check_inputs(paths)
    found = core().trace_stats(files, config, skip_bad=skip_bad, strict=strict)
    for path, raw in zip(files, map(checked, found), strict=True):
        interfaces = [Interface(**i) for i in raw["interfaces"]]
        yield _report(path, raw, interfaces, eth_gbps)


# --- synthetic traffic ------------------------------------------------------------------------


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

    def _gap_rng(self) -> np.random.Generator:
        """The generator of the arrival process: the seed's stream after the frames' draws
        (each frame takes one 64-bit draw), as when frames were drawn first, all at once."""
        bits = np.random.PCG64(self.seed)
        bits.advance(self.packets)
        return np.random.Generator(bits)

    def _wire_ns(self, frames: NDArray[np.int64]) -> NDArray[np.float64]:
        return self.eth.wire_bytes(frames) * 8 / self.eth.rate_gbps

    def _idle_mean_ns(self) -> float:
        """On/off: the mean idle gap before a burst that brings the mean rate to `pps`: a
        burst's period minus its mean wire time, from a first pass over the frames."""
        burst_ns, bursts = [], 0
        for frames in self.frames():
            sums = np.add.reduceat(self._wire_ns(frames), np.arange(0, frames.size, self.burst))
            burst_ns.append(math.fsum(sums))
            bursts += sums.size
        return max(self.burst * NS_PER_S / self.pps - math.fsum(burst_ns) / bursts, 0.0)

    def chunks(self) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
        """(arrival ns from 0, frame sizes) in chunks. Running sums carry over from chunk to
        chunk in the order a single cumulative sum adds them, so the times are those of one
        pass over every packet."""
        gaps = self._gap_rng()
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
    require_positive("packet rate", pps)
    require_positive("duration", duration_s)
    require_positive("burst", burst)
    require_choice("arrival process", arrival, ARRIVALS)
    n = round(pps * duration_s)
    if n < 1:
        raise UsageError(f"{pps:g} pps for {duration_s:g} s is less than one packet")
    line_pps = eth.rate_gbps * 1e9 / (8 * mix.mean(eth.wire_bytes(mix.sizes)))
    if pps > line_pps:
        raise UsageError(
            f"{pps / 1e6:g} Mpps of {mix.name} exceeds {eth.rate_gbps:g} GbE line rate "
            f"({line_pps / 1e6:.2f} Mpps); lower --pps or raise --eth"
        )
    return SynthPlan(eth, mix, float(pps), arrival, int(burst), int(seed), n)


def synthetic(**kw: object) -> Trace:
    """An in-memory Ethernet trace (arguments of `plan_synthetic`): frames drawn from the mix,
    arriving by the arrival process from SYNTH_START_NS (captured lengths exclude the FCS, as
    on Linux). For long traces write a file with `synth`, which streams."""
    plan = plan_synthetic(**kw)  # type: ignore[arg-type]
    ts, frames = (np.concatenate(part) for part in zip(*plan.chunks(), strict=True))
    captured = (frames - FCS_BYTES).astype(np.uint32)
    return Trace(
        path=f"synthetic {plan.mix.name} {plan.arrival} {plan.pps / 1e6:g} Mpps",
        format="synthetic",
        ts_ns=SYNTH_START_NS + ts,
        caplen=captured,
        wirelen=captured,
        iface=np.zeros(plan.packets, dtype=np.uint32),
        interfaces=(Interface(1, 0, 9, 0, None, 0),),
    )


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
            f" has {free / 1e9:.4g} GB free; shorten --duration or lower --pps"
        )


def synth(
    output: str | os.PathLike, *, flows: int = 1024, force: bool = False, **kw: object
) -> dict:
    """Write `synthetic(**kw)` as Ethernet/IPv4/UDP frames cycling over `flows` UDP flows,
    generated and written chunk by chunk (bounded memory at any duration), with a progress
    bar where one is seen."""
    fmt = output_format(output)
    require_positive("flows", flows)
    _check_output(output, [], force)
    plan = plan_synthetic(**kw)  # type: ignore[arg-type]
    _require_room(Path(output), fmt, plan)

    def write(tmp: Path) -> dict:
        writer = core().TraceSynth(os.fspath(tmp), fmt, int(flows))
        with progress.bar(plan.packets, f"synth {Path(output).name}", "pkt") as bar:
            for ts, frames in plan.chunks():
                call(writer.push, SYNTH_START_NS + ts, (frames - FCS_BYTES).astype(np.uint32))
                bar.update(ts.size)
        return call(writer.close)

    return {
        "file": os.fspath(output),
        "format": fmt,
        "arrival": plan.arrival,
        **_write_atomically(output, write),
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
    """Gb/s per window of `window_ns` for bytes attributed to each packet; the last window is
    divided by the time it covers (see `Windows`), so a trace does not seem to fade at its end."""
    require_positive("window", window_ns)
    sums = window_sums(ts_ns, byte_counts, window_ns)
    if sums.size == 0:
        return sums
    covered = Windows.of(ts_ns, window_ns).covered_ns(np.arange(sums.size))
    return sums * 8 / covered


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

"""The numpy implementation of `trace stats` as it was before the statistics moved into the
Rust core (commit 085f2a9, src/pcieperf/net/trace.py), kept as the oracle the Rust code is checked
against on random traces (tests/net/test_trace_stats_oracle.py). Only `stats` takes the rate
windows as an argument here; the computation is unchanged but for the rates' rule, changed on
purpose by issue 27 (peaks over whole windows only, the shorter last window reported apart as
the tail), written here before the Rust code. `trust` (issue 26: ties, steps back, directions,
dates) was added later, also written here in numpy before the Rust code, and so were the frame
bytes incl. FCS (`bytes_frame`, `*_frame_gbps`) and the ISO 8601 times (`first_time`,
`last_time`) of issue 27."""

import numpy as np
from numpy.typing import NDArray

from pcieperf.net.ethernet import Ethernet
from pcieperf.net.trace.files import LINK_HEADER_BYTES, NS_PER_S, Trace, linktype_name
from pcieperf.net.trace.statistics import SIZE_BINS, SIZE_LABELS


class Windows:
    """The rule of rate windows in numpy, as it was written before it became the Rust core's
    alone (trace/rate_windows.rs): windows from the first packet, the last covering up to the
    last packet, a last packet on a window start counted in the window before, a capture
    without duration one whole window."""

    def __init__(self, ts: NDArray[np.int64], window_ns: int) -> None:
        first = int(ts.min())
        last, covered = divmod(int(ts.max()) - first, window_ns)
        if covered == 0 and last > 0:
            last, covered = last - 1, window_ns
        self.window_ns = window_ns
        self.index = np.minimum((ts - first) // window_ns, last)
        self.count = last + 1
        self.last_covered_ns = covered or window_ns

    def covered_ns(self, windows: NDArray[np.int64]) -> NDArray[np.int64]:
        """Time covered by each of the given window indices."""
        return np.where(windows == self.count - 1, self.last_covered_ns, self.window_ns)


def _per_s(events: int, ns: int) -> float:
    """Events in `ns` nanoseconds per second, rounded once (int / int is correctly rounded)."""
    return events * NS_PER_S / ns


def _gbps(bits: int, ns: int) -> float:
    """Bits per ns are Gb/s, rounded once."""
    return bits / ns


def _rates(
    ts: NDArray[np.int64],
    wire_bits: NDArray[np.int64],
    frame_bits: NDArray[np.int64],
    window_ns: int,
) -> dict:
    """Peak packet and bit rates over the whole windows of `window_ns` (issue 27: a shorter last
    window, up to the last packet, is the tail, reported apart; see `Windows`), in bits of the
    recorded lengths and of the frames incl. FCS. Only occupied windows are counted, so a trace
    spanning years costs no more than one spanning a second. A capture without duration has no
    rate (None), as it has no mean."""
    if ts.size == 0 or ts[0] == ts[-1]:
        return {
            "window_ns": window_ns,
            "windows": int(ts.size > 0),
            "full_windows": int(ts.size > 0),
            "peak_pps": None,
            "peak_gbps": None,
            "peak_frame_gbps": None,
            "tail_ns": 0,
            "tail_pps": None,
            "tail_gbps": None,
            "tail_frame_gbps": None,
        }
    windows = Windows(ts, window_ns)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(windows.index)) + 1))
    covered = windows.covered_ns(windows.index[starts])
    packets = np.diff(np.append(starts, ts.size))
    bits = np.add.reduceat(wire_bits, starts)
    frames = np.add.reduceat(frame_bits, starts)
    whole = covered == window_ns
    tail = windows.last_covered_ns if windows.last_covered_ns < window_ns else 0
    return {
        "window_ns": window_ns,
        "windows": windows.count,
        "full_windows": windows.count - int(tail > 0),
        "peak_pps": _per_s(int(packets[whole].max()), window_ns) if whole.any() else None,
        "peak_gbps": _gbps(int(bits[whole].max()), window_ns) if whole.any() else None,
        "peak_frame_gbps": _gbps(int(frames[whole].max()), window_ns) if whole.any() else None,
        "tail_ns": tail,
        "tail_pps": _per_s(int(packets[-1]), tail) if tail else None,
        "tail_gbps": _gbps(int(bits[-1]), tail) if tail else None,
        "tail_frame_gbps": _gbps(int(frames[-1]), tail) if tail else None,
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


def time_digits(tsresol: int) -> int:
    """Decimal digits of a second a time of if_tsresol is shown with (pcapng §4.2): the largest
    d with 10^d <= ticks per second (in integers), at most 9 (ns)."""
    ticks = 2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10 ** (tsresol & 0x7F)
    d = 0
    while 10 ** (d + 1) <= ticks and d < 9:
        d += 1
    return d


def held_digits(trace: Trace, ts: int | None, mine: NDArray[np.bool_]) -> int:
    """The digits of the time `ts`: those of the interface of a packet at that time (the
    finest, where several interfaces have one)."""
    at = np.unique(trace.iface[mine & (trace.ts_ns == ts)])
    return max((time_digits(trace.interfaces[int(k)].tsresol) for k in at), default=9)


def iso_utc(ts_ns: int | None, digits: int | None) -> str | None:
    """numpy's ISO 8601 of a ns time (its own calendar code), cut to `digits` decimals (None:
    no time, as where some packets carry none)."""
    if ts_ns is None or digits is None:
        return None
    text = str(np.datetime_as_string(np.datetime64(ts_ns, "ns"), unit="ns"))  # ...:20.123456789
    return (text[: 20 + digits] if digits else text[:19]) + "Z"


def _summary(trace: Trace, mine: NDArray[np.bool_], frames: NDArray[np.int64]) -> dict:
    """The totals, times and means of the packets `mine` of `trace`."""
    ts, wirelen, caplen = trace.ts_ns[mine], trace.wirelen[mine], trace.caplen[mine]
    n = int(ts.size)
    first = int(ts.min()) if n else None
    last = int(ts.max()) if n else None
    timed = n and not trace.untimed  # capinfos: n/a where some packets carry no time
    span_ns = last - first if n else 0
    wire = int(wirelen.sum(dtype=np.int64))
    frame = int(frames[mine].sum(dtype=np.int64))
    return {
        "packets": n,
        "bytes_captured": int(caplen.sum(dtype=np.int64)),
        "bytes_wire": wire,
        "bytes_frame": frame,
        "first_ts_ns": first,
        "last_ts_ns": last,
        "first_time": iso_utc(first, held_digits(trace, first, mine) if timed else None),
        "last_time": iso_utc(last, held_digits(trace, last, mine) if timed else None),
        "duration_s": span_ns / NS_PER_S,
        # Exact ratios rounded once, like the peaks they are compared with.
        "mean_pps": _per_s(n, span_ns) if span_ns else None,
        "mean_gbps": _gbps(wire * 8, span_ns) if span_ns else None,
        "mean_frame_gbps": _gbps(frame * 8, span_ns) if span_ns else None,
    }


CENTURY_S = 3_155_695_200  # 100 years of 365.2425 days
DIRECTIONS = ("direction_unknown", "inbound", "outbound")


def directions(direction: NDArray[np.uint8]) -> dict:
    """Packets per epb_flags direction (0 unknown, 1 inbound, 2 outbound)."""
    counts = np.bincount(direction, minlength=3)
    return {f"packets_{d}": int(n) for d, n in zip(DIRECTIONS, counts, strict=True)}


def trust(ts_ns: NDArray[np.int64], direction: NDArray[np.uint8], ts_wrapped: int = 0) -> dict:
    """How far times can be trusted, from the times in file order: packets per distinct time,
    the most at one, the largest step back, and dates a century from now (with numpy's
    datetime64, a route of its own; the DPDK 22.11 rate is 2^64 / (seconds ahead), to 10 MHz)."""
    n = int(ts_ns.size)
    _, counts = np.unique(ts_ns, return_counts=True)
    back = -np.diff(ts_ns.astype(object)) if n > 1 else np.zeros(0, dtype=object)
    dates = ts_ns.astype("datetime64[ns]")
    now = np.datetime64("now", "s")
    century = np.timedelta64(CENTURY_S, "s")
    implausible = bool(n and ((dates.min() < now - century) or (dates.max() > now + century)))
    tsc_hz = None
    if implausible:
        ahead_s = (int(ts_ns.max()) - now.astype(np.int64) * 10**9) / 1e9
        hz = 2**64 / ahead_s if ahead_s > 0 else 0
        tsc_hz = round(hz / 1e7) * 10**7 if 1e9 <= hz <= 6e9 else None
    return {
        "distinct_timestamps": int(counts.size),
        "packets_per_timestamp": n / counts.size if n else None,
        "max_equal_timestamps": int(counts.max(initial=0)),
        "max_step_back_ns": int(max(back.max(initial=0), 0)),
        "ts_wrapped": ts_wrapped,
        "implausible_epoch": implausible,
        "dpdk_tsc_hz": tsc_hz,
        "shift_time_s": -(2**64 * 10**9 // tsc_hz) / 10**9 if tsc_hz else None,
        **directions(direction),
    }


def stats(
    trace: Trace,
    eth: Ethernet,
    windows_ns: tuple[int, ...],
    direction: NDArray[np.uint8] | None = None,
) -> dict:
    """Everything `pcieperf trace stats` reports for one file (see the README's contract);
    `direction` per packet where the file has them (else every one is unknown)."""
    if direction is None:
        direction = np.zeros(trace.packets, dtype=np.uint8)
    order = np.argsort(trace.ts_ns, kind="stable")
    ts = trace.ts_ns[order]
    file_frames = _wire_frames(trace)
    frames = file_frames[order]
    data_bits = trace.wirelen[order].astype(np.int64) * 8  # capinfos' "data bit rate"
    out_of_order = int(np.count_nonzero(np.diff(trace.ts_ns) < 0))
    result = {
        "file": trace.path,
        "format": trace.format,
        "compression": trace.compression,
        **_summary(trace, np.ones(trace.packets, dtype=bool), file_frames),
        "out_of_order": out_of_order,
        # capinfos -o: no packet earlier than the one before it (equal times allowed); unknown
        # (None), as capinfos says, where none is but some carry no timestamp (Simple Packet
        # Blocks).
        "strict_time_order": False if out_of_order else (None if trace.untimed else True),
        "skipped": trace.skipped,
        "untimed": trace.untimed,
        "snaplen_exceeded": trace.snaplen_exceeded,
        "wirelen_below_caplen": trace.wirelen_below_caplen,
        "truncated": trace.truncated,
        "cut_short": trace.cut_short,
        **trust(trace.ts_ns, direction, trace.ts_wrapped),
        "rates": [_rates(ts, data_bits, frames * 8, w) for w in windows_ns],
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
                "linktype_name": linktype_name(iface.linktype),
                "name": iface.name,
                "snaplen": iface.snaplen,
                "section": iface.section,
                **_summary(trace, mine, file_frames),
                **directions(direction[mine]),
            }
        )
    return result

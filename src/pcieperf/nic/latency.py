"""Where one packet's loopback latency goes, and how many DMAs line rate keeps in flight.

The paper's second motivating result (Neugebauer et al., SIGCOMM 2018, §2, Figure 2): on a
kernel-bypass NIC in loopback, PCIe is most of the latency, and at 40 GbE a NIC must keep tens
of DMAs in flight. This module prices one packet's critical path from a NIC profile (which
operations happen, and their TLPs from `pcieperf.pcie.tlp`), the host's DMA latencies
(pcieperf.nic.host: pcie-bench latency files, mean and percentiles from their CDFs, or a
calibration) and the device's own costs (assumptions with ranges, `PARAMS`). Little's law,
`in_flight = rate * latency`, is used both ways, at a loaded host's latency (its floor,
`LOADED_STAT`): the DMAs a rate needs, and the rate a number of tags sustains
(docs/latency.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pcieperf._config import read_bounded
from pcieperf.errors import UsageError, require_choice
from pcieperf.net import wire
from pcieperf.net.ethernet import Ethernet, check_frame_sizes, dma_bytes

# The host's latencies, where callers of `latency` have always found them.
from pcieperf.nic.host import (
    LOADED_STAT,
    QUANTILES,
    REFERENCE_WINDOW,
    STATS,
    HostLatency,
    assumed_host,
    host_from_dir,
)
from pcieperf.nic.nic import TagLimit, check_tags, evaluate
from pcieperf.nic.pricing import operation_cost
from pcieperf.nic.profile import (
    DEFAULT_PROFILE,
    NicProfile,
    Operation,
    evaluate_expression,
    load_profile,
)
from pcieperf.nic.rows import fixed_rows
from pcieperf.pcie.link import Link
from pcieperf.pciebench.bench import read_result_csv
from pcieperf.pciebench.device import LATENCY_TEST_BYTES

if TYPE_CHECKING:
    from typing import Unpack

    import pandas


Kind = Literal["pcie", "device", "wire", "host"]
KINDS: tuple[Kind, ...] = ("pcie", "device", "wire", "host")

PAPER_PROFILE = "bypass"  # the kernel-bypass NIC of the paper's Figure 2 (the report redraws it)

# On a packet's critical path (one packet alone, as in a loopback ping): on transmit, what
# happens before the frame can leave (the doorbell and the reads it starts); completions,
# write-backs and pointer reads come after it left. On receive, what happens after the frame
# arrived (writes, the interrupt, the pointer read that tell the host); buffer replenishment
# (freelist tail writes, descriptor fetches) happens before it arrives.
ON_PATH = {
    "tx": ("host_mmio_write", "dma_read"),
    "rx": ("dma_write", "interrupt", "host_mmio_read"),
}
POSTED = ("host_mmio_write", "dma_write", "interrupt")  # PCIe Base 3.0 §2.4.1: memory writes
DOWN = ("host_mmio_write", "host_mmio_read")  # the host starts it: request travels down


@dataclass(frozen=True)
class Assumed:
    """A parameter no public figure gives: the value used and the range it may take."""

    value: float
    low: float
    high: float
    why: str


PARAMS: dict[str, Assumed] = {
    "device_tx_ns": Assumed(
        20, 10, 100, "NIC transmit pipeline, last payload byte to the MAC: a few clock cycles"
    ),
    "device_rx_ns": Assumed(
        20, 10, 100, "NIC receive pipeline, FCS checked to the first DMA write issued"
    ),
    "phy_ns": Assumed(
        40,
        20,
        170,
        "MAC, PCS and PMA out and in plus ~1 m of loopback cable (~5 ns/m); the high end is "
        "the ExaNIC's published port-to-port bridge latency, < 170 ns (Exablaze, 'Three cool "
        "features of the ExaNIC', 2014), which holds both MACs and PHYs",
    ),
    "poll_ns": Assumed(
        50, 20, 200, "period of the host's poll loop; a write lands at a uniform phase of it"
    ),
    "interrupt_ns": Assumed(
        2000, 1000, 10000, "MSI-X arrival to the driver's handler running (interrupt profiles)"
    ),
}


# ---------------------------------------------------------------------------------------------
# One packet's loopback


@dataclass(frozen=True)
class Term:
    """One step of a packet's loopback: its path (`tx`, `wire`, `rx`), what it is, which part
    of the system it belongs to, and its nanoseconds per size for every statistic."""

    path: str
    what: str
    kind: Kind
    ns: dict[str, NDArray[np.float64]]


@dataclass(frozen=True)
class Loopback:
    """A profile's loopback latency per frame size: the terms in order, and concurrency."""

    profile: str
    host: HostLatency
    frames: NDArray[np.int64]
    terms: list[Term]
    rate_pps: NDArray[np.float64]
    read_requests_per_pkt: NDArray[np.float64]
    read_ns_per_request: NDArray[np.float64]
    dmas_in_flight: dict[str, NDArray[np.float64]]
    tags_available: int | None
    total_range_ns: tuple[NDArray[np.float64], NDArray[np.float64]] = field(repr=False)

    def total_ns(self, stat: str = "p50") -> NDArray[np.float64]:
        """End-to-end latency per size at one statistic: the sum of the terms."""
        total: NDArray[np.float64] = np.sum([t.ns[stat] for t in self.terms], axis=0)
        return total

    def kind_ns(self, kind: Kind, stat: str = "p50") -> NDArray[np.float64]:
        """The part of the latency one kind (`pcie`, `device`, `wire`, `host`) takes."""
        parts = [t.ns[stat] for t in self.terms if t.kind == kind]
        return np.sum(parts, axis=0) if parts else np.zeros(self.frames.shape)

    def pcie_share(self, stat: str = "p50") -> NDArray[np.float64]:
        """PCIe's share of the latency, in [0, 1]."""
        total = self.total_ns(stat)
        return np.divide(
            self.kind_ns("pcie", stat), total, out=np.zeros_like(total), where=total > 0
        )

    @property
    def inflight_needed(self) -> NDArray[np.float64]:
        """The paper's rule (§2): DMAs each direction keeps in flight to cover the packet's
        PCIe latency at the rate, assuming that latency symmetric: rate x PCIe time, priced
        at the loaded host's latency (`LOADED_STAT`), as every Little's-law quantity here."""
        return in_flight(self.rate_pps, self.kind_ns("pcie", LOADED_STAT))

    @property
    def tags_needed(self) -> NDArray[np.float64]:
        """Read requests (tags) outstanding at the rate: rate x requests x their round trip
        on a loaded host (`LOADED_STAT`)."""
        return in_flight(self.rate_pps * self.read_requests_per_pkt, self.read_ns_per_request)

    @property
    def tag_bound_pps(self) -> NDArray[np.float64]:
        """Packets per second the device's tags sustain (inf without reads or a tag count)."""
        if self.tags_available is None:
            return np.full(self.frames.shape, np.inf)
        per_pkt = np.where(self.read_requests_per_pkt > 0, self.read_requests_per_pkt, np.nan)
        return np.nan_to_num(
            tag_bound_rate(self.tags_available, self.read_ns_per_request) / per_pkt, nan=np.inf
        )


def in_flight(rate_per_s: ArrayLike, latency_ns: ArrayLike) -> NDArray[np.float64]:
    """Little's law: mean number in flight = arrival rate x mean time in flight."""
    mean: NDArray[np.float64] = (
        np.asarray(rate_per_s, dtype=np.float64) * np.asarray(latency_ns) / 1e9
    )
    return mean


def tag_bound_rate(tags: ArrayLike, latency_ns: ArrayLike) -> NDArray[np.float64]:
    """Little's law solved for the rate: what `tags` outstanding requests sustain when each
    is held for `latency_ns` (the same formula as `in_flight`)."""
    latency = np.asarray(latency_ns, dtype=np.float64)
    rate: NDArray[np.float64] = np.divide(
        np.asarray(tags, dtype=np.float64) * 1e9,
        latency,
        where=latency > 0,
        out=np.full(np.broadcast(tags, latency).shape, np.inf),
    )
    return rate


def check_params(overrides: dict[str, float] | None) -> dict[str, float]:
    """The assumed parameters with `overrides` applied (names from `PARAMS`, values >= 0)."""
    params = {name: a.value for name, a in PARAMS.items()}
    for name, value in (overrides or {}).items():
        require_choice("latency parameter", name, PARAMS)
        if not (np.isfinite(value) and value >= 0):
            raise UsageError(f"{name} {value!r} is not allowed; give nanoseconds >= 0")
        params[name] = float(value)
    return params


def loopback(
    profile: NicProfile | str = DEFAULT_PROFILE,
    frames: ArrayLike = (64, 128, 256, 512, 1024, 1500),
    host: HostLatency | None = None,
    link: Link | None = None,
    eth: Ethernet | None = None,
    pps: float | None = None,
    params: dict[str, float] | None = None,
    tags: int | None = None,
) -> Loopback:
    """One packet's loopback latency and the concurrency its rate needs, per frame size.

    `frames`: frame sizes incl. FCS; `host`: default the shipped calibration's reference host;
    `pps`: the rate for concurrency (default line rate of each size); `params`: overrides of
    `PARAMS`, whose low and high ends give `total_range_ns`; `tags`: the device's outstanding
    read requests (default the profile's `read_requests`).
    """
    nic = load_profile(profile) if isinstance(profile, str) else profile
    frame = check_frame_sizes(frames)
    link = link or Link()
    eth = eth or Ethernet()
    if pps is not None and not (np.isfinite(pps) and pps > 0):
        raise UsageError(f"rate {pps!r} is not allowed; give packets per second > 0")
    check_tags(tags)
    host = host or assumed_host()
    chosen = check_params(params)
    path = _Path(nic, link, eth, frame, host)
    terms = path.terms(chosen)
    low = path.terms({n: a.low for n, a in PARAMS.items()} | (params or {}))
    high = path.terms({n: a.high for n, a in PARAMS.items()} | (params or {}))
    requests, read_ns = path.read_requests()
    rate = np.full(frame.shape, pps) if pps else np.asarray(eth.frames_per_second(frame))
    return Loopback(
        profile=nic.name,
        host=host,
        frames=frame,
        terms=terms,
        rate_pps=rate,
        read_requests_per_pkt=requests,
        read_ns_per_request=read_ns,
        dmas_in_flight=path.dmas_in_flight(rate),
        tags_available=tags or (nic.device.read_requests if nic.device else None),
        total_range_ns=(_sum(low), _sum(high)),
    )


def _sum(terms: list[Term]) -> NDArray[np.float64]:
    """The terms' medians summed per size."""
    total: NDArray[np.float64] = np.sum([t.ns["p50"] for t in terms], axis=0)
    return total


@dataclass(frozen=True)
class _Path:
    """The pieces a loopback is priced from (internal to `loopback`)."""

    nic: NicProfile
    link: Link
    eth: Ethernet
    frame: NDArray[np.int64]
    host: HostLatency

    def size(self, expr: str) -> NDArray[np.float64]:
        """An operation's size or frequency expression for each frame."""
        values = evaluate_expression(expr, self.nic.names, dma_bytes(self.frame), self.frame)
        return np.asarray(values)  # an array already, as the frames are

    def wire_ns(self, op: Operation) -> NDArray[np.float64]:
        """Link time of one occurrence's TLPs, both directions."""
        cost, _ = operation_cost(
            self.link,
            op.initiator,
            np.ceil(self.size(op.size)).astype(np.int64),
            op.offset,
            op.addr64,
        )
        return (cost.wire_out + cost.wire_back) / (self.link.tlp_bytes_per_s / 1e9)

    def reference_read_ns(self) -> float:
        """Link time of the 64 B read the host latency was measured with."""
        ref = Operation("reference", "dma_read", str(LATENCY_TEST_BYTES), "1")
        return float(self.wire_ns(ref)[0]) if self.frame.size else 0.0

    def op_ns(self, op: Operation, stat: str, chained: bool) -> NDArray[np.float64]:
        """One operation on the critical path: a read's round trip (the measured 64 B one
        plus its extra link time), or a posted write's latency plus its link time; a write
        right behind another in the same direction adds only its link time (it cannot pass
        it, PCIe Base 3.0 §2.4.1, so their latencies overlap)."""
        link_ns = self.wire_ns(op)
        if op.initiator in POSTED:
            return link_ns + (0.0 if chained else self.host.write_ns[stat])
        return np.maximum(self.host.read_ns[stat] + link_ns - self.reference_read_ns(), 0.0)

    def pcie_terms(self, side: str, stat: str) -> list[tuple[Operation, NDArray[np.float64]]]:
        """The operations of one path on its critical path, each with its time."""
        out, last_posted = [], None
        for op in getattr(self.nic, side):
            if op.initiator not in ON_PATH[side]:
                continue
            direction = "down" if op.initiator in DOWN else "up"
            posted = op.initiator in POSTED
            out.append((op, self.op_ns(op, stat, chained=posted and last_posted == direction)))
            last_posted = direction if posted else None
        return out

    def terms(self, params: dict[str, float]) -> list[Term]:
        """Every term of the loopback, in the order the packet meets them."""
        tx, rx = self._pcie("tx"), self._pcie("rx")
        frame_ns = (self.frame + wire.PREAMBLE_SFD_BYTES) * 8 / self.eth.rate_gbps
        interrupt = any(op.initiator == "interrupt" for op in self.nic.rx)
        notice = {
            s: np.full(self.frame.shape, self._notice_ns(params, s, interrupt)) for s in STATS
        }
        return [
            *tx,
            self._fixed("tx", "NIC transmit pipeline", "device", params["device_tx_ns"]),
            Term(
                "wire",
                "frame serialization at the Ethernet rate",
                "wire",
                dict.fromkeys(STATS, frame_ns),
            ),
            self._fixed("wire", "MACs, PHYs and the loopback cable", "device", params["phy_ns"]),
            self._fixed("rx", "NIC receive pipeline", "device", params["device_rx_ns"]),
            *rx,
            Term(
                "rx",
                "host notices: interrupt handler" if interrupt else "host notices: poll",
                "host",
                notice,
            ),
        ]

    def _pcie(self, side: str) -> list[Term]:
        """The path's PCIe terms, each priced at every statistic."""
        by_stat = {s: self.pcie_terms(side, s) for s in STATS}
        return [
            Term(side, op.what, "pcie", {s: by_stat[s][i][1] for s in STATS})
            for i, (op, _) in enumerate(by_stat["p50"])
        ]

    def _fixed(self, side: str, what: str, kind: Kind, value: float) -> Term:
        return Term(side, what, kind, dict.fromkeys(STATS, np.full(self.frame.shape, value)))

    @staticmethod
    def _notice_ns(params: dict[str, float], stat: str, interrupt: bool) -> float:
        """Interrupt: its assumed latency; polling: the phase of the poll loop at which the
        write lands, uniform, so q x period at quantile q and half the period on average."""
        if interrupt:
            return params["interrupt_ns"]
        return params["poll_ns"] * QUANTILES.get(stat, 0.5)

    def _dma_ops(self, initiator: str) -> list[Operation]:
        return [op for _, op in self.nic.operations() if op.initiator == initiator]

    def read_requests(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Device read requests per packet (tags taken) and the round trip each holds its tag
        for on a busy host (`LOADED_STAT`: the same latency `tag_check` tests), as the NIC
        model prices them for its tag bound (`NicResult.tag_ns`): one rule for both."""
        limit = TagLimit(read_ns=self.host.read_ns[LOADED_STAT])
        priced = evaluate(self.nic, self.link, self.eth, fixed_rows(self.frame), limit=limit)
        requests, held = priced.costs.read_requests, priced.tag_ns
        per_request = np.divide(held, requests, out=np.zeros_like(held), where=requests > 0)
        return requests, per_request

    def dmas_in_flight(self, rate: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        """Device DMAs in flight per direction at `rate` packets/s by Little's law, each for
        its own latency: reads (data down) for their round trip, writes (up) for their posted
        latency."""
        out = {}
        for direction, initiator in (("down", "dma_read"), ("up", "dma_write")):
            busy = np.zeros(self.frame.shape)
            for op in self._dma_ops(initiator):
                busy += self.op_ns(op, LOADED_STAT, chained=False) / self.size(op.every)
            out[direction] = in_flight(rate, busy)
        return out


# ---------------------------------------------------------------------------------------------
# Rows and the DataFrame


def rows(result: Loopback) -> list[dict[str, Any]]:
    """One record per frame size: the JSON contract of `pcieperf latency`."""
    share = result.pcie_share()
    low, high = result.total_range_ns
    out = []
    for i, frame in enumerate(result.frames):
        row: dict[str, Any] = {
            "size": int(frame),
            "total_ns": float(result.total_ns()[i]),
            "pcie_ns": float(result.kind_ns("pcie")[i]),
            "pcie_share": float(share[i]),
            **{f"{k}_ns": float(result.kind_ns(k)[i]) for k in KINDS if k != "pcie"},
            "total_by_stat_ns": {s: float(result.total_ns(s)[i]) for s in STATS},
            "total_range_ns": [float(low[i]), float(high[i])],
            "total_low_ns": float(low[i]),
            "total_high_ns": float(high[i]),
            "terms": [
                {
                    "term": f"{t.path} {t.what}",
                    "path": t.path,
                    "what": t.what,
                    "kind": t.kind,
                    "ns": float(t.ns["p50"][i]),
                }
                for t in result.terms
            ],
            "rate_pps": float(result.rate_pps[i]),
            "inflight_needed": {
                "up": float(result.inflight_needed[i]),
                "down": float(result.inflight_needed[i]),
            },
            "dmas_in_flight": {d: float(v[i]) for d, v in result.dmas_in_flight.items()},
            "tags_needed": float(result.tags_needed[i]),
            "tags_available": result.tags_available,
            "tag_bound_pps": float(result.tag_bound_pps[i]),
        }
        out.append(row)
    return out


class LoopbackOptions(TypedDict, total=False):
    """The keywords `loopback` takes besides the profile, sizes and host, for type checkers
    (`latency_table` hands them on)."""

    link: Link | None
    eth: Ethernet | None
    pps: float | None
    params: dict[str, float] | None
    tags: int | None


def latency_table(
    profile: NicProfile | str = DEFAULT_PROFILE,
    sizes: ArrayLike = (64, 128, 256, 512, 1024, 1500),
    host: HostLatency | str | Path | None = None,
    **options: Unpack[LoopbackOptions],
) -> pandas.DataFrame:
    """`loopback` as a pandas DataFrame, one row per frame size: `pcieperf latency --format csv`'s
    columns, each term's median as `terms_<path>_<what>_ns`. `host` may be a pcie-bench result
    directory; other keywords go to `loopback`."""
    from pcieperf.results import frame  # deferred: the CLI's latency command does not need it

    if isinstance(host, str | Path):
        host = host_from_dir(Path(host))
    return frame(rows(loopback(profile, sizes, host, **options)))


# ---------------------------------------------------------------------------------------------
# The reverse: what the tags sustain (checked against pcie-bench's 64 B read bandwidth)

BANDWIDTH_FILE = "bw_dma_sz_sweep.csv"
BASE_TAGS = 32  # PCIe Base 3.0 §2.2.6.2: 5-bit Tag field unless Extended Tag Field is enabled
EXTENDED_TAGS = 256  # ... 8-bit Tag field with Extended Tag Field Enable (§7.8.4, bit 8)


def device_tags(path: Path, vendor: str = "Netronome") -> int:
    """Read requests the benchmark device may keep outstanding, from its Device Control
    register in the host's `sys-lspci.txt` (lspci -vv prints ExtTag+ or ExtTag-)."""
    from pcieperf.pciebench.host import device_block

    lspci = path / "sys-lspci.txt"
    if not lspci.is_file():
        raise UsageError(f"{path}: sys-lspci.txt is missing; the tag count comes from it")
    block = device_block(read_bounded(lspci).decode(errors="replace"), vendor)
    control = re.search(r"DevCtl:.*?ExtTag([+-])", block, re.S)
    if control is None:
        raise UsageError(f"{lspci}: no DevCtl ExtTag flag for the {vendor} device")
    return EXTENDED_TAGS if control.group(1) == "+" else BASE_TAGS


SEQUENTIAL_FILE = "bw_dma_off_rd.csv"
# Device offsets the NFP reads as fast as offset 0: on every steady host the 64 B runs at
# these offsets agree within 2 % (bw_dma_off_rd.csv); the others pay a device-side penalty.
ALIGNED_DEVICE_BYTES = 8


def reads_gbps(tags: int, latency_ns: float) -> float:
    """Gb/s of 64 B reads that `tags` sustain when each read holds its tag `latency_ns`."""
    return float(tag_bound_rate(tags, latency_ns)) * LATENCY_TEST_BYTES * 8 / 1e9


@dataclass(frozen=True)
class TagCheck:
    """Little's law against one host: its tags over its 64 B read latency, as Gb/s of 64 B
    reads, beside what its bandwidth runs measured.

    `latency_ns`: the latency a loaded host holds a tag for (`LOADED_STAT`, the floor);
    `idle_ns`: the median of the one-at-a-time latency test, what every read would hold if
    each met the host as idle as that test does. `measured_gbps`: BW_DMA_RD, Rand, HWarm,
    8 KiB, 64 B (the size sweep); `sequential_gbps`: the same reads at sequential addresses
    (`sequential_reads`), empty where the host has no offset sweep.
    """

    host: str
    tags: int
    latency_ns: float
    idle_ns: float
    measured_gbps: float
    sequential_gbps: tuple[float, ...] = ()

    @property
    def predicted_gbps(self) -> float:
        """What the tags sustain at the loaded latency."""
        return reads_gbps(self.tags, self.latency_ns)

    @property
    def idle_gbps(self) -> float:
        """What the tags would sustain if every read paid the idle host's median."""
        return reads_gbps(self.tags, self.idle_ns)

    @property
    def error_pct(self) -> float:
        """Predicted relative to measured, in percent."""
        return (self.predicted_gbps / self.measured_gbps - 1) * 100

    @property
    def sequential_error_pct(self) -> float | None:
        """Predicted relative to the median sequential run, in percent (None without runs)."""
        if not self.sequential_gbps:
            return None
        return (self.predicted_gbps / float(np.median(self.sequential_gbps)) - 1) * 100


def _bandwidth_rows(path: Path, file: str) -> dict[str, NDArray[Any]]:
    """A bandwidth file's 64 B HWarm 8 KiB read rows."""
    bw = read_result_csv(path / file).columns
    keep = (
        (bw["test"] == "BW_DMA_RD")
        & (bw["cache"] == "HWarm")
        & (bw["window_bytes"] == REFERENCE_WINDOW)
        & (bw["size_bytes"] == LATENCY_TEST_BYTES)
    )
    return {k: v[keep] for k, v in bw.items()}


def sequential_reads(path: Path) -> tuple[float, ...]:
    """A host's 64 B reads under the size sweep's load (95 threads, 8 KiB, HWarm) but at
    sequential addresses: the offset sweep's runs at host offset 0 and an aligned device
    offset (`ALIGNED_DEVICE_BYTES`); empty where the host has no offset sweep."""
    if not (path / SEQUENTIAL_FILE).is_file():
        return ()
    rows = _bandwidth_rows(path, SEQUENTIAL_FILE)
    keep = (rows["host_offset"] == 0) & (rows["dev_offset"] % ALIGNED_DEVICE_BYTES == 0)
    return tuple(float(v) for v in rows["bw_gbps"][keep])


def tag_check(path: Path) -> TagCheck:
    """The tag-bound 64 B read rate of a pcie-bench host from its latency files and lspci
    alone, beside the 64 B read bandwidth it measured (and its sequential-address runs)."""
    host = host_from_dir(path)
    tags = device_tags(path)
    if not (path / BANDWIDTH_FILE).is_file():
        raise UsageError(f"{path}: {BANDWIDTH_FILE} is missing; it holds the measured bandwidth")
    measured = _bandwidth_rows(path, BANDWIDTH_FILE)["bw_gbps"]
    if measured.size != 1:
        raise UsageError(f"{path / BANDWIDTH_FILE}: no single BW_DMA_RD 64 B HWarm 8 KiB row")
    return TagCheck(
        path.name,
        tags,
        latency_ns=host.read_ns[LOADED_STAT],
        idle_ns=host.read_ns["p50"],
        measured_gbps=float(measured[0]),
        sequential_gbps=sequential_reads(path),
    )

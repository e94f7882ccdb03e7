"""DPDK's capture tools, one row each in `TOOLS` (as Wireshark lists its file readers in one
table): the binary, its command line and closing output, the capture paths (writers) it has,
and the facts about it that a run, the model and the calibration read. Both shipped tools are
secondary processes of a running primary (dpdk-testpmd): `dumpcap` writes pcapng or pcap
itself, batching writes per burst (app/dumpcap/main.c), `pdump` hands every copy to a net_pcap
port, whose libpcap `pcap_dump` writes it record by record (app/pdump/main.c,
drivers/net/pcap). A third tool is one row here and its parser (CONTRIBUTING.md, "Adding a
capture tool")."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, fields

from pcieperf.errors import PcieperfError, UsageError, param, require_choice


@dataclass(frozen=True)
class Writer:
    """One capture path: the copy the forwarding lcore makes and the writes the tool does with
    it. `name` keys its costs in a calibration; `stdio`: the tool writes through libpcap's
    pcap_dump, whose fwrite copies every record's bytes into a stdio buffer."""

    name: str
    format: str
    copy: str  # the producer's copy in lib/pdump/rte_pdump.c
    stdio: bool


@dataclass(frozen=True)
class ToolRun:
    """What a tool's command line is built from: its binary, the primary's file prefix, the
    port it captures (its name and index), where it writes (within the tool's path limit),
    the format, snap length and ring size."""

    binary: str
    prefix: str
    port: str
    port_id: int
    out: str
    format: str
    snaplen: int | None
    ring_size: int
    direction: str = "both"
    queue: int | None = None
    filter: str | None = None


@dataclass(frozen=True)
class Output:
    """What a tool says at its end: the records it wrote, and the copies the primary made for
    it (ring-full drops included) where it learns them (None: it does not)."""

    written: int
    received: int | None = None


@dataclass(frozen=True)
class ToolCounts:
    """A tool's copies (`received`, ring-full drops included) and those dropped because its
    ring was full, counted or inferred."""

    received: int
    dropped: int

    @property
    def written(self) -> int:
        """Records that reached the tool and were written."""
        return self.received - self.dropped


@dataclass(frozen=True)
class CaptureTool:
    """One capture tool: `name` (what `--tool` takes), its `binary` and the variable `env` that
    points at another; `writers` (its capture paths, one per format it writes, the first its
    default); `command` (its command line) and `parse` (its closing output); `capturing` (the
    text of the line it prints once the primary copies for it); `pool_mbufs` (the mbufs of its
    copies' pool, given its ring size); `rings` (the rings its copies wait in); `sleeps`
    (whether its capture thread sleeps when its ring stays empty: it then loses what arrives
    while it wakes); `counts_drops` (whether it learns the copies dropped at a full ring);
    `stamped` (where its timestamps come from); `snaplen` (whether it cuts packets);
    `path_bytes` (the longest output path it keeps, None: a plain argument) and
    `capture_threads` (threads that dequeue and write); what it can be asked to copy:
    `directions` (of `capture.path.DIRECTIONS`, the first what it copies unless asked),
    `queues` (whether it copies one queue, else every queue) and `filters` (whether it takes a
    BPF capture filter)."""

    name: str
    binary: str
    env: str
    writers: tuple[Writer, ...]
    command: Callable[[ToolRun], list[str]]
    parse: Callable[[str], Output]
    capturing: str
    pool_mbufs: Callable[[int], int]
    rings: int
    sleeps: bool
    counts_drops: bool
    stamped: str
    snaplen: bool
    path_bytes: int | None
    capture_threads: int
    directions: tuple[str, ...] = ("both",)
    queues: bool = False
    filters: bool = False

    @property
    def formats(self) -> tuple[str, ...]:
        """The file formats it writes, its default first."""
        return tuple(w.format for w in self.writers)

    def writer(self, fmt: str) -> Writer:
        """Its capture path writing `fmt`."""
        found = {w.format: w for w in self.writers}
        if fmt not in found:
            raise UsageError(
                f"{param('tool')} {self.name} writes {', '.join(self.formats)} only: give "
                f"{param('format')} {self.formats[0]}"
            )
        return found[fmt]

    def check_copies(self, direction: str, queue: int | None, filter: str | None) -> None:
        """What the tool is asked to copy must be what it can copy, or one line saying what it
        does instead and which tool can."""
        if direction not in self.directions:
            raise UsageError(
                f"{self.binary} copies {' or '.join(_COPIED[d] for d in self.directions)}, not "
                f"{_COPIED[direction]}: leave out {param('direction')} "
                f"({_able(self, 'directions')})"
            )
        if queue is not None and not self.queues:
            raise UsageError(
                f"{self.binary} copies every queue of the port, not one: leave out "
                f"{param('queue')} ({_able(self, 'queues')})"
            )
        if filter is not None and not self.filters:
            raise UsageError(
                f"{self.binary} takes no capture filter: leave out {param('filter')} "
                f"({_able(self, 'filters')})"
            )


_COPIED = {"both": "Rx and Tx together", "rx": "Rx alone", "tx": "Tx alone"}


CHOOSABLE = ("directions", "queues", "filters")
"""The `CaptureTool` fields that say what a tool can be asked to copy."""


def able(field: str) -> tuple[str, ...]:
    """The tools that can choose what they copy by `field` (`directions`, `queues`,
    `filters`): those whose row sets it beyond what a tool copies unless asked."""
    (plain,) = (f.default for f in fields(CaptureTool) if f.name == field)
    return tuple(t.name for t in TOOLS if getattr(t, field) != plain)


def _able(row: CaptureTool, field: str) -> str:
    """The tools that can do what `row` cannot, as a hint."""
    found = able(field)
    return f"{param('tool')} {' or '.join(found)} can" if found else "no capture tool here can"


def last_lines(lines: list[str], count: int = 3) -> str:
    """The last non-empty lines a tool printed, joined, for a one-line error."""
    kept = [line.strip() for line in lines if line.strip()][-count:]
    return " | ".join(kept) or "no output"


# --- dpdk-dumpcap ------------------------------------------------------------------------------

_RECEIVED = re.compile(r"Packets received/dropped on interface '([^']*)': ([0-9]+)/([0-9]+)")


def dumpcap_command(run: ToolRun) -> list[str]:
    """dpdk-dumpcap capturing the port of the primary into `out` until SIGINT; stdout
    line-buffered (stdbuf) so that its `Capturing on` line arrives when it is printed."""
    command = ["stdbuf", "-oL", run.binary, f"--file-prefix={run.prefix}", "-i", run.port, "-q"]
    command += ["-w", run.out, "-N", str(run.ring_size)]
    if run.snaplen:
        command += ["-s", str(run.snaplen)]
    if run.filter is not None:  # compiled by libpcap, run by the primary (rte_pdump_enable_bpf)
        command += ["-f", run.filter]
    return command + (["-P"] if run.format == "pcap" else [])


def parse_dumpcap(output: str) -> Output:
    """The closing `Packets received/dropped on interface 'P': R/D (x%)` line: received
    counts every copy the primary made, ring-full drops included (app/dumpcap/main.c)."""
    found = _RECEIVED.findall(output)
    if not found:
        raise PcieperfError(f"dpdk-dumpcap printed no packet counts: {_tail(output)}")
    _, received, dropped = found[-1]
    return Output(int(received) - int(dropped), int(received))


def _tail(output: str) -> str:
    return last_lines(output.splitlines())


# --- dpdk-pdump --------------------------------------------------------------------------------

_PDUMP_WRITTEN = re.compile(r"-packets transmitted to vdev:\s*([0-9]+)")
PDUMP_POOL_MBUFS = 65535  # app/pdump/main.c MBUFS_PER_POOL: total-num-mbufs unless given


def pdump_command(run: ToolRun) -> list[str]:
    """dpdk-pdump copying the port's Rx, Tx or both (of one queue, or every queue: `*`) of the
    primary into one net_pcap port writing `out` (pcap only) until SIGINT; stdout
    line-buffered. It copies the directions it is given a device for (app/pdump/main.c
    parse_pdump: rx-dev sets RTE_PDUMP_FLAG_RX, tx-dev RTE_PDUMP_FLAG_TX)."""
    devices = [f"{d}-dev={run.out}" for d in ("rx", "tx") if run.direction in (d, "both")]
    queue = "*" if run.queue is None else str(run.queue)
    spec = ",".join(
        [f"port={run.port_id}", f"queue={queue}", *devices, f"ring-size={run.ring_size}"]
    )
    return ["stdbuf", "-oL", run.binary, f"--file-prefix={run.prefix}", "--", "--pdump", spec]


def parse_pdump(output: str) -> Output:
    """Records dpdk-pdump handed to its pcap port: its closing `-packets transmitted to vdev`
    (it does not learn how many copies the primary dropped because its ring was full)."""
    found = _PDUMP_WRITTEN.findall(output)
    if not found:
        raise PcieperfError(f"dpdk-pdump printed no packet counts: {_tail(output)}")
    return Output(int(found[-1]))


# --- the table ---------------------------------------------------------------------------------

PCAPNG_COPY = "rte_pcapng_copy: the pcapng block built on the forwarding lcore"
MBUF_COPY = "rte_pktmbuf_copy"

TOOLS: list[CaptureTool] = [
    CaptureTool(
        name="dumpcap",
        binary="dpdk-dumpcap",
        env="PCIEPERF_DUMPCAP",
        # pcapng: one writev of the blocks per dequeued burst; -P: libpcap's pcap_dump (stdio)
        writers=(
            Writer("pcapng", "pcapng", PCAPNG_COPY, False),
            Writer("pcap", "pcap", MBUF_COPY, True),
        ),
        command=dumpcap_command,
        parse=parse_dumpcap,
        capturing="Capturing on",  # app/dumpcap/main.c, once the primary copies for it
        pool_mbufs=lambda ring: 2 * ring,  # app/dumpcap/main.c create_mempool: twice its ring
        rings=1,
        sleeps=True,  # process_ring: usleep once its ring was empty SLEEP_THRESHOLD times
        counts_drops=True,  # received = accepted + ringfull (the primary's pdump statistics)
        stamped="stamped per burst when copied",  # one TSC read a burst in rte_pcapng_copy
        snaplen=True,  # -s
        path_bytes=None,  # -w takes a path of any length
        capture_threads=1,  # its main thread dequeues and writes
        # 22.11 asks for RTE_PDUMP_FLAG_RXTX on RTE_PDUMP_ALL_QUEUES and has no option for
        # either; -f compiles a libpcap filter into the BPF the primary runs per packet
        directions=("both",),
        queues=False,
        filters=True,
    ),
    CaptureTool(
        name="pdump",
        binary="dpdk-pdump",
        env="PCIEPERF_PDUMP",
        writers=(Writer("pdump", "pcap", MBUF_COPY, True),),  # a net_pcap port's pcap_dump
        command=pdump_command,
        parse=parse_pdump,
        capturing="capture for (",  # dump_packets: " core (N), capture for (K) tuples"
        pool_mbufs=lambda ring: PDUMP_POOL_MBUFS,
        rings=2,  # one for Rx copies, one for Tx (create_mp_ring_vdev)
        sleeps=False,  # dump_packets polls its rings without sleeping
        counts_drops=False,
        stamped="stamped when written",  # by the net_pcap port, in the capture process
        snaplen=False,  # app/pdump/main.c writes whole packets
        # rx-dev/tx-dev are copied into char[TX_STREAM_SIZE] (64) with strlcpy: a longer path
        # is cut short silently, and the capture goes to a file of that name
        path_bytes=63,
        capture_threads=1,  # one core dequeues both rings
        directions=("both", "rx", "tx"),  # rx-dev, tx-dev or both
        queues=True,  # queue=N, or * for all
        filters=False,  # 22.11's pdump has no filter option
    ),
]
"""The capture tools `capture run --tool` offers, the first its default."""


def names() -> tuple[str, ...]:
    """The tools' names, as `--tool` takes them."""
    return tuple(t.name for t in TOOLS)


def tool(name: str) -> CaptureTool:
    """The tool of that name, or one line naming those there are."""
    require_choice(param("tool"), name, names())
    return next(t for t in TOOLS if t.name == name)


def writers() -> dict[str, Writer]:
    """Every capture path of every tool, by name (a calibration's cost keys)."""
    return {w.name: w for t in TOOLS for w in t.writers}


def writer_name(tool_name: str, fmt: str) -> str:
    """The capture path of `tool_name` writing `fmt`."""
    return tool(tool_name).writer(fmt).name


def tool_of(writer: str) -> CaptureTool:
    """The tool a capture path belongs to."""
    return next(t for t in TOOLS if writer in (w.name for w in t.writers))


# Shared libraries that register mempool drivers. Secondary and primary must register them in
# the same order, or they number the mempool ops differently and every copy the primary makes
# into the secondary's pool fails (DPDK Bugzilla 1073): the secondary preloads the primary's.
_MEMPOOL_DRIVER = re.compile(r"\s(/\S*/librte_mempool_[a-z0-9_]+\.so[.0-9]*)\s")


def mempool_preload(primary: str) -> str:
    """LD_PRELOAD for a secondary of `primary`: the mempool driver libraries the primary links,
    in its link order (as `ldd` lists them)."""
    done = subprocess.run(["ldd", primary], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PcieperfError(f"ldd {primary} failed: {done.stderr.strip()}")
    return ":".join(_MEMPOOL_DRIVER.findall(done.stdout + "\n"))

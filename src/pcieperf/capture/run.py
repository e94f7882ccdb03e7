"""A capture run: dpdk-testpmd forwards on a virtual port (the primary, on hugepages), first
alone, then with a DPDK capture tool attached as a secondary; what each thread did per packet
in both intervals, what the tool wrote, and what it cost the forwarding.

The forwarding rate comes from testpmd's periodic statistics (cumulative Rx packets once a
period); at each block the forwarding lcores' CPU time is read, so that every interval has the
packets and the CPU time its threads received between two blocks. The tool's CPU time and write
calls are read when it starts capturing and after it exits (before it is reaped, so /proc still
has them). Everything the run made is undone on the way out, also on Ctrl-C, SIGTERM or a
failure: the tool and testpmd stopped, EAL's runtime folder removed, a file that was not
published removed, hugepages unmounted and their count restored.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from pcieperf import interrupts, outputs, statedir
from pcieperf.capture import (
    bpf,
    hugepages,
    leftovers,
    lock,
    placement,
    port,
    processes,
    threads,
    tools,
)
from pcieperf.capture.intervals import Interval
from pcieperf.capture.path import DIRECTIONS, FORMATS, SINKS
from pcieperf.capture.port import Port
from pcieperf.dpdk import testpmd
from pcieperf.errors import PcieperfError, UsageError, param, require_choice, require_new_file, warn
from pcieperf.net.trace.statistics import stats_files
from pcieperf.net.wire import FCS_BYTES, MIN_FRAME_BYTES

# testpmd's mbufs carry at most RTE_MBUF_DEFAULT_DATAROOM (2048) bytes in one segment
# (lib/mbuf/rte_mbuf_core.h), so a net_null packet is at most that and its frame 4 B more.
MAX_FRAME_BYTES = 2048 + FCS_BYTES
TMPFS = Path("/dev/shm")  # a tmpfs on every systemd and Debian system (hier(7))
NULL_SINK = Path(os.devnull)  # the system's: never removed
RING_SIZES = (64, 1 << 20)  # rte_ring sizes are powers of two (lib/ring/rte_ring.h)
MAX_SNAPLEN = 65535  # --snaplen up to the largest IPv4 packet (a 16-bit total length)
START_DEADLINE_S = 60.0  # testpmd's first block or the tool's start, on a busy machine


@dataclass(frozen=True)
class CaptureConfig:
    """One capture run: testpmd forwarding `frame`-byte net_null frames (FCS included, so
    packets of `frame` - 4 bytes), replaying `pcap`, or forwarding what a real `port` receives
    (`capture.port`), on `fwd_lcores` forwarding lcores; each interval lasts at least `seconds`
    and two statistics periods. The tool copies `direction` (`capture.path.DIRECTIONS`) of one
    `queue` (None: all) that its capture `filter` (None: all) lets through."""

    frame: int | None = None  # None: MIN_FRAME_BYTES, net_null's; a replay's or port's: its own
    pcap: Path | None = None
    seconds: float = 3.0
    fwd_lcores: int = 1
    tool: str = tools.TOOLS[0].name
    format: str | None = None  # None: the tool's own (its first)
    snaplen: int | None = None
    ring_size: int = 2048
    sink: str = "null"
    out: Path | None = None
    force: bool = False
    huge_dir: Path | None = None
    wait: float = lock.WAIT_S
    port: str | None = None
    direction: str = "both"
    queue: int | None = None
    filter: str | None = None

    def __post_init__(self) -> None:
        if self.frame is not None:
            self._check_frame(self.frame)
        testpmd.RunConfig(seconds=self.seconds)  # the same --seconds rule as `dpdk run`
        tool = tools.tool(self.tool)
        if self.format is not None:
            require_choice(param("format"), self.format, FORMATS)
        tool.writer(self.file_format)
        require_choice(param("sink"), self.sink, SINKS)
        if self.fwd_lcores not in (1, 2):
            raise UsageError(f"{param('lcores')} {self.fwd_lcores!r} is not allowed; give 1 or 2")
        low, high = RING_SIZES
        ring = self.ring_size
        if not (isinstance(ring, int) and low <= ring <= high and ring & (ring - 1) == 0):
            raise UsageError(
                f"{param('ring_size')} {ring!r} is not allowed; use a power of two from {low} "
                f"to {high}"
            )
        if self.snaplen is not None and not 1 <= self.snaplen <= MAX_SNAPLEN:
            raise UsageError(
                f"{param('snaplen')} {self.snaplen!r} is not allowed; give 1 to {MAX_SNAPLEN}"
            )
        if self.snaplen is not None and not tool.snaplen:
            raise UsageError(
                f"{param('tool')} {tool.name} has no snap length (it writes whole packets): "
                f"leave out {param('snaplen')}"
            )
        lock.check_wait(self.wait)
        self._check_copies()
        if self.port is not None:
            if self.pcap is not None:
                raise UsageError(f"give {param('port')} or {param('pcap')}, not both")
            port.port(self.port)  # checked in sysfs now, before anything starts
        if (self.sink == "file") != (self.out is not None):
            raise UsageError(
                f"{param('out')} names the capture file of {param('sink')} file, and only it "
                "takes one"
            )

    def _check_frame(self, frame: int) -> None:
        """A net_null frame size, given only where net_null makes the frames."""
        if not MIN_FRAME_BYTES <= frame <= MAX_FRAME_BYTES:
            raise UsageError(
                f"frame {frame!r} is not allowed; give {MIN_FRAME_BYTES} to "
                f"{MAX_FRAME_BYTES} bytes (FCS included; one mbuf of 2048 B)"
            )
        given = param("port") if self.port is not None else param("pcap") if self.pcap else None
        if given is not None:
            raise UsageError(
                f"{param('frame')} sizes net_null's frames; with {given} the frames are what "
                f"it forwards: leave out {param('frame')}"
            )

    @property
    def null_frame(self) -> int:
        """The bytes of each net_null frame, FCS included."""
        return self.frame if self.frame is not None else MIN_FRAME_BYTES

    def _check_copies(self) -> None:
        """Direction, queue and filter: each one the tool can honour (its `CaptureTool` row)."""
        require_choice(param("direction"), self.direction, tuple(DIRECTIONS))
        if self.queue is not None and not 0 <= self.queue < self.fwd_lcores:
            allowed = "0" if self.fwd_lcores == 1 else f"0 to {self.fwd_lcores - 1}"
            raise UsageError(
                f"{param('queue')} {self.queue!r} is not allowed; the port has one queue per "
                f"forwarding lcore ({param('lcores')} {self.fwd_lcores}): give {allowed}"
            )
        if self.filter is not None and not self.filter.strip():
            raise UsageError(f"{param('filter')} is empty; give a libpcap filter, like 'udp'")
        self.capture_tool.check_copies(self.direction, self.queue, self.filter)
        if self.filter is not None and self.sink == "null":
            raise UsageError(
                f"{param('filter')} needs a file to count what passed it (the tool's own count "
                f"takes in what it refused): give {param('sink')} tmpfs or {param('out')}"
            )
        if self.filter is not None:
            bpf.check_filter(self.filter, self.snaplen or MAX_SNAPLEN)

    @property
    def real_port(self) -> Port | None:
        """The real port forwarded on, checked (None: net_null or a replayed capture)."""
        return port.port(self.port) if self.port is not None else None

    @property
    def copies_per_packet(self) -> int:
        """Copies the tool gets per forwarded packet: every packet is received and sent on the
        one port (testpmd's loop topology), and copied in each direction captured."""
        return DIRECTIONS[self.direction]

    @property
    def copies_per_forwarded(self) -> float:
        """Copies the tool gets per packet forwarded on all queues: those of one queue of the
        `fwd_lcores` (each lcore polls a queue of its own, given equal shares) where it copies
        one."""
        return self.copies_per_packet / (self.fwd_lcores if self.queue is not None else 1)

    @property
    def capture_tool(self) -> tools.CaptureTool:
        """The tool's row (`capture.tools`)."""
        return tools.tool(self.tool)

    @property
    def file_format(self) -> str:
        """The format the tool writes (the tool's own unless given)."""
        return self.format or self.capture_tool.formats[0]

    @property
    def mode(self) -> str:
        """The port testpmd forwards on: `null` frames, a `pcap` replayed, or a real port's
        kind (`pci`, `af_packet`)."""
        if self.port is not None:
            return port.port(self.port).kind
        return "pcap" if self.pcap else "null"


@dataclass(frozen=True)
class ToolInterval:
    """The capture tool from its start of capture to its exit: CPU ns of its capture thread,
    the times it slept and its waits for a CPU, its write calls and bytes and its closing
    counts (over its life), the CPU time pcieperf itself (the harness: its polling loop,
    reading threads and round-trip probe) took meanwhile, per wall second, and the machine's
    mean run queue while it captured (NaN: not read)."""

    wall_s: float
    cpu_ns: int
    sleeps: int
    io: threads.IoCounts
    counts: tools.ToolCounts
    harness_cpu_share: float
    waits: threads.Waits
    run_queue: float


@dataclass
class CaptureResult:
    """A finished capture run: what ran, what each interval measured, the file it wrote."""

    config: CaptureConfig
    version: str
    commands: dict[str, list[str]]
    outputs: dict[str, str]
    baseline: Interval
    during: Interval
    tool: ToolInterval
    crashed: bool
    cross_cpu_slowdown: tuple[float, float]  # placement's probe before and after the run
    cache_bytes: int  # the cache a pool keeps (capture.pool's probe), before and after: mean
    round_trip_ns: tuple[float, float]  # the worst line round trip alone and while capturing
    file: Path | None = None
    file_stats: dict = field(default_factory=dict)


Tick = Callable[[str, float], None]


def run(cfg: CaptureConfig, tick: Tick | None = None) -> CaptureResult:
    """Measure testpmd's forwarding without and with the capture tool attached, and the tool
    itself; `tick` gets the phase and its seconds elapsed, for a progress bar."""
    from pcieperf.capture.pool import effective_cache_bytes  # numpy: for this command alone

    binaries = _binaries(cfg)
    _check_cpus()
    hugepages.check(cfg.huge_dir)
    _check_sink(cfg)
    pool = _pool(cfg)  # a replayed capture is read for it: once
    with interrupts.stop_as_interrupt(), lock.machine_lock(cfg.wait):
        _recover()
        prefix = f"{leftovers.RUN_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
        stack = ExitStack()
        try:
            record = leftovers.Recorder(prefix)
            stack.callback(record.close)  # last: once everything it lists is undone
            links = _private_folder(stack, record, statedir.folder())
            huge = stack.enter_context(
                hugepages.hugepages(_pages(pool[1], cfg), cfg.huge_dir, record)
            )
            stack.callback(_remove_runtime_dir, prefix)
            probed_before = placement.cross_cpu_slowdown()
            cache_before = effective_cache_bytes()
            command = _primary_command(cfg, binaries["testpmd"], prefix, huge, pool, links)
            primary = processes.Primary(command)
            record.child(primary.proc.pid)
            stack.callback(primary.stop)
            round_trips = placement.RoundTripSampler()
            stack.callback(round_trips.stop)
            round_trips.start()
            target = _target(cfg, stack, record)
            baseline = _measure_baseline(primary, cfg.seconds, tick)
            command = _tool_command(cfg, binaries["tool"], prefix, target, links)
            preload = tools.mempool_preload(binaries["testpmd"])
            tool = processes.Tool(cfg.capture_tool, command, preload)
            record.child(tool.proc.pid)
            stack.callback(tool.kill)
            during, tool_interval = _measure_capture(
                primary, tool, cfg.seconds, cfg.copies_per_forwarded, tick
            )
            crashed = primary.stop()
            round_trips.stop()
            probed = (probed_before, placement.cross_cpu_slowdown())
            cache = (cache_before + effective_cache_bytes()) // 2
            result = CaptureResult(
                cfg,
                primary.parsed.version,
                {"testpmd": primary.command, cfg.tool: command},
                {"testpmd": "".join(primary.lines), cfg.tool: "".join(tool.lines)},
                baseline,
                during,
                tool_interval,
                crashed,
                probed,
                cache,
                (_worst(round_trips, baseline), _worst(round_trips, during)),
            )
            _finish_file(result, target)
        finally:
            with interrupts.signals_held():
                stack.close()
    return result


def _private_folder(stack: ExitStack, record: leftovers.Recorder, parent: Path) -> Path:
    """A private folder of the run's in `parent`, recorded, and removed at its end."""
    folder = statedir.private_folder(f".{leftovers.RUN_PREFIX}{os.getpid()}-", parent)
    record.folder(folder)
    stack.callback(statedir.remove_private_folder, folder)
    return folder


def _worst(round_trips: placement.RoundTripSampler, interval: Interval) -> float:
    """The highest cache-line round trip probed during `interval`."""
    return round_trips.worst(interval.first.t, interval.last.t)


def _recover() -> None:
    """Undo what earlier runs left when they were killed outright (SIGKILL: no cleanup ran),
    and say so; under the machine's capture lock, and only what their records prove they
    made, once their owner is dead (`leftovers`)."""
    undone = leftovers.recover()
    if undone:
        warn(f"an earlier capture run was killed; undone: {', '.join(undone)}")


def _binaries(cfg: CaptureConfig) -> dict[str, str]:
    """The testpmd and tool binaries, or a one-line refusal naming the package."""
    tool = cfg.capture_tool
    return {"testpmd": testpmd.find_testpmd(), "tool": testpmd.find_binary(tool.binary, tool.env)}


def _check_sink(cfg: CaptureConfig) -> None:
    """The sink must be writable before anything starts."""
    if cfg.out is not None:  # sink `file`, the one with --out
        require_new_file(cfg.out, cfg.force)
        folder = Path(cfg.out).absolute().parent
        if not os.access(folder, os.W_OK):
            raise UsageError(f"{param('out')} {cfg.out}: folder {folder} is not writable")
    elif cfg.sink == "tmpfs" and not os.access(TMPFS, os.W_OK):
        raise UsageError(
            f"{param('sink')} tmpfs writes into {TMPFS}, which is missing or not writable"
        )


def _pool(cfg: CaptureConfig) -> tuple[int, int]:
    """(mbufs, -m megabytes) of testpmd's pool: `dpdk run`'s sizing (a replayed capture is
    preloaded into mbufs)."""
    run_cfg = testpmd.RunConfig(
        mode="pcap" if cfg.pcap else "null",  # a real port's packets come from its wire
        pcap=cfg.pcap,
        seconds=cfg.seconds,
        null_size=cfg.null_frame - FCS_BYTES,
    )
    return testpmd.pool(run_cfg)


def _pages(memory_mb: int, cfg: CaptureConfig) -> int:
    """2 MiB pages for testpmd's memory and the tool's pool (its ring of copies, each in an
    mbuf of up to 2176 B data room: app/dumpcap/main.c create_mempool) with room to spare."""
    tool_mb = -(-cfg.ring_size * 2 * testpmd.MBUF_BYTES // 2**20) + testpmd.MEMORY_HEADROOM_MB
    return hugepages.pages_for(memory_mb + tool_mb)


def _check_cpus() -> None:
    """Two CPUs at least: testpmd's forwarding lcore and the capture tool."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise UsageError(
            f"a capture run needs two CPUs (testpmd's forwarding lcore and the capture tool); "
            f"only CPU {cpus[0]} is available to this process"
        )


def _lcores(fwd_lcores: int) -> str:
    """EAL's --lcores: lcore 0 (main, mostly asleep between statistics) and the forwarding
    lcores, placed round-robin on the CPUs this process may use (the first on the CPU that
    placement.run_cpus names)."""
    cpus = sorted(os.sched_getaffinity(0))
    places = [cpus[0], *(cpus[(1 + k) % len(cpus)] for k in range(fwd_lcores))]
    return ",".join(f"{lcore}@{cpu}" for lcore, cpu in enumerate(places))


def _primary_command(
    cfg: CaptureConfig, binary: str, prefix: str, huge: Path, pool: tuple[int, int], links: Path
) -> list[str]:
    """The primary: testpmd on hugepages with a file prefix of its own (for secondaries)."""
    mbufs, memory = pool
    queues = []
    if cfg.fwd_lcores > 1:  # one Rx and Tx queue per forwarding lcore on the one port
        n = cfg.fwd_lcores
        queues = [f"--nb-cores={n}", f"--rxq={n}", f"--txq={n}"]
    real = cfg.real_port
    if real is not None:
        ports = real.eal_args(cfg.fwd_lcores)
    else:
        vdev = testpmd.vdev(cfg.mode, cfg.pcap, cfg.null_frame - FCS_BYTES, links)
        ports = ["--no-pci", f"--vdev={vdev}"]
    return [
        binary,
        "-v",
        f"--huge-dir={huge}",
        "-m",
        str(memory),
        f"--file-prefix={prefix}",
        f"--lcores={_lcores(cfg.fwd_lcores)}",
        *ports,
        "--",
        *testpmd.app_args(mbufs),
        *queues,
    ]


def _target(cfg: CaptureConfig, stack: ExitStack, record: leftovers.Recorder) -> Path:
    """Where the tool writes: /dev/null, a file in a private tmpfs folder of the run's, or a
    temporary sibling of --out that is published (no-clobber) only once complete; all but
    /dev/null are removed at the end unless published."""
    if cfg.out is not None:  # sink `file`, the one with --out
        target = outputs.temporary_beside(cfg.out)
        stack.callback(target.unlink, missing_ok=True)
        return target
    if cfg.sink == "tmpfs":
        return _private_folder(stack, record, TMPFS) / f"capture.{cfg.file_format}"
    return NULL_SINK


def _tool_command(
    cfg: CaptureConfig, binary: str, prefix: str, target: Path, links: Path
) -> list[str]:
    """The capture tool's command line; its file through a link in the private folder `links`
    where the tool keeps a path in a device argument of limited length (`path_bytes`)."""
    tool = cfg.capture_tool
    out = str(target)
    if tool.path_bytes is not None:
        out = testpmd.devarg_path(target, links, "out", tool.path_bytes)
    real = cfg.real_port
    spec = tools.ToolRun(
        binary,
        prefix,
        real.name if real is not None else f"net_{cfg.mode}0",
        0,
        out,
        cfg.file_format,
        cfg.snaplen,
        cfg.ring_size,
        cfg.direction,
        cfg.queue,
        cfg.filter,
    )
    return tool.command(spec)


def _wait_for(
    what: str,
    done: Callable[[], bool],
    deadline_s: float,
    tick: Tick | None,
    watch: Callable[[], None] | None = None,
) -> None:
    """Wait until `done()`, calling `watch` (which raises if a process has died) each time;
    no fixed sleeps: a busy machine only makes it wait longer, up to `deadline_s`."""
    start = time.monotonic()
    while not done():
        if watch:
            watch()
        elapsed = time.monotonic() - start
        if tick:
            tick(what, elapsed)
        if elapsed > deadline_s:
            raise PcieperfError(f"{what}: not done after {elapsed:.0f} s; is the machine too busy?")
        time.sleep(testpmd.POLL_S)


def _measure_baseline(primary: processes.Primary, seconds: float, tick: Tick | None) -> Interval:
    """Forwarding alone: from the second statistics block (the first follows start-up) until
    `seconds` and at least two periods have passed."""
    samples = primary.samples

    def enough() -> bool:
        return len(samples) >= 3 and samples[-1].t - samples[1].t >= seconds

    _wait_for("forwarding", enough, testpmd.deadline_s(seconds), tick, primary.check_alive)
    return Interval(tuple(samples[1:]))


def _measure_capture(
    primary: processes.Primary,
    tool: processes.Tool,
    seconds: float,
    copies: float,
    tick: Tick | None,
) -> tuple[Interval, ToolInterval]:
    """Forwarding with the tool attached, and the tool (`copies` per forwarded packet): from its
    `Capturing on` until `seconds` and two statistics periods have passed, then the tool is
    stopped (SIGINT)."""

    def watch() -> None:
        primary.check_alive()
        if tool.proc.poll() is not None:
            raise PcieperfError(f"{tool.row.binary} exited: {tools.last_lines(tool.lines)}")

    _wait_for("capture start", tool.capturing.is_set, START_DEADLINE_S, tick, watch)
    start, harness = time.monotonic(), time.process_time()
    cpu0 = threads.cpu_ns(tool.proc.pid)  # EAL's start-up is not the capture's work
    sleeps0, waits0 = threads.sleeps(tool.proc.pid), threads.waits(tool.proc.pid)
    samples = primary.samples
    first = len(samples)
    queue: list[int] = []

    def enough() -> bool:
        queue.append(threads.run_queue())  # sampled each poll (testpmd.POLL_S)
        return len(samples) - first >= 2 and samples[-1].t - start >= seconds

    _wait_for("capturing", enough, testpmd.deadline_s(seconds), tick, watch)
    during = Interval(tuple(samples[first:]))
    tool.proc.send_signal(signal.SIGINT)
    _wait_for("capture stop", tool.exited, processes.STOP_DEADLINE_S, tick)  # testpmd may crash now
    wall, harness = time.monotonic() - start, time.process_time() - harness
    cpu, io = threads.cpu_ns(tool.proc.pid) - cpu0, threads.io_counts(tool.proc.pid)
    slept = threads.sleeps(tool.proc.pid) - sleeps0
    waits = threads.waits(tool.proc.pid)
    waited = threads.Waits(waits.ns - waits0.ns, waits.timeslices - waits0.timeslices)
    counts = _counts(tool.row, tool.reap(), during.pps * wall * copies)
    # Write calls and bytes over the tool's life, as its counts are: the records it wrote
    # before its "capturing" line count too (its start-up writes no more than a few lines).
    queued = [n for n in queue if n >= 0]
    run_queue = sum(queued) / len(queued) if queued else float("nan")
    return during, ToolInterval(wall, cpu, slept, io, counts, harness / wall, waited, run_queue)


def _counts(tool: tools.CaptureTool, output: str, implied: float) -> tools.ToolCounts:
    """The tool's copies and drops: its own counts where it learns the ring-full drops (the
    primary's pdump statistics), else the copies that the forwarding while it ran `implied`
    less those it wrote."""
    said = tool.parse(output)
    copies = said.received
    if copies is None:
        copies = max(said.written, round(implied))
    return tools.ToolCounts(copies, copies - said.written)


def _finish_file(result: CaptureResult, target: Path) -> None:
    """Read what the tool wrote with pcieperf's own reader; publish --out without replacing a
    file that appeared meanwhile (unless --force)."""
    cfg = result.config
    if cfg.sink == "null":
        return

    (stats,) = stats_files([target])
    result.file_stats = stats
    if cfg.filter is not None:
        result.tool = _filtered(result.tool, stats["packets"])
    _check_file(stats["packets"], result.tool.counts.written, cfg)
    if cfg.out is not None:  # sink `file`, the one with --out
        outputs.publish(target, Path(cfg.out), cfg.force)
        result.file = Path(cfg.out)


def _filtered(tool: ToolInterval, packets: int) -> ToolInterval:
    """A filtered capture's counts: the file's records are those written (the tool's own count
    of what it received takes in what its filter refused: app/dumpcap/main.c counts
    `accepted + filtered`), and its copies are those and the ones its ring dropped."""
    dropped = tool.counts.dropped
    return replace(tool, counts=tools.ToolCounts(packets + dropped, dropped))


def _check_file(packets: int, written: int, cfg: CaptureConfig) -> None:
    """The file must hold what the tool says it wrote, give or take what its rings held when it
    counted (its `rings`); fewer is a failed capture, and nothing is stored or published."""
    short = written - packets
    if short > cfg.capture_tool.rings * cfg.ring_size:
        raise PcieperfError(
            f"the capture file holds {packets} records, {short} fewer than the {written} that "
            f"{cfg.capture_tool.binary} says it wrote; nothing stored"
        )


def _remove_runtime_dir(prefix: str) -> None:
    """EAL's runtime folder of the run's prefix (primary and secondaries share it)."""
    shutil.rmtree(testpmd.runtime_dir(prefix), ignore_errors=True)

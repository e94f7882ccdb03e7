"""Real DPDK runs: start `dpdk-testpmd` on virtual devices (no NIC, no hugepages), stop it
cleanly, and read back each port's packet rates and Rx burst histogram, the inputs the
forwarding model (`pcieperf.dpdk.forwarding`) needs.

testpmd runs with `--no-huge -m M --no-pci` and one `net_null` or `net_pcap` (replaying a capture
with `infinite_rx=1`) port looped back on itself, `--record-burst-stats` for the burst
histogram and `--stats-period 1` for the rates. A run lasts its `--seconds` and until two
periodic statistics blocks have arrived (the first has no rate), however slowly a busy machine
starts testpmd, up to a deadline. testpmd gets its own session and is killed when pcieperf
dies (PR_SET_PDEATHSIG with SIGKILL, which no handler can delay), is stopped with SIGINT (its
own handler prints the final statistics) after the run or on Ctrl-C, and its EAL runtime
directory is removed afterwards (or by the next run, if pcieperf was killed outright). No path
of the user's reaches a device argument: DPDK splits them at `,` and `=`
(lib/kvargs/rte_kvargs.c), so a capture is handed over as a link in a private folder.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pcieperf import interrupts, statedir
from pcieperf.errors import PcieperfError, UsageError, param, require_choice, require_positive
from pcieperf.net.trace.files import read

TESTPMD_ENV = "PCIEPERF_TESTPMD"
TESTPMD_BINARY = "dpdk-testpmd"  # Debian's dpdk-dev package ships it (22.11: /usr/bin)
MODES = ("null", "pcap")
STATS_PERIOD_S = 1
RATE_BLOCKS = 2  # periodic statistics blocks a rate needs: the first has none
# How long a run may wait for its rate past --seconds: several times longer, and at least a
# minute more. Measured on a 2-vCPU VM: testpmd's first block comes 0.7 s after the start when
# the machine is idle, 1 to 4 s when other work keeps both CPUs busy, then one every second.
DEADLINE_FACTOR = 4.0
DEADLINE_SLACK_S = 60.0
POLL_S = 0.1  # how often the run checks testpmd, the clock and its output
# Memory for the mbuf pool under --no-huge: testpmd's mbufs are 2176-byte data rooms (RTE_MBUF_
# DEFAULT_BUF_SIZE) plus the 128-byte rte_mbuf header; the default pool of 155 456 mbufs does
# not fit -m 512, so the pool is sized here.
MBUF_BYTES = 2176 + 128
BASE_MBUFS = 16384
MIN_MEMORY_MB = 512
MEMORY_HEADROOM_MB = 256  # EAL, rings and descriptor memory next to the pool
STOP_TIMEOUT_S = 20.0
COMMAND_LINE_ERROR = r"(?i)command line|invalid|unrecognized option|usage"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class RunConfig:
    """One testpmd run: `null` generates packets of `null_size` bytes, `pcap` replays a file.
    It lasts at least `seconds` and until testpmd has printed a rate."""

    mode: str = "null"
    pcap: Path | None = None
    seconds: float = 3.0
    null_size: int = 64
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require_choice("testpmd mode", self.mode, MODES)
        require_positive(param("seconds"), self.seconds)
        require_positive("null packet size", self.null_size)
        if (self.mode == "pcap") != (self.pcap is not None):
            raise UsageError("the pcap mode needs a capture file, and only it takes one")


@dataclass(frozen=True)
class BurstLine:
    """testpmd's `RX-bursts : TOTAL [p% of N pkts + ... + q% of other]` line: the number of
    burst calls and the integer percentages of the burst sizes it names (None = other)."""

    total: int
    shares: tuple[tuple[int | None, int], ...]


@dataclass
class PortStats:
    """One port's counts (final forward statistics), mean rates and byte counts (periodic
    blocks; `nic_rx_packets` is the packet count of the block `nic_rx_bytes` comes from)."""

    port: int
    rx_packets: int = 0
    tx_packets: int = 0
    nic_rx_packets: int = 0
    nic_rx_bytes: int = 0
    rx_pps_samples: list[float] = field(default_factory=list)
    tx_pps_samples: list[float] = field(default_factory=list)
    rx_bursts: BurstLine | None = None

    @property
    def rx_pps(self) -> float:
        """Mean Rx rate over the periodic blocks after the first (which has no rate)."""
        return _mean(self.rx_pps_samples[1:])

    @property
    def tx_pps(self) -> float:
        """Mean Tx rate over the periodic blocks after the first."""
        return _mean(self.tx_pps_samples[1:])


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class RunResult:
    """A finished run: what ran, testpmd's output and what it says."""

    config: RunConfig
    command: list[str]
    output: str
    wall_s: float
    interrupted: bool
    version: str
    ports: list[PortStats]

    @property
    def rx_pps(self) -> float:
        """Packets received per second over all ports (each is forwarded once)."""
        return sum(p.rx_pps for p in self.ports)

    @property
    def tx_pps(self) -> float:
        """Packets sent per second over all ports."""
        return sum(p.tx_pps for p in self.ports)

    @property
    def pkt_bytes(self) -> float:
        """Mean packet bytes as the ports counted them (no FCS); the null PMD counts no bytes,
        so its configured size."""
        packets = sum(p.nic_rx_packets for p in self.ports)
        data = sum(p.nic_rx_bytes for p in self.ports)
        return data / packets if data and packets else float(self.config.null_size)

    @property
    def batch_hist(self) -> dict[int, float]:
        """Rx burst calls per burst size, summed over ports."""
        hist: dict[int, float] = {}
        for port in self.ports:
            if port.rx_bursts:
                for size, calls in burst_histogram(port.rx_bursts, port.rx_packets).items():
                    hist[size] = hist.get(size, 0.0) + calls
        return hist


@dataclass(frozen=True)
class StoredRun:
    """A run as the store keeps it: what the forwarding model needs, and where it came from."""

    run_id: int
    mode: str
    source: str
    version: str
    rx_pps: float
    pkt_bytes: float
    batch_hist: dict[int, float]

    @property
    def pkt(self) -> int:
        """Packet bytes DMA'd per packet, whole (the model's `--pkt`)."""
        return max(1, round(self.pkt_bytes))


def burst_histogram(line: BurstLine, packets: int) -> dict[int, float]:
    """Burst calls per size from testpmd's summary line and the port's packet count.

    testpmd prints only the empty-call share, the two most frequent sizes and the rest as
    `other`, in whole percent (app/test-pmd/testpmd.c, pkt_burst_stats_display), so the empty
    share is useless when idle polls dominate (99 % of 81 M calls). The packet count is exact:
    non-empty calls are scaled so that they carry exactly `packets`, and the remaining calls are
    empty. `other` is placed at the named sizes' mean, an approximation.
    """
    named = [(size, pct) for size, pct in line.shares if size]
    other = sum(pct for size, pct in line.shares if size is None)
    if other:
        named.append((_other_size(named, other, line.total, packets), other))
    carried = sum(size * pct for size, pct in named)
    hist: dict[int, float] = {}
    if packets > 0 and carried > 0:
        for size, pct in named:
            hist[size] = hist.get(size, 0.0) + pct * packets / carried
    busy = sum(hist.values())
    hist[0] = max(float(line.total) - busy, 0.0)
    return dict(sorted(hist.items()))


def _other_size(named: list[tuple[int, int]], other: int, total: int, packets: int) -> int:
    """Where to put `other`: the named sizes' call-weighted mean; their plain mean when all
    print as 0 % (testpmd truncates); without named sizes, the packets per `other` call."""
    weight = sum(pct for _, pct in named)
    if weight:
        mean = sum(size * pct for size, pct in named) / weight
    elif named:
        mean = sum(size for size, _ in named) / len(named)
    else:
        mean = packets / (total * other / 100)
    return max(1, round(mean))


# --- parsing testpmd's output --------------------------------------------------------------------

_VERSION = re.compile(r"RTE Version: '([^']+)'")
_NIC_BLOCK = re.compile(r"NIC statistics for port ([0-9]+)")
_FWD_BLOCK = re.compile(r"Forward statistics for port ([0-9]+)")
# Blocks that are not one port's: the all-port sum, and per-stream blocks (several queues).
_OTHER_BLOCK = re.compile(r"Accumulated forward statistics|Forward Stats for RX Port")
_COUNT = re.compile(r"(RX|TX)-(packets|bytes):\s+([0-9]+)")
_PPS = re.compile(r"(Rx|Tx)-pps:\s+([0-9]+)")
_RX_BURSTS = re.compile(r"RX-bursts\s*:\s*([0-9]+)\s*\[(.*)\]")  # the model needs Rx only
_SHARE = re.compile(r"([0-9]+)% of (?:([0-9]+) pkts|(other))")


def parse_burst_line(total: str, body: str) -> BurstLine:
    """`81749901`, `99% of 0 pkts + 1% of 32 pkts` -> BurstLine."""
    shares = []
    for part in body.split("+"):
        match = _SHARE.fullmatch(part.strip())
        if not match:
            raise PcieperfError(f"testpmd burst statistics {body!r}: cannot read {part.strip()!r}")
        pct, size, _ = match.groups()
        shares.append((None if size is None else int(size), int(pct)))
    return BurstLine(int(total), tuple(shares))


class OutputReader:
    """testpmd's output read line by line as it arrives (app/test-pmd/testpmd.c:
    nic_stats_display for the periodic blocks, fwd_stats_display for the final ones), so that a
    run can tell when it has a rate."""

    def __init__(self) -> None:
        self.version = "unknown"
        self.ports: dict[int, PortStats] = {}
        # Periodic blocks every port has printed (a port counts from its first block on).
        # Written by the reading thread only; one int, so other threads read it safely.
        self.blocks = 0
        self._current: PortStats | None = None
        self._final = False

    def feed(self, raw: str) -> None:
        """Take one line of output."""
        if version := _VERSION.search(raw):
            self.version = version.group(1)
        elif _OTHER_BLOCK.search(raw):
            self._current = None
        elif block := _NIC_BLOCK.search(raw) or _FWD_BLOCK.search(raw):
            number = int(block.group(1))
            self._current = self.ports.setdefault(number, PortStats(number))
            self._final = bool(_FWD_BLOCK.search(raw))
        elif self._current is not None:
            _read_line(raw, self._current, self._final)
            self.blocks = min(
                (len(p.rx_pps_samples) for p in self.ports.values() if p.rx_pps_samples),
                default=0,
            )

    def result(self) -> tuple[str, list[PortStats]]:
        """(DPDK version, per-port statistics in port order)."""
        return self.version, [self.ports[k] for k in sorted(self.ports)]


def parse_output(text: str) -> tuple[str, list[PortStats]]:
    """(DPDK version, per-port statistics) from testpmd's whole output with --stats-period and
    --record-burst-stats."""
    reader = OutputReader()
    for raw in text.splitlines():
        reader.feed(raw)
    return reader.result()


def _read_line(raw: str, port: PortStats, final: bool) -> None:
    """One line of a statistics block into `port`."""
    for direction, what, value in _COUNT.findall(raw):
        prefix = "" if final else "nic_"
        if direction == "RX" or final:
            setattr(port, f"{prefix}{direction.lower()}_{what}", int(value))
    for direction, value in _PPS.findall(raw):
        getattr(port, f"{direction.lower()}_pps_samples").append(float(value))
    bursts = _RX_BURSTS.search(raw)
    if bursts and final:
        port.rx_bursts = parse_burst_line(bursts.group(1), bursts.group(2))


# --- running it ------------------------------------------------------------------------------


def find_testpmd() -> str:
    """The testpmd binary: $PCIEPERF_TESTPMD, else dpdk-testpmd on PATH."""
    return find_binary(TESTPMD_BINARY, TESTPMD_ENV)


def find_binary(name: str, env: str) -> str:
    """A DPDK program: $`env` if set, else `name` on PATH; missing, one line saying how to get
    it (Debian's dpdk-dev ships testpmd, dumpcap and pdump)."""
    binary = os.environ.get(env) or shutil.which(name)
    if not binary or not os.access(binary, os.X_OK):
        raise UsageError(
            f"{name} not found; install Debian's dpdk-dev (`apt-get install "
            f"--no-install-recommends dpdk-dev`) or set {env} to the binary"
        )
    return binary


def _lcores() -> str:
    """A main and a forwarding lcore: the first two CPUs we may run on."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise UsageError(
            f"testpmd needs two CPUs (a main and a forwarding lcore); only CPU {cpus[0]} is "
            "available to this process"
        )
    return f"{cpus[0]},{cpus[1]}"


def pool(cfg: RunConfig) -> tuple[int, int]:
    """(mbufs, -m megabytes): infinite_rx preloads every packet of the capture into mbufs."""
    mbufs = BASE_MBUFS
    if cfg.pcap is not None:
        mbufs += len(read(cfg.pcap).ts_ns)
    memory = math.ceil(mbufs * MBUF_BYTES / 2**20) + MEMORY_HEADROOM_MB
    return mbufs, max(MIN_MEMORY_MB, memory)


def testpmd_command(cfg: RunConfig, binary: str, prefix: str, links: Path) -> list[str]:
    """The full command line: EAL options, one looped virtual port (its capture through a
    link in `links`), then the user's args."""
    mbufs, memory = pool(cfg)
    eal = ["-v", "--no-huge", "-m", str(memory), "--no-pci", f"--file-prefix={prefix}"]
    return [
        binary,
        *eal,
        "-l",
        _lcores(),
        f"--vdev={vdev(cfg.mode, cfg.pcap, cfg.null_size, links)}",
        "--",
        *app_args(mbufs),
        *cfg.extra_args,
    ]


def vdev(mode: str, pcap: Path | None, null_size: int, links: Path) -> str:
    """The one virtual port: net_pcap replaying `pcap` forever (through a link in `links`), or
    net_null packets."""
    if mode == "pcap":
        assert pcap is not None  # the pcap mode is chosen by giving a file
        return f"net_pcap0,rx_pcap={devarg_path(pcap, links, 'in')},infinite_rx=1"
    return f"net_null0,size={null_size}"


LINKS = "links-"  # the private folders of device-argument links: links-PID-RANDOM
SEPARATORS = ",=[];"  # rte_kvargs splits at , and =, and reads [..] as a list


def link_folder() -> Path:
    """A private folder (`statedir`) for this run's device-argument links, after removing
    those that pcieperf processes now gone left."""
    statedir.remove_stale(LINKS)
    return statedir.private_folder(f"{LINKS}{os.getpid()}-")


def devarg_path(path: Path, links: Path, name: str, limit: int = 4096) -> str:
    """A name for `path` that is safe inside a device argument: a link `name` in the private
    folder `links`; refused in one line if even that is longer than `limit` bytes."""
    link = links / name
    link.symlink_to(Path(path).absolute())
    text = str(link)
    if len(text.encode()) > limit or any(c in SEPARATORS for c in text):
        raise UsageError(
            f"the private folder {links} makes a device argument of {len(text.encode())} bytes, "
            f"more than DPDK's {limit}, or with one of {SEPARATORS!r}; set XDG_RUNTIME_DIR "
            "to a short folder"
        )
    return text


def app_args(mbufs: int) -> list[str]:
    """The testpmd options of a measured run: the port looped on itself, statistics every
    period with burst statistics, and the mbuf pool size."""
    return [
        "--no-flush-rx",  # else testpmd drains a pcap port completely before forwarding
        "--record-burst-stats",
        f"--stats-period={STATS_PERIOD_S}",
        f"--total-num-mbufs={mbufs}",
        "--port-topology=loop",
    ]


def die_with_parent() -> Callable[[], None]:
    """What the child runs before exec: SIGINT back to its default (pcieperf run as a background
    job of a script has it ignored, and testpmd would then ignore the SIGINT that stops it),
    ask for SIGKILL when pcieperf dies, so testpmd never outlives it (SIGINT is not enough: a
    testpmd stuck in its own SIGINT handler under load ignores every other signal), and exit
    if pcieperf is already gone. The libc functions are looked up here, in the parent: between
    fork and exec the child may only call them (no dlopen, no allocation)."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl, set_handler = libc.prctl, libc.signal
    set_handler.argtypes = (ctypes.c_int, ctypes.c_void_p)
    set_handler.restype = ctypes.c_void_p
    parent = os.getpid()

    def arm() -> None:
        set_handler(signal.SIGINT, None)  # None is SIG_DFL, the null handler
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def launch(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a DPDK process whose output (stdout and stderr, as text) pcieperf reads: in a
    session of its own, so that Ctrl-C reaches pcieperf only and pcieperf stops it, and set
    to die with pcieperf."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=env,
        start_new_session=True,
        preexec_fn=die_with_parent(),  # prctl must run in the child
    )


def runtime_dir(prefix: str) -> Path:
    """Where EAL keeps a prefix's runtime files (lib/eal/linux eal_create_runtime_dir)."""
    if os.geteuid() == 0:
        base = Path("/var/run")
    else:
        base = Path(os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    return base / "dpdk" / prefix


RUN_PREFIX = "pcieperf-"  # EAL file prefix of a `dpdk run`: RUN_PREFIX + pid + '-' + ns


def remove_stale_runtime_dirs(prefix: str) -> None:
    """Remove EAL's runtime folders that runs of `prefix` left when pcieperf was killed outright
    (its process id, in the folder's name, is gone)."""
    for found in runtime_dir(prefix).parent.glob(f"{prefix}*-*"):
        pid = found.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and statedir.Process.of(int(pid)) is None:
            shutil.rmtree(found, ignore_errors=True)


def deadline_s(seconds: float) -> float:
    """When a run that still has no rate gives up, in seconds from its start."""
    return max(DEADLINE_FACTOR * seconds, seconds + DEADLINE_SLACK_S)


def run(cfg: RunConfig, tick: Callable[[float, int], None] | None = None) -> RunResult:
    """Run testpmd until `cfg.seconds` have passed and it has printed a rate (or until Ctrl-C)
    and return what it measured; `tick` gets the seconds elapsed and the statistics blocks
    printed so far, for a progress bar."""
    binary = find_testpmd()
    remove_stale_runtime_dirs(RUN_PREFIX)
    prefix = f"{RUN_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    links = link_folder()
    try:
        command = testpmd_command(cfg, binary, prefix, links)
        return _run(cfg, command, prefix, tick)
    finally:
        statedir.remove_private_folder(links)


def _run(
    cfg: RunConfig, command: list[str], prefix: str, tick: Callable[[float, int], None] | None
) -> RunResult:
    """`run` once its command line is made."""
    lines: list[str] = []
    parsed = OutputReader()
    start = time.monotonic()
    with launch(command) as proc:
        reader = threading.Thread(target=_read, args=(proc.stdout, lines, parsed), daemon=True)
        reader.start()
        try:
            with interrupts.stop_as_interrupt():
                stopped_by = _wait(proc, cfg.seconds, start, parsed, tick)
        finally:
            with interrupts.signals_held():
                stop(proc)
                reader.join(timeout=STOP_TIMEOUT_S)
                shutil.rmtree(runtime_dir(prefix), ignore_errors=True)
    output = "".join(lines)
    wall = time.monotonic() - start
    if stopped_by is not None and parsed.blocks < RATE_BLOCKS:
        raise stopped_by  # nothing to keep: an interruption, wherever it landed
    interrupted = stopped_by is not None
    if proc.returncode not in (0, -signal.SIGINT) and not interrupted:
        reason = cause(output)
        # testpmd's own argument checks (launch_args_parse, EAL) end in these words.
        failure = UsageError if re.search(COMMAND_LINE_ERROR, reason) else PcieperfError
        raise failure(f"testpmd failed (exit {proc.returncode}): {reason}")
    version, ports = parsed.result()
    _check(ports, parsed.blocks, output)
    return RunResult(cfg, command, output, wall, interrupted, version, ports)


def _read(stream: Iterable[str], lines: list[str], parsed: OutputReader) -> None:
    """The reading thread: keep every line of testpmd's output and parse it as it comes."""
    for line in stream:
        lines.append(line)
        parsed.feed(line)


def _wait(
    proc: subprocess.Popen,
    seconds: float,
    start: float,
    parsed: OutputReader,
    tick: Callable[[float, int], None] | None,
) -> KeyboardInterrupt | None:
    """Wait until `seconds` have passed and testpmd has printed a rate; the interruption
    (Ctrl-C, SIGTERM, SIGHUP) that cut it short, if one did. testpmd exiting by itself ends the
    wait (what it printed is judged afterwards); no rate by the deadline is an error."""
    deadline = deadline_s(seconds)
    try:
        while (elapsed := time.monotonic() - start) < seconds or parsed.blocks < RATE_BLOCKS:
            if elapsed >= deadline:
                raise PcieperfError(
                    f"no rate after {deadline:g} s: testpmd printed {_blocks(parsed.blocks)} "
                    f"and a rate needs {RATE_BLOCKS} (the first has none); the machine may be "
                    "too busy, or testpmd stuck starting"
                )
            if tick:
                tick(elapsed, parsed.blocks)
            try:
                proc.wait(timeout=POLL_S)
                return None
            except subprocess.TimeoutExpired:
                pass
    except KeyboardInterrupt as stopped:
        return stopped
    return None


def _blocks(count: int) -> str:
    """`1 statistics block`, `0 statistics blocks`."""
    return f"{count} statistics block{'' if count == 1 else 's'}"


def stop(proc: subprocess.Popen) -> None:
    """SIGINT (testpmd prints its final statistics and exits), then SIGKILL if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cause(output: str) -> str:
    """The reason testpmd gives for failing (its `Cause:` line), else its last line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    causes = [ln for ln in lines if ln.startswith("Cause:") or "EAL: FATAL" in ln]
    return (causes or lines or ["no output"])[-1]


def _check(ports: list[PortStats], blocks: int, output: str) -> None:
    """A run must have a rate (two periodic blocks for every port) and burst statistics."""
    if blocks < RATE_BLOCKS:
        raise PcieperfError(
            f"testpmd exited after {_blocks(blocks)}; a rate needs {RATE_BLOCKS}, "
            f"{STATS_PERIOD_S} s apart (the first has none); nothing stored"
        )
    if not any(p.rx_bursts for p in ports):
        raise PcieperfError(
            "testpmd printed no per-port burst statistics (runs with several queues per port "
            f"print them per stream, which is not read): {cause(output)}"
        )

"""CPU time per thread and write calls per process, from /proc: on a shared machine a thread
gets a varying share of a CPU, so a capture run compares the CPU time each thread received per
packet, not wall-clock rates (proc(5): /proc/PID/task/TID/schedstat, /proc/PID/io)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# How DPDK names the threads of its worker lcores: "rte-worker-N" in 22.11 (lib/eal/linux/eal.c,
# rte_eal_init), "lcore-worker-N" before it, "dpdk-worker<N>" from 23.11 on.
WORKER_PREFIXES = ("rte-worker-", "lcore-worker-", "dpdk-worker")
CACHE_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}  # sysfs cache `size`, e.g. "32768K"


@dataclass(frozen=True)
class IoCounts:
    """A process's write(2)-family calls and the bytes they passed (proc(5) `syscw`, `wchar`:
    bytes given to the calls, so writes to /dev/null count too)."""

    calls: int
    bytes: int


def worker_threads(pid: int) -> list[int]:
    """The thread ids of a DPDK process's worker lcores (its forwarding threads)."""
    found = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            name = (task / "comm").read_text().strip()
        except OSError:  # the thread ended while we looked
            continue
        if name.startswith(WORKER_PREFIXES):
            found.append(int(task.name))
    return found


def cpu_ns(pid: int, tids: list[int] | None = None) -> int:
    """CPU ns the threads `tids` of `pid` have run (schedstat's first field), or the main
    thread's alone when `tids` is None (it is readable until the exited process is reaped)."""
    if tids is None:
        return _schedstat(Path(f"/proc/{pid}/schedstat"))
    return sum(_schedstat(Path(f"/proc/{pid}/task/{tid}/schedstat")) for tid in tids)


def _schedstat(path: Path) -> int:
    """The run time in ns of one schedstat file; 0 for a thread that is gone."""
    return (_schedstat_fields(path) or [0])[0]


def _schedstat_fields(path: Path) -> list[int]:
    """A schedstat file's fields (ns run, ns waited on a run queue, timeslices run); none for a
    thread that is gone."""
    try:
        return [int(v) for v in path.read_text().split()]
    except (OSError, ValueError):
        return []


@dataclass(frozen=True)
class Waits:
    """The ns the main thread of a process waited on a run queue (runnable, not running) and
    the timeslices it ran, so far (schedstat's second and third fields): their quotient is its
    mean wait for a CPU each time it woke or was preempted."""

    ns: int
    timeslices: int


def waits(pid: int) -> Waits:
    """The main thread of `pid`'s waits for a CPU so far (zeros once it is gone)."""
    fields = _schedstat_fields(Path(f"/proc/{pid}/schedstat"))
    return Waits(*fields[1:3]) if len(fields) >= 3 else Waits(0, 0)


def sleeps(pid: int) -> int:
    """Times the main thread of `pid` gave up its CPU by itself so far (proc(5) status
    `voluntary_ctxt_switches`: a sleep or a blocking call); 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^voluntary_ctxt_switches:\s*([0-9]+)", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


PROC_STAT = Path("/proc/stat")
STEAL_FIELD = 8  # of the "cpu" line: user nice system idle iowait irq softirq steal (proc(5))


def steal_ns(stat: Path = PROC_STAT) -> int:
    """The time the hypervisor ran something else while this machine's CPUs wanted to run
    (proc(5) /proc/stat `steal`, all CPUs, in ns); 0 where the kernel does not count it."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
        return int(fields[STEAL_FIELD]) * 10**9 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


def run_queue(stat: Path = PROC_STAT) -> int:
    """Threads running or waiting for a CPU now, machine-wide, less the one reading (proc(5)
    /proc/stat `procs_running`); -1 where the kernel does not say."""
    for line in _lines(stat):
        if line.startswith("procs_running "):
            return int(line.split()[1]) - 1
    return -1


def _lines(path: Path) -> list[str]:
    """The lines of a /proc file (none where it cannot be read)."""
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


CPU0_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def llc_bytes(caches: Path = CPU0_CACHES) -> int | None:
    """The size of the host's last-level cache as CPU 0 sees it (sysfs cache/indexN of the
    highest level), None where sysfs does not say."""
    found: dict[int, int] = {}
    for index in caches.glob("index*"):
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if size[:-1].isdigit() and size[-1] in CACHE_UNITS:
            found[level] = max(found.get(level, 0), int(size[:-1]) * CACHE_UNITS[size[-1]])
    return found[max(found)] if found else None


def io_counts(pid: int) -> IoCounts:
    """Write calls and bytes of process `pid` so far."""
    fields = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return IoCounts(int(fields["syscw"]), int(fields["wchar"]))

"""CPU time per thread and write calls per process, from /proc: on a shared machine a thread
gets a varying share of a CPU, so a capture run compares the CPU time each thread received per
packet, not wall-clock rates (proc(5): /proc/PID/task/TID/schedstat, /proc/PID/io)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# How DPDK names the threads of its worker lcores: "rte-worker-N" in 22.11 (lib/eal/linux/eal.c,
# rte_eal_init), "lcore-worker-N" before it, "dpdk-worker<N>" from 23.11 on.
WORKER_PREFIXES = ("rte-worker-", "lcore-worker-", "dpdk-worker")


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
    try:
        return int(path.read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return 0


def io_counts(pid: int) -> IoCounts:
    """Write calls and bytes of process `pid` so far."""
    fields = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return IoCounts(int(fields["syscw"]), int(fields["wchar"]))

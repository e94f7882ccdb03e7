"""Commands run as a terminal runs them and stopped mid-work as a user stops them: each in a
process group of its own (job control), with SIGINT, SIGTERM and SIGHUP at their defaults
(the test runner may have them ignored or blocked, and both are inherited; a shell starting a
job in the background of a non-interactive shell ignores SIGINT, as POSIX has it, which is not
what a terminal's Ctrl-C reaches), the signal sent to the whole group. "Mid-work" is a
condition the caller names (a part file grown, CPU used), waited for with a generous
deadline, never a fixed sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

WAIT_S = 120.0  # generous: a loaded 2-core CI machine
STOP_S = 2.0  # the bound: a command stops within 2 s of the signal
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _as_from_a_terminal() -> None:
    for sig in STOPPING:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def start(argv: Sequence[str], cwd: Path, **kw: object) -> subprocess.Popen:
    """`pcieperf ARGV` in `cwd`, as a terminal's foreground job: a process group of its own,
    the stopping signals at their defaults; stderr captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", *argv],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
        **kw,  # type: ignore[arg-type]  # Popen's own keywords
    )


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process's threads have used, in ms (0 once it is gone)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime: proc(5)
    except OSError:
        return 0.0
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def wait_for(proc: subprocess.Popen, condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition()` holds while `proc` runs; fail naming `what` if it ends first
    or the deadline passes."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert proc.poll() is None, f"it ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(0.01)


def stop(proc: subprocess.Popen, sig: int, still_mid_work: Callable[[], bool]) -> tuple[float, str]:
    """Freeze `proc`'s group, check it is still mid-work, send `sig` to the group and let it
    go on; returns the seconds from the signal to its exit and what it wrote on stderr."""
    os.killpg(proc.pid, signal.SIGSTOP)
    try:
        assert still_mid_work(), "the work ended before the signal"
        sent = time.monotonic()
        os.killpg(proc.pid, sig)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    try:
        _, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return time.monotonic() - sent, err


def leftovers(folder: Path, keep: Sequence[str]) -> list[str]:
    """Everything in `folder` (hidden names included) but `keep`."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)

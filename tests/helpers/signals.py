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
from contextlib import suppress
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
    the stopping signals at their defaults; stderr captured (bytes, as every pipe)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", *argv],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
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


def read_mb(pid: int) -> float:
    """MB the process has read so far (read(2) and the like, from any file: proc(5) rchar)."""
    try:
        with open(f"/proc/{pid}/io") as fh:
            fields = dict(line.split(": ") for line in fh.read().splitlines())
    except OSError:
        return 0.0
    return int(fields["rchar"]) / 1e6


def temporary_bytes(folder: Path, output: str) -> int:
    """Bytes in the temporaries of `output` in `folder` (`.OUTPUT.pcieperf-PID-RANDOM.part`,
    files or folders) and, for a folder `output`, in it (a sweep's parts)."""
    found = [*folder.glob(f".{output}.pcieperf-*.part"), folder / output]
    total = 0
    for path in found:
        with suppress(FileNotFoundError):  # published, renamed or removed meanwhile
            files = path.rglob("*") if path.is_dir() else [path] if path.exists() else []
            total += sum(f.stat().st_size for f in files if f.is_file())
    return total


def synth_captures(folder: Path) -> tuple[Path, Path]:
    """Two captures of 2 M 64-byte frames each (152 MB apiece), interleaved in time."""
    paths = []
    for k, pps in enumerate(("10M", "9M")):
        path = folder / f"in{k}.pcap"
        argv = ["trace", "synth", "--sizes", "64", "--pps", pps, "--duration", "220ms"]
        done = subprocess.run(
            [sys.executable, "-m", "pcieperf.cli", *argv, "-o", str(path), "-q"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        paths.append(path)
    return paths[0], paths[1]


def wait_for(proc: subprocess.Popen, condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition()` holds while `proc` runs; fail naming `what` if it ends first
    or the deadline passes."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert proc.poll() is None, f"it ended before {what}: {proc.stderr.read().decode()}"
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(0.01)


def stop(proc: subprocess.Popen, sig: int, still_mid_work: Callable[[], bool]) -> tuple[float, str]:
    """Freeze `proc`'s group, check it is still mid-work, send `sig` to the group and let it
    go on; returns the seconds from the signal to its exit and what it wrote on stderr.
    A pipe to its standard input is closed once it has exited."""
    os.killpg(proc.pid, signal.SIGSTOP)
    try:
        assert still_mid_work(), "the work ended before the signal"
        sent = time.monotonic()
        os.killpg(proc.pid, sig)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    try:
        proc.wait(timeout=WAIT_S)
        exited = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with proc.stderr:
        err = proc.stderr.read().decode()
    if proc.stdin:
        with suppress(BrokenPipeError):
            proc.stdin.close()
    return exited, err


def leftovers(folder: Path, keep: Sequence[str]) -> list[str]:
    """Everything in `folder` (hidden names included) but `keep`."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)

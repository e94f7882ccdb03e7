"""One capture run at a time on a machine. Two at once would take each other's hugepages (each
reserves what it sees missing and puts back the count it found) and each other's CPUs. The
lock is flock(2) on a file in pcieperf's state folder (`pcieperf.statedir`: root's
/run/pcieperf, which no other user can open); its holder writes who it is beside it, so that a
run that has to wait says for whom, and gives up after `wait_s` seconds."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from pcieperf import statedir
from pcieperf.errors import PcieperfError, UsageError, param

LOCK = "capture.lock"
HOLDER = "capture.holder"  # who holds the lock: {"pid", "start", "since", "command"}
POLL_S = 0.1
WAIT_S = 3600.0  # `--wait`'s default: a calibration's runs take minutes, not hours


def check_wait(wait_s: float) -> None:
    """`wait_s` must be a number of seconds from 0 (do not wait) on."""
    if not (isinstance(wait_s, int | float) and 0 <= wait_s < float("inf")):
        raise UsageError(f"{param('wait')} {wait_s!r} is not allowed; give seconds from 0 on")


@contextmanager
def machine_lock(wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the machine's capture lock for the block; wait up to `wait_s` seconds for a run
    that holds it, saying once (on stderr, as the store does) whom it waits for; one line if
    it is still held then."""
    fd = statedir.open_file(LOCK, os.O_RDWR | os.O_CREAT)
    try:
        _acquire(fd, wait_s)
        statedir.write_text(HOLDER, json.dumps(_me()))
        try:
            yield
        finally:
            statedir.remove(HOLDER)
    finally:
        os.close(fd)  # releases the lock


def _acquire(fd: int, wait_s: float) -> None:
    """Take the lock without blocking (flock), again every POLL_S until `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    told = False
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            raise PcieperfError(
                f"{holder_text()} still holds the machine's capture lock after {wait_s:g} s; "
                f"wait for it, or give {param('wait')} SECONDS"
            )
        if not told:
            print(f"pcieperf: waiting for {holder_text()} (at most {wait_s:g} s)", file=sys.stderr)
            told = True
        time.sleep(POLL_S)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


def _me() -> dict:
    """The holder (this process), as a waiting run describes it."""
    me = statedir.Process.of(os.getpid())
    return {
        "pid": os.getpid(),
        "start": me.start if me else 0,
        "since": datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["pcieperf", *sys.argv[1:]])[:200],
    }


def holder_text() -> str:
    """Who holds the lock, in words (what its holder wrote; 'another capture run' if nothing)."""
    try:
        holder = json.loads(statedir.read_text(HOLDER) or "{}")
        pid, command, since = holder["pid"], holder["command"], holder["since"]
        return f"the capture run of process {pid} ({command}, since {since})"
    except (ValueError, KeyError, TypeError, PcieperfError):
        return "another capture run"

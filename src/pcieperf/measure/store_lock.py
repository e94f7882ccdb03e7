"""Opening the store while another process has it: DuckDB lets one process open a file at a
time, so a command waits for its turn (saying who holds the file) instead of failing with
DuckDB's raw lock message, and after PCIEPERF_STORE_WAIT_S seconds fails in one line naming the
holder."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import duckdb

from pcieperf.errors import UsageError, is_number

STORE_WAIT_S = 120.0  # how long a command waits for another one's store; PCIEPERF_STORE_WAIT_S
LOCK_HELD = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")  # DuckDB's words


def connect(target: str | Path) -> duckdb.DuckDBPyConnection:
    """Connect to the store file, waiting while another process holds it (DuckDB lets one
    process open a file at a time): a line says who holds it, then one line says who kept it
    past the wait (PCIEPERF_STORE_WAIT_S seconds, default STORE_WAIT_S)."""
    wait_s = _wait_seconds()
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            return duckdb.connect(str(target))
        except duckdb.IOException as exc:
            held = LOCK_HELD.search(str(exc))
            if held is None:
                raise
            holder = f"process {held[2]} ({_command_of(int(held[2])) or held[1]})"
            if time.monotonic() >= deadline:
                raise UsageError(
                    f"the store {target} is in use by {holder}; waited {wait_s:g} s "
                    "(PCIEPERF_STORE_WAIT_S sets how long)"
                ) from None
            if not said:
                print(
                    f"pcieperf: waiting for the store {target}, in use by {holder}", file=sys.stderr
                )
                said = True
            time.sleep(0.1)


def _wait_seconds() -> float:
    raw = os.environ.get("PCIEPERF_STORE_WAIT_S", "")
    try:
        value = float(raw) if raw else STORE_WAIT_S
    except ValueError:
        value = -1.0
    if not is_number(value, 0):
        raise UsageError(f"PCIEPERF_STORE_WAIT_S={raw!r} is not allowed; give seconds >= 0")
    return value


def _command_of(pid: int) -> str:
    """A process's command line, for saying who holds the store ('' when unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(raw.decode(errors="replace").replace("\0", " ").split())[:120]

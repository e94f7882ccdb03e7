"""A process that holds something (a lock, a store, a CPU) until the test lets it go: what
the lock and store tests share."""

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

WAIT_S = 300.0  # a generous deadline on a loaded 2-core machine


@contextmanager
def holding(code: str, *args: str, ready: str) -> Iterator[subprocess.Popen]:
    """Python `code` run with `args` in a child; yielded once it has printed `ready` (it then
    holds what it took), told to let go (a line on its stdin) at the end if still running."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == f"{ready}\n"
        yield proc
    finally:
        proc.communicate("" if proc.poll() is not None else "\n", timeout=WAIT_S)

"""Stopping on a signal the way Ctrl-C stops: SIGTERM (`timeout`, `kill`) and SIGHUP (a closed
terminal) raise the same KeyboardInterrupt inside the work, so every cleanup that Ctrl-C runs
(temporaries, child processes, mounts) runs for them too, and the CLI exits 128 + the signal's
number, as a shell reports a process killed by it."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOPPING = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The work was stopped by `signum`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal that stopped the work (SIGINT for a plain Ctrl-C)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


@contextmanager
def stop_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Stopped` in the main thread (elsewhere
    Python cannot take signals: the block runs unchanged). A signal ignored when pcieperf
    started stays ignored (`nohup pcieperf ...` must survive its terminal closing), as Python
    itself leaves an ignored SIGINT alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    caught = [sig for sig in STOPPING if signal.getsignal(sig) is not signal.SIG_IGN]
    before = {sig: signal.signal(sig, stop) for sig in caught}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """While a cleanup runs, Ctrl-C, SIGTERM and SIGHUP are ignored: a second one must not cut
    the cleanup short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = (signal.SIGINT, *STOPPING)
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in held}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)

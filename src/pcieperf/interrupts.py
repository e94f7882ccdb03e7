"""Stopping on a signal the way Ctrl-C stops: SIGTERM (`timeout`, `kill`) and SIGHUP (a closed
terminal) raise the same KeyboardInterrupt inside the work, so every cleanup that Ctrl-C runs
(temporaries, child processes, mounts) runs for them too, and the CLI exits 128 + the signal's
number, as a shell reports a process killed by it. A terminal sends its signals to every
process of the job: helper processes started under `kept_from_children` ignore them, and this
process stops them (pcieperf.engine's Dask workers)."""

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
def kept_from_children() -> Iterator[None]:
    """Processes started within the block ignore Ctrl-C, SIGTERM and SIGHUP (an ignored
    signal stays ignored across exec), so that a terminal's signal, sent to the whole job,
    reaches this process alone, which then stops them (no traceback of theirs, no half-done
    work of theirs racing its cleanup). A signal that arrives meanwhile is held, not lost:
    this thread blocks them for the block (a blocked signal is never ignored: Linux keeps it
    pending), and acts on it after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = (signal.SIGINT, *STOPPING)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, kept)
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in kept}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


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

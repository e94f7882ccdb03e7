"""Stopping on a signal the way Ctrl-C stops: SIGTERM (`timeout`, `kill`) and SIGHUP (a closed
terminal) raise the same KeyboardInterrupt inside the work, so every cleanup that Ctrl-C runs
(temporaries, child processes, mounts) runs for them too, and the CLI exits 128 + the signal's
number, as a shell reports a process killed by it. A terminal sends its signals to every
process of the job: helper processes started under `kept_from_children` ignore them, and this
process stops them (pcieperf.engine's Dask workers)."""

from __future__ import annotations

import builtins
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

STOPPING = (signal.SIGTERM, signal.SIGHUP)
_SWALLOWED: list[KeyboardInterrupt] = []  # interruptions Python could only print


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
    Python cannot take signals: the block runs unchanged), and Ctrl-C KeyboardInterrupt as
    before. One that arrives while a module is being imported is held until the import is
    done (raised inside it, it could leave a C extension half made: numpy.random's modules
    swallowed it, DuckDB's aborted the process). An exception that ends the block after one
    of them arrived is that interruption (a library that caught it turned it into its own
    error: DuckDB's "Query interrupted"). A signal ignored when pcieperf started stays
    ignored (`nohup pcieperf ...` must survive its terminal closing), as Python itself leaves
    an ignored SIGINT alone; a SIGINT handler other than Python's own is left as it is. One
    raised where Python can only print it (a weakref callback, a `__del__`) is not lost: the
    block ends with it, and `raise_if_stopped` (called before anything is published) raises
    it at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    imports = _Imports()

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        if not imports.running:
            raise _interruption(signum)
        imports.held.append(signum)

    caught = [sig for sig in STOPPING if signal.getsignal(sig) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        caught.append(signal.SIGINT)
    before = {sig: signal.signal(sig, stop) for sig in caught}
    builtins.__import__ = imports.wrap(builtins.__import__)
    unraisable = sys.unraisablehook
    sys.unraisablehook = _keeping_interruptions(unraisable)
    try:
        yield
        raise_if_stopped()
    except Exception as exc:
        if received:
            raise _interruption(received[0]) from exc
        raise
    finally:
        sys.unraisablehook = unraisable
        builtins.__import__ = imports.original
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _SWALLOWED.clear()


def raise_if_stopped() -> None:
    """Raise an interruption that Python swallowed (raised in a weakref callback or a
    `__del__`, it can only be printed): call it before a result becomes visible."""
    if _SWALLOWED and threading.current_thread() is threading.main_thread():
        raise _SWALLOWED[0]


def _keeping_interruptions(previous: Callable[[Any], object]) -> Callable[[Any], None]:
    """A `sys.unraisablehook` that keeps an interruption Python could not raise for
    `raise_if_stopped`, instead of printing it, and hands everything else to `previous`."""

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _SWALLOWED.append(unraisable.exc_value)
        else:
            previous(unraisable)

    return hook


class _Imports:
    """`__import__` that counts the imports the main thread is running (the thread signal
    handlers run in) and, when the last one ends, raises the interruption of a signal held
    meanwhile."""

    def __init__(self) -> None:
        self.running = 0
        self.held: list[int] = []
        self.original: Callable[..., ModuleType] = builtins.__import__

    def wrap(self, original: Callable[..., ModuleType]) -> Callable[..., ModuleType]:
        self.original = original
        main = threading.main_thread().ident

        def counted(*args: Any, **kwargs: Any) -> ModuleType:
            if threading.get_ident() != main:
                return original(*args, **kwargs)
            self.running += 1
            try:
                return original(*args, **kwargs)
            finally:
                self.running -= 1
                if not self.running and self.held:
                    signum, self.held = self.held[0], []
                    raise _interruption(signum)

        return counted


def _interruption(signum: int) -> KeyboardInterrupt:
    """What a signal raises: `Stopped` for SIGTERM and SIGHUP, KeyboardInterrupt for Ctrl-C."""
    return Stopped(signum) if signum in STOPPING else KeyboardInterrupt()


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
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, *STOPPING))
    try:
        with signals_held():  # ignored: what the children inherit
            yield
    finally:
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

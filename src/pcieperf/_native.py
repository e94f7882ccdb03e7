"""The only way into the Rust extension `pcieperf._core`, and the one place that turns its errors
into pcieperf exceptions (errors.py).

The glue raises one of three exception classes, chosen by the core error's kind
(rust/core/src/error.rs `ErrorKind`): `_core.ParameterError` (a value the core does not accept)
becomes a UsageError, `_core.FileError` (a capture file it cannot read or write) a
TraceFileError, and `_core.Error` itself (the caller broke the core's contract: a bug) an
InternalError. Functions of `core()` arrive mapped; `call` maps a method of a core object, and
`checked` an error that a function returns in a per-file list instead of raising.

Parameters go in as dicts whose entries the core's own structs read by field name (`SimParams`,
`PortConfig`, `StatsConfig`, ...: rust/core/src/py.rs); a missing or mistyped entry, or an
unknown name of an enumeration, is a ParameterError in one line naming the field.
"""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pcieperf.errors import (
    CaptureNotFoundError,
    InternalError,
    PcieperfError,
    TraceFileError,
    UsageError,
)


@functools.cache
def _module() -> ModuleType:
    """`pcieperf._core`, or an error saying how to build it."""
    try:
        from pcieperf import _core
    except ImportError as exc:  # pragma: no cover - only without a build
        raise PcieperfError(
            "the Rust extension pcieperf._core is missing; install the package with "
            "`python3 -m pip install .` (needs a Rust toolchain)"
        ) from exc
    return _core


def _mapped(exc: Exception) -> Exception:
    """The pcieperf exception for an exception the core raised (a `_core.Error`)."""
    native = _module()
    if isinstance(exc, native.FileError):  # ENOENT's text (Rust's io::Error) names it missing
        missing = str(exc).endswith(f"(os error {errno.ENOENT})")
        return (CaptureNotFoundError if missing else TraceFileError)(str(exc))
    if isinstance(exc, native.ParameterError):
        return UsageError(str(exc))
    return InternalError(str(exc))


def call(func: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """`func(*args, **kwargs)` for a function or method of the core, its error mapped."""
    try:
        return func(*args, **kwargs)
    except _module().Error as exc:
        raise _mapped(exc) from None


def checked(item: object) -> Any:
    """`item` from a list a core function returned per file, or, where the core put a file's
    error (the exception, not raised) in its place, that error mapped and raised."""
    if isinstance(item, _module().Error):
        raise _mapped(item)
    return item


class _Core:
    """`pcieperf._core` whose functions (and class constructors) raise mapped errors."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not callable(value):
            return value
        wrapped = functools.wraps(value)(functools.partial(call, value))
        setattr(self, name, wrapped)  # built once per name
        return wrapped


def stop_work() -> None:
    """Ask the core's work in flight, in any thread, to stop at its next check (a signal
    stopped the command; work in other threads than the one that took it must end too)."""
    if "pcieperf._core" in sys.modules:  # nothing runs in a core that was never loaded
        _module().request_stop()


@functools.cache
def core() -> Any:
    """`pcieperf._core` with its errors mapped to pcieperf exceptions, or explain how to build
    it."""
    return _Core(_module())

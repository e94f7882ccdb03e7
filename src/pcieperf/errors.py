"""The pcieperf exception tree: every exception pcieperf defines lives here. Library code raises
these and never prints or exits; the CLI maps them to exit codes in one place (cli.main).

PcieperfError              anything pcieperf reports on purpose (CLI exit code 1)
└── UsageError             the user gave a bad value, option or file (CLI exit code 2); also a
    │                      ValueError, so that `except ValueError` around parsing catches it
    ├── ProfileError       a TOML file (profile, calibration, platform, sweep spec) is
    │                      unreadable as TOML or malformed: names file and key
    ├── TraceFileError     a capture file is missing, unreadable or damaged: names the file and
    │   │                  the byte offset
    │   └── CaptureNotFoundError   a capture file that does not exist (a FileNotFoundError too)
    ├── InputNotFoundError another input file that does not exist (a FileNotFoundError too)
    └── CounterFileError   a counter export is truncated or foreign: names the file and line

InternalError              pcieperf broke a rule of its own (a bug, so no PcieperfError: the CLI
                           says "internal error", exit code 1, and fuzzing counts it a crash)

PcieperfWarning            (a UserWarning) something odd but usable (a rate above what the link
                           carries, …): library code warns, the CLI prints it as one line

Errors of the Rust core (`pcieperf._core`) become these classes in `pcieperf._native` only.
A message names a parameter with `param(name)`: the library shows the parameter's name, the CLI
its flag (cli.main translates, in one place), so the library never speaks in flags.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable
from os import PathLike
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


_PARAM = "\x1f"  # ASCII unit separator: brackets a parameter's name inside a message


def param(name: str) -> str:
    """A parameter named inside a message: shown as `name` by the library and as its flag by
    the CLI (`worded`), so one message serves both."""
    return f"{_PARAM}{name}{_PARAM}"


class Worded:
    """A message whose parameters (`param`) are shown in the reader's words."""

    args: tuple[object, ...]

    def worded(self, word: Callable[[str], str]) -> str:
        """The message with each parameter's name replaced by `word(name)`."""
        parts = super().__str__().split(_PARAM)
        parts[1::2] = [word(name) for name in parts[1::2]]
        return "".join(parts)

    def __str__(self) -> str:
        return self.worded(lambda name: f"`{name}`")


class PcieperfError(Worded, Exception):
    """Base of every error pcieperf raises deliberately."""


class UsageError(PcieperfError, ValueError):
    """A value the user supplied is not allowed; the message names it and what is allowed."""


class ProfileError(UsageError):
    """A TOML file (profile, calibration, platform, sweep spec) is malformed; the message names
    file and key."""


class TraceFileError(UsageError):
    """A capture file is missing, unreadable or damaged; the message names file and offset."""


class CaptureNotFoundError(TraceFileError, FileNotFoundError):
    """A capture file that does not exist: also a FileNotFoundError, for `except` clauses that
    expect one (`open()`'s)."""


class InputNotFoundError(UsageError, FileNotFoundError):
    """An input file (a configuration, a counter export, a result file) that does not exist:
    also a FileNotFoundError."""


def unreadable(what: object, exc: OSError) -> UsageError:
    """The error for an input that could not be read: `InputNotFoundError` where it is missing."""
    kind = InputNotFoundError if isinstance(exc, FileNotFoundError) else UsageError
    return kind(f"cannot read {what}: {exc.strerror}")


class CounterFileError(UsageError):
    """A counter file is truncated, foreign or has columns we do not know."""


class InternalError(Exception):
    """pcieperf broke one of its own rules (a bug, not a bad input); the message says which."""


class PcieperfWarning(Worded, UserWarning):
    """A result is computed but an input is odd; the message says what and why it matters."""


def require_choice(name: str, value: object, allowed: Iterable[object]) -> None:
    """Raise UsageError unless `value` is one of `allowed`, and of its kind: True is not 1,
    nor 8.0 the whole number 8 (Python's == says both are)."""
    options = list(allowed)
    if not any(_same_choice(value, option) for option in options):
        shown = ", ".join(str(o) for o in options)
        raise UsageError(f"{name} {value!r} is not allowed; choose one of {shown}")


def _same_choice(value: object, option: object) -> bool:
    """`value == option`, where a bool equals only a bool and a float no whole-number option."""
    if isinstance(value, bool) != isinstance(option, bool):
        return False
    if isinstance(value, float) and isinstance(option, int):
        return False
    return bool(value == option)


def require_power_of_two(name: str, value: int, low: int, high: int) -> None:
    """Raise UsageError unless `value` is a power of two within [low, high]."""
    whole = isinstance(value, int) and not isinstance(value, bool)
    ok = whole and low <= value <= high and value & (value - 1) == 0
    if not ok:
        raise UsageError(
            f"{name} {value!r} is not allowed; use a power of two from {low} to {high}"
        )


def is_number(value: object, low: float = -math.inf, high: float = math.inf) -> bool:
    """Whether `value` is a finite int or float (not a bool) within [low, high]: the one check
    of every number a file or flag gives (NaN passes `value < 0` checks, so each needs this)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and low <= value <= high


def require_positive(name: str, value: float) -> None:
    """Raise UsageError unless `value` is a finite number > 0."""
    if not (is_number(value) and value > 0):
        raise UsageError(f"{name} {value!r} is not allowed; it must be a positive number")


def _path(path: str | PathLike[str]) -> Path:
    """`path` as a pathlib Path, pathlib imported on first use: with urllib.parse and ipaddress
    it is ~16 M instructions of the start-up of commands that check no file."""
    from pathlib import Path

    return Path(path)


def require_new_file(path: str | PathLike[str], force: bool) -> None:
    """Raise UsageError unless `path` can be written as a regular file: its folder exists, it
    is not a folder or device, and an existing file is kept unless `force` (--force)."""
    out = _path(path)
    if out.is_dir():
        raise UsageError(f"{path} is a folder; give a file name")
    if out.exists() and not out.is_file():
        raise UsageError(f"{path} is not a regular file (a device or pipe); give a file name")
    if out.exists() and not force:
        raise UsageError(f"{path} exists; pass {param('force')} to overwrite it")
    _require_writable_folder(path, out.absolute().parent)


def _require_writable_folder(path: str | PathLike[str], folder: Path) -> None:
    """The folder an output goes into exists and takes new files (a read-only mount or a
    folder of another user's is refused before the work, not after it)."""
    if not folder.is_dir():
        raise UsageError(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: cannot write into folder {folder} (read-only or not yours)")


def require_new_folder(path: str | PathLike[str], force: bool) -> None:
    """Raise UsageError unless `path` can hold output files: it is a missing or empty folder
    whose parent exists, or any folder with `force` (--force)."""
    out = _path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"output folder {path} exists and is not a folder; choose another")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(
            f"output folder {path} exists and is not empty; pass {param('force')} to write into it"
        )
    _require_writable_folder(f"output folder {path}", out.absolute().parent)


def require_plot_file(path: str | PathLike[str], force: bool) -> None:
    """A plot file must end in .png or .svg and be writable as a new file (see
    require_new_file)."""
    if _path(path).suffix not in (".png", ".svg"):
        raise UsageError(f"plot file {path} must end in .png or .svg")
    require_new_file(path, force)


def warn(text: str) -> None:
    """Tell the caller something odd about a result that is still computed (the CLI prints it
    as one `pcieperf: warning:` line; a notebook shows it as a warning)."""
    warnings.warn(text, PcieperfWarning, stacklevel=3)

"""The pcieperf exception tree; library code raises these and never prints or exits.

PcieperfError            anything pcieperf reports on purpose
└── UsageError           the user gave a bad value, option or file (CLI exit code 2)
└── ProfileError     a NIC profile file is malformed (names file, table path and key)
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from pathlib import Path


class PcieperfError(Exception):
    """Base of every error pcieperf raises deliberately."""


class UsageError(PcieperfError, ValueError):
    """A value the user supplied is not allowed; the message names it and what is allowed."""


class ProfileError(UsageError):
    """A NIC profile (TOML) is malformed."""


def require_choice(name: str, value: object, allowed: Iterable[object]) -> None:
    """Raise UsageError unless `value` is one of `allowed`."""
    options = list(allowed)
    if value not in options:
        shown = ", ".join(str(o) for o in options)
        raise UsageError(f"{name} {value!r} is not allowed; choose one of {shown}")


def require_power_of_two(name: str, value: int, low: int, high: int) -> None:
    """Raise UsageError unless `value` is a power of two within [low, high]."""
    ok = isinstance(value, int) and low <= value <= high and value & (value - 1) == 0
    if not ok:
        raise UsageError(
            f"{name} {value!r} is not allowed; use a power of two from {low} to {high}"
        )


def require_positive(name: str, value: float) -> None:
    """Raise UsageError unless `value` is a finite number > 0."""
    if not (isinstance(value, int | float) and value > 0 and value != float("inf")):
        raise UsageError(f"{name} {value!r} is not allowed; it must be a positive number")


def require_new_file(path: str | PathLike, force: bool) -> None:
    """Raise UsageError if `path` exists and `force` was not given: nothing is overwritten
    without --force."""
    if Path(path).exists() and not force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")

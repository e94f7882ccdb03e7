"""Progress bars that appear only where a person watches: on a terminal, never under --quiet
or --json, and never as carriage-return noise in a log file.

Library code reports progress through these functions; whether a bar is drawn is decided once,
by the CLI (`configure`), so the library never inspects options itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from pcieperf import interrupts

T = TypeVar("T")

_quiet = False


class Bar(Protocol):
    """What callers use of a bar: tqdm's, or the silent stand-in."""

    @property
    def n(self) -> float:
        """Units counted so far."""

    def update(self, amount: float = 1, /) -> object:
        """Count `amount` more units."""

    def set_postfix_str(self, text: str, /) -> None:
        """Show `text` after the bar."""


def configure(*, quiet: bool) -> None:
    """Silence every bar (the CLI's --quiet and --json)."""
    global _quiet  # one process-wide switch, set once by the CLI
    _quiet = quiet


def enabled() -> bool:
    """True where a bar would be seen: stderr is a terminal and nothing asked for quiet."""
    return not _quiet and sys.stderr.isatty()


class _Silent:
    """Stand-in for a bar that is not drawn: accepts updates and forgets them."""

    n: float = 0

    def update(self, amount: float = 1) -> None:
        """Count progress that nobody watches."""
        self.n += amount

    def set_postfix_str(self, text: str) -> None:
        """Ignore the status text of a bar that is not drawn."""


@contextmanager
def bar(total: float | None, desc: str, unit: str = "it", **shape: Any) -> Iterator[Bar]:
    """A bar of `total` units (a silent stand-in where no bar is wanted), closed on exit so a
    following error line starts on a clean line."""
    if not enabled():
        yield _Silent()
        return
    import shutil  # only where a bar is drawn, as tqdm: both cost import time

    from tqdm import tqdm

    # The terminal's size as `shutil` reads it ($COLUMNS, then the terminal, 80x24 where it
    # says 0): tqdm, asking the terminal alone, draws nothing in one that reports 0 rows.
    size = shutil.get_terminal_size((80, 24))
    with tqdm(
        total=total,
        desc=desc,
        unit=unit,
        leave=False,
        ncols=size.columns,
        nrows=size.lines,
        **shape,
    ) as drawn:
        yield drawn


def wrap(items: Iterable[T], desc: str, unit: str = "it", total: int | None = None) -> Iterator[T]:
    """Iterate over `items`, drawing a bar where one is wanted; an interruption Python
    swallowed meanwhile stops it before the next item."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]  # a sized iterable, or TypeError
    with bar(total, desc, unit) as drawn:
        for item in items:
            interrupts.raise_if_stopped()
            yield item
            drawn.update(1)

"""Text for people, in one place: tables whose rows never wrap (fitted to the terminal by
leaving out the least important columns, named in one line below, and by cutting long text
cells with an ellipsis), label-value blocks, prose wrapped between words, counted nouns and the
one rule for a table's numbers. `--wide`, or output to no terminal (a pipe, a file), prints
everything (`configure`, `width`).

A table is `format_table(headers, rows, drop=...)`: `drop` lists the columns it may leave out,
least important first; the rest go from the right (the first column stays). Every command's
table is one of these (`results.Table` declares its columns by key)."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence

from pcieperf.units import decimal

ELLIPSIS = "…"
GAP = 2  # spaces between two columns
SOFT_CELL = 32  # text cells are cut to this before a column is left out
HARD_CELL = 8  # ... and to this (or their header) before the remaining columns go
LEFT_OUT = "not shown:"  # how the line naming the columns left out starts

_wide = False


def configure(*, wide: bool) -> None:
    """Print everything whatever the terminal's width (the CLI's --wide)."""
    global _wide  # one process-wide switch, set once by the CLI (as progress.configure)
    _wide = wide


def width() -> int | None:
    """The width text is fitted to: None (everything) under --wide or where stdout is no
    terminal and $COLUMNS is unset; else $COLUMNS, else the terminal's width."""
    if _wide:
        return None
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) >= 20:
        return int(given)
    if sys.stdout.isatty():
        import shutil  # only for a terminal: the light commands' start-up stays without it

        return shutil.get_terminal_size((80, 24)).columns
    return None


TERMINAL = -1  # `limit` of the functions below: the width `width()` gives


def _limit(limit: int | None) -> int | None:
    return width() if limit == TERMINAL else limit


# --- cells ----------------------------------------------------------------------------------


def cell(value: object) -> str:
    """A table cell's text: a float by the table rule (`units.decimal`), None as "-", anything
    else as `str` gives it."""
    if value is None:
        return "-"
    if isinstance(value, float) or _is_numpy(value, "floating"):
        return decimal(float(value))  # type: ignore[arg-type]  # a float or numpy floating
    return str(value)


def _is_numpy(value: object, kind: str) -> bool:
    """Whether `value` is a numpy scalar of `kind` (asked without loading numpy)."""
    numpy = sys.modules.get("numpy") if type(value).__module__ == "numpy" else None
    return numpy is not None and isinstance(value, getattr(numpy, kind))


def is_number(value: object) -> bool:
    """A number, or a number with its unit ("92.702 B/pkt", "66.3 of 32"), or "-" for one
    that is missing: right-aligned."""
    if isinstance(value, str):
        return value.lstrip("+-")[:1].isdigit() or value == "-"
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or _is_numpy(value, "number")


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: words cut at the end with an ellipsis; a path or a
    host's name (no spaces, a "/" or "-") in the middle, so that its end (a file's name) stays."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    if " " not in text and ("/" in text or "-" in text):
        head = min(8, (limit - 1) // 3)
        return text[:head] + ELLIPSIS + text[len(text) - (limit - 1 - head) :]
    return text[: limit - 1].rstrip() + ELLIPSIS


# --- tables ---------------------------------------------------------------------------------


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    limit: int | None = TERMINAL,
    *,
    drop: Sequence[int] = (),
) -> str:
    """A text table, one line per row: numbers right-aligned (`cell`), text left-aligned.
    Wider than `limit` (the terminal's width), it cuts long text cells, leaves out the columns
    of `drop` (least important first), cuts text further, then leaves out columns from the
    right, and says which it left out in one line below."""
    limit = _limit(limit)
    text = [[cell(v) for v in row] for row in rows]
    numeric = [all(is_number(row[i]) for row in rows) for i in range(len(headers))]
    natural = [max([len(h), *(len(r[i]) for r in text)]) for i, h in enumerate(headers)]
    kept, widths = _fit(headers, numeric, natural, limit, drop)
    lines = [_line([headers[i] for i in kept], kept, widths, numeric)]
    lines += [_line([row[i] for i in kept], kept, widths, numeric) for row in text]
    left_out = [headers[i] for i in range(len(headers)) if i not in kept]
    if left_out and limit is not None:
        note = f"{LEFT_OUT} {', '.join(left_out)}"
        hint = f"{note} (--wide shows all)"
        lines.append(hint if len(hint) <= limit else shorten(note, limit))
    return "\n".join(lines)


def _line(
    cells: Sequence[str], kept: Sequence[int], widths: dict[int, int], numeric: list[bool]
) -> str:
    """One line of a table: each cell cut to its column's width and aligned in it."""
    parts = [
        shorten(c, widths[i]).rjust(widths[i])
        if numeric[i]
        else shorten(c, widths[i]).ljust(widths[i])
        for c, i in zip(cells, kept, strict=True)
    ]
    return (" " * GAP).join(parts).rstrip()


def _fit(
    headers: Sequence[str],
    numeric: list[bool],
    natural: list[int],
    limit: int | None,
    drop: Sequence[int],
) -> tuple[list[int], dict[int, int]]:
    """The columns a table keeps and their widths, so that it fits `limit` (see
    `format_table` for the order of the steps)."""
    kept = list(range(len(headers)))
    widths = dict(enumerate(natural))
    if limit is None:
        return kept, widths

    def over() -> int:
        return sum(widths[i] for i in kept) + GAP * (len(kept) - 1) - limit

    def cut(least: int) -> None:
        """Narrow the widest text column, a character at a time, down to `least` or its
        header, while the table is too wide."""
        while over() > 0:
            text = [i for i in kept if not numeric[i] and widths[i] > max(least, len(headers[i]))]
            if not text:
                return
            widths[max(text, key=lambda i: widths[i])] -= 1

    cut(SOFT_CELL)
    for i in (i for i in drop if i in kept):
        if over() <= 0:
            break
        kept.remove(i)
    cut(HARD_CELL)
    while over() > 0 and len(kept) > 1:
        kept.pop()
    if over() > 0:  # one column left, wider than the terminal
        widths[kept[0]] = limit
    _widen(kept, widths, natural, limit)
    return kept, widths


def _widen(kept: list[int], widths: dict[int, int], natural: list[int], limit: int) -> None:
    """Give cut columns back what a left-out column freed, up to their full width."""
    room = limit - (sum(widths[i] for i in kept) + GAP * (len(kept) - 1))
    for i in kept:
        extra = min(room, natural[i] - widths[i])
        if extra > 0:
            widths[i] += extra
            room -= extra


# --- label-value blocks and prose -----------------------------------------------------------


def pairs(items: Sequence[tuple[str, str]], indent: int = 2, limit: int | None = TERMINAL) -> str:
    """Labels and their values, the values in one column; a value longer than the line goes
    on below, in its column (`indent` spaces before each label)."""
    limit = _limit(limit)
    column = indent + max((len(label) for label, _ in items), default=0) + GAP
    lines = []
    for label, value in items:
        head = " " * indent + label.ljust(column - indent)
        if limit is None or column + len(value) <= limit or limit - column < 20:
            lines.append((head + value).rstrip())
            continue
        wrapped = _wrap(value, limit - column)
        lines.append(head + wrapped[0])
        lines += [" " * column + rest for rest in wrapped[1:]]
    return "\n".join(lines)


def _wrap(text: str, limit: int) -> list[str]:
    """`text` wrapped between words to `limit` (a word longer than that is cut, `shorten`)."""
    words = [shorten(word, limit) for word in text.split(" ")]
    return textwrap.wrap(
        " ".join(words), limit, break_long_words=False, break_on_hyphens=False
    ) or [""]


def fit_lines(text: str, limit: int | None = TERMINAL) -> str:
    """Every line of `text` longer than `limit` (the terminal's width) wrapped between words,
    its continuation indented 2 more (tables and `pairs` come fitted: only prose is left)."""
    limit = _limit(limit)
    if limit is None:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= limit:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        body = _wrap(line.strip(), max(limit - len(indent) - 2, 10))
        out += [indent + body[0], *(indent + "  " + rest for rest in body[1:])]
    return "\n".join(out)


def plural(count: float, noun: str, many: str | None = None) -> str:
    """`count` and its noun, singular for 1: "1 file", "3 files", "1 lcore", "2.5 copies"
    (`many`: an irregular plural)."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun if count == 1 else many or noun + 's'}"

"""A counter file's text read as a stream (issue 28): its head, for telling which tool wrote it,
then its lines, one block of bytes at a time, so that a file of any size (or /dev/zero) holds
one block and one line in memory."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from pcieperf.errors import CounterFileError, unreadable

BLOCK_BYTES = 1 << 20
"""Bytes read at a time; the first block is also the head the formats are detected from."""
MAX_LINE_CHARS = 1 << 20
"""The longest line taken: pcm-iio's widest row (every stack's IOMMU columns) is ~200 chars."""
# Separators str.splitlines() breaks at: lines come out as `text.splitlines()` gives them.
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


class CounterText:
    """An open counter file: `head` (its first block, decoded) and `lines()` (every line,
    read on from that block, without its line break)."""

    def __init__(self, fh: BinaryIO, file: str) -> None:
        self._fh, self._file = fh, file
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()  # Excel writes a BOM
        self._offset = 0
        self.head = self._decode(self._read())

    def _read(self) -> bytes:
        try:
            return self._fh.read(BLOCK_BYTES)
        except OSError as exc:
            raise unreadable(self._file, exc) from None

    def _decode(self, block: bytes) -> str:
        """`block` as text (a character cut at its end waits for the next one)."""
        try:
            text = self._decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            byte = self._offset + exc.start
            raise CounterFileError(
                f"{self._file}: cannot read: not UTF-8 text (byte {byte}: {exc.reason})"
            ) from None
        self._offset += len(block)
        return text

    def lines(self) -> Iterator[str]:
        """Every line of the file, as `str.splitlines` cuts them; a line longer than
        MAX_LINE_CHARS (a binary file, /dev/zero) is refused in one line."""
        pending, number = self.head, 0
        while True:
            block = self._read()
            pieces = (pending + self._decode(block)).splitlines(keepends=True)
            # The last piece may go on in the next block (or be the \r of a \r\n): held back.
            pending = pieces.pop() if block and pieces else ""
            for piece in pieces:
                yield piece.rstrip(_BREAKS)
            number += len(pieces)
            if len(pending) > MAX_LINE_CHARS:
                raise CounterFileError(
                    f"{self._file}: line {number + 1} is longer than {MAX_LINE_CHARS:,} "
                    "characters; a counter file is text of short lines (is it the right file?)"
                )
            if not block:
                return


@contextmanager
def counter_text(path: Path, file: str) -> Iterator[CounterText]:
    """The counter file at `path` (named `file` in messages), open while the block runs."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise unreadable(file, exc) from None
    with fh:
        yield CounterText(fh, file)

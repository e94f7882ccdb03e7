"""Large inputs made from the test suite's small ones, for the memory benchmark and for the
tests that need a command busy for seconds (tests load this file by path)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

PCM_SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "counters" / "pcm-iio-skx.csv"
"""Two samples of `pcm-iio 1 -csv` (a header before each, ragged Part1..3 rows)."""


def repeated_pcm(out: Path, size_bytes: int) -> int:
    """Write `PCM_SAMPLE`'s two samples again and again, one a second from its first time,
    until `out` holds `size_bytes`; returns the samples (header blocks) written."""
    lines = PCM_SAMPLE.read_text().splitlines()
    header = lines[0]
    blocks = [lines[1:5], lines[6:10]]  # each sample's four rows, without their header
    start = dt.datetime(2026, 11, 21, 23, 8, 10, 123000)
    stamp_chars = len("2026-11-21,23:08:10.123")
    written = samples = 0
    with out.open("w") as fh:
        while written < size_bytes:
            t = start + dt.timedelta(seconds=samples)
            stamp = f"{t:%Y-%m-%d},{t:%H:%M:%S}.{t.microsecond // 1000:03d}"
            rows = (stamp + row[stamp_chars:] for row in blocks[samples % 2])
            text = header + "\n" + "".join(row + "\n" for row in rows)
            fh.write(text)
            written += len(text)
            samples += 1
    return samples

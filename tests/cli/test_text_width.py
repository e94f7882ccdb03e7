"""Text that fits (issue 27): no line of the text output wider than $COLUMNS (100 when it is
not set and stdout is no terminal); text columns left-aligned and wrapped, numbers right."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pcieperf.results import format_table
from tests.helpers import TESTS_DATA

PCM = str(TESTS_DATA / "counters" / "pcm-iio-skx.csv")  # a pcm-iio sample
CAPTURES = [str(p) for p in sorted((TESTS_DATA / "trace_stats" / "inputs").glob("*.gz"))]
COMMANDS = {
    "platforms": ["platforms"],
    "profiles": ["profiles"],
    "iommu advise": ["iommu", "advise", "--packets", "20000"],
    "explain": ["explain", "--counters", PCM, "--pps", "7M", "--frame", "64"],
    "counters ls": ["counters", "ls"],
    "trace stats": ["trace", "stats", *CAPTURES],
    "trace stats --brief": ["trace", "stats", "--brief", *CAPTURES],
}


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_line_is_wider_than_the_terminal(tmp_path, name, columns):
    env = {**os.environ, "COLUMNS": str(columns), "PCIEPERF_DB": str(tmp_path / "s.duckdb")}
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", *COMMANDS[name]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    wide = [line for line in done.stdout.splitlines() if len(line) > columns]
    assert wide == []


def test_text_columns_wrap_and_numbers_stay_whole():
    rows = [("a long description of the first thing", 12.5), ("short", 1234567.0)]
    table = format_table(("what", "Gb/s"), rows, width=30).splitlines()
    assert max(map(len, table)) <= 30
    assert table[0].startswith("what ")  # text left-aligned
    assert table[1].endswith("12.50")  # numbers right-aligned, never cut
    assert "1,234,567.00" in table[-1]
    # the description continues on the next lines, in its own column: 30 - 2 - 12 = 16 wide
    assert [line[:16].rstrip() for line in table[1:4]] == [
        "a long",
        "description of",
        "the first thing",
    ]

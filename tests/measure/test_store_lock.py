"""The store waits its turn (issue 28 item 8): DuckDB lets one process open a file at a time,
so a command that finds the store held waits (saying by whom), and after
PCIEPERF_STORE_WAIT_S fails in one line naming the holder; never DuckDB's raw lock message."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.processes import holding

WAIT_S = 120.0  # generous: a loaded 2-core CI machine
HOLD = """import duckdb, sys
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path):
    """A process that holds the store open until its stdin gets a line."""
    db = tmp_path / "s.duckdb"
    with holding(HOLD, str(db), ready="holding") as proc:
        yield db, proc


def _cli(db, wait_s, **kw):
    env = {**os.environ, "PCIEPERF_STORE_WAIT_S": str(wait_s)}
    return subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", "data", "ls", "--db", str(db), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kw,
    )


def test_a_held_store_fails_in_one_line_naming_the_holder(holder):
    db, proc = holder
    cli = _cli(db, 0.5)
    _, err = cli.communicate(timeout=WAIT_S)
    assert cli.returncode == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"pcieperf: error: the store {db} is in use by process {proc.pid} (")
    assert last.endswith("waited 0.5 s (PCIEPERF_STORE_WAIT_S sets how long)")
    assert "Conflicting lock" not in err


def test_a_command_waits_until_the_store_is_free(holder):
    db, proc = holder
    cli = _cli(db, WAIT_S)
    line = cli.stderr.readline()  # it has found the store held and waits
    assert (
        line
        == f"pcieperf: waiting for the store {db}, in use by process {proc.pid} ("
        + (line.split("(", 1)[1])
    )
    proc.communicate("\n", timeout=WAIT_S)  # the holder lets go
    out, err = cli.communicate(timeout=WAIT_S)
    assert cli.returncode == 0, err
    assert out.strip() == "[]"


def test_a_bad_wait_is_refused(tmp_path):
    cli = _cli(tmp_path / "s.duckdb", "nan")
    _, err = cli.communicate(timeout=WAIT_S)
    assert (cli.returncode, err) == (
        2,
        "pcieperf: error: PCIEPERF_STORE_WAIT_S='nan' is not allowed; give seconds >= 0\n",
    )

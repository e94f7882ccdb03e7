"""Progress on long work (issue 44): the commands that can take seconds draw a bar where a person
watches (stderr a terminal, stood in for here by `progress.enabled`), none under -q or --json;
and a bar is drawn in a terminal that reports no size (a pty at 0x0, where tqdm alone drew
nothing)."""

import os
import pty
import subprocess
import sys

import pytest

from pcieperf import progress
from tests.helpers import SHARED, TESTS_DATA
from tests.helpers.cli import run_cli

HOST = SHARED / "pcie-bench" / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
OTHER = SHARED / "pcie-bench" / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630-iommu"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent")


def commands(tmp):
    """Each long command, on the least input that still shows its bar."""
    return {
        "data import": ["data", "import", str(HOST), "--db", str(tmp / "s.duckdb")],
        "bench predict": [
            *("bench", "predict", "--host", str(HOST), "--out", str(tmp / "p")),
            *("--transactions", "2000"),
        ],
        "sweep": ["sweep", str(TESTS_DATA / "sweep-dma.toml"), "-o", str(tmp / "g.parquet")],
        "bench calibrate": ["bench", "calibrate", str(HOST), str(OTHER), "-o", str(tmp / "c.toml")],
        "report": ["report", "-o", str(tmp / "r")],
    }


SLOW = {"bench calibrate", "report"}


@pytest.fixture
def watched(monkeypatch):
    """A bar is wanted wherever the CLI did not ask for quiet (as on a terminal)."""
    monkeypatch.setattr(progress, "enabled", lambda: not progress._quiet)


@needs_shared
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
        for n in ("data import", "bench predict", "sweep", "bench calibrate", "report")
    ],
)
def test_a_long_command_draws_a_bar_and_none_when_quiet(capsys, tmp_path, watched, name):
    argv = commands(tmp_path)[name]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "%|" in err  # tqdm's bar: "reading: 50%|#####     | 1/2"
    if name in SLOW:  # -q is one switch of the CLI's (progress.configure): the others check it
        return
    quiet = commands(tmp_path / "q")[name]
    (tmp_path / "q").mkdir()
    code, _, err = run_cli(capsys, *quiet, "-q")
    assert (code, "%|" in err) == (0, False), err


def test_a_bar_is_drawn_in_a_terminal_of_no_size():
    # A pty whose size was never set reports 0 rows and 0 columns; the bar must still show.
    script = "from pcieperf import progress\nwith progress.bar(3, 'work') as b:\n    b.update(3)"
    parent, child = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-c", script],
        stdin=child,
        stdout=child,
        stderr=child,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
        timeout=120,
        check=True,
    )
    os.close(child)
    assert done.returncode == 0
    assert "work:" in read_all(parent)


def read_all(fd: int) -> str:
    """What a pty's child wrote (a pty's end reads EIO once the child's side is closed)."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        pass
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")

"""`trace merge --scheduler`'s parts (issue 46 F8): its workers write each time range into a
temporary folder beside the output, which goes whatever ends the run (SIGTERM, SIGHUP, a
full disk or a file-size limit), and which the next run to the same output removes once its
process is gone (`kill -9`). Whole commands, on two local worker processes."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pcieperf import outputs
from tests.helpers import signals

OUT = "m.pcapng"
MID_WORK_BYTES = 4 << 20  # the workers are writing their parts


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[str]:
    return [str(p) for p in signals.synth_captures(tmp_path_factory.mktemp("inputs"))]


def _merge(inputs: list[str], folder: Path, **kw: object) -> subprocess.Popen:
    argv = ["trace", "merge", "--scheduler", "local:2", *inputs, "-o", OUT, "-q"]
    return signals.start(argv, folder, **kw)


def _parts_bytes(folder: Path) -> int:
    """Bytes of everything the merge keeps beside its output but the output itself."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            if Path(root) != folder or (name.startswith(f".{OUT}") and name != OUT):
                with contextlib.suppress(FileNotFoundError):  # renamed or removed meanwhile
                    total += (Path(root) / name).stat().st_size
    return total


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_stopped_merge_leaves_no_part(tmp_path, inputs, stop):
    proc = _merge(inputs, tmp_path)
    signals.wait_for(proc, lambda: _parts_bytes(tmp_path) > MID_WORK_BYTES, "parts written")
    _, err = signals.stop(proc, stop, lambda: _parts_bytes(tmp_path) > 0)
    assert proc.returncode == 128 + stop, err
    assert err.strip().splitlines()[-1] == f"pcieperf: interrupted by {stop.name}"
    assert signals.leftovers(tmp_path, ()) == []


@pytest.mark.slow
def test_a_killed_merges_parts_are_removed_by_the_next(tmp_path, inputs):
    proc = _merge(inputs, tmp_path)
    signals.wait_for(proc, lambda: _parts_bytes(tmp_path) > MID_WORK_BYTES, "parts written")
    os.kill(proc.pid, signal.SIGKILL)  # the main process only, as `kill -9 PID` does
    proc.communicate()
    left = signals.leftovers(tmp_path, ())
    assert left, "the killed run left no part"
    assert all(name.startswith(f".{OUT}.{outputs.MARK}-{proc.pid}-") for name in left)
    again = _merge(inputs, tmp_path)
    err = again.communicate(timeout=signals.WAIT_S)[1].decode()
    assert again.returncode == 0, err
    assert f"left by pcieperf process {proc.pid}, which is gone" in err
    assert signals.leftovers(tmp_path, ()) == [OUT]


@pytest.mark.slow
def test_a_merge_past_the_file_size_limit_leaves_nothing(tmp_path, inputs):
    # RLIMIT_FSIZE fails a write as a full disk does (EFBIG instead of ENOSPC); the workers
    # inherit it, so their parts fail as well as the output.
    def limited() -> None:
        signals._as_from_a_terminal()
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, resource.RLIM_INFINITY))

    argv = ["trace", "merge", "--scheduler", "local:2", *inputs, "-o", OUT, "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", *argv],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limited,
    )
    _, err = proc.communicate(timeout=signals.WAIT_S)
    assert proc.returncode == 2, err
    assert "File too large" in err.strip().splitlines()[-1], err
    assert signals.leftovers(tmp_path, ()) == []


@pytest.mark.slow
def test_a_live_runs_parts_are_kept_and_a_dead_ones_removed(tmp_path, inputs):
    # The next run removes another run's part folder only where that run's process is gone.
    dead = tmp_path / f".{OUT}.{outputs.MARK}-4194999-abcd.part"  # above pid_max: gone
    live = tmp_path / f".{OUT}.{outputs.MARK}-{os.getpid()}-beef.part"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "00001").write_bytes(b"half a part")
    proc = _merge(inputs[:1], tmp_path)
    err = proc.communicate(timeout=signals.WAIT_S)[1].decode()
    assert proc.returncode == 0, err
    assert "left by pcieperf process 4194999, which is gone" in err
    assert signals.leftovers(tmp_path, ()) == sorted([live.name, OUT])

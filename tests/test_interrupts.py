"""A signal whose interruption Python swallows (its handler ran inside a `__del__` or a weakref
callback, where an exception can only be printed) still stops the work, before anything is
published, and prints no traceback (CI, 2026-12-07: `report` on SIGHUP printed "Exception ignored
in: <function WeakKeyDictionary...>" and exited 0 with its report written)."""

import os
import signal
from pathlib import Path

import pytest

from pcieperf import interrupts, outputs, progress


class _SignalledOnCollection:
    """An object whose collection sends this process `signum`: its handler then runs inside
    `__del__`, as CI's did inside a weakref callback."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        for _ in range(1000):  # bytecode for the pending handler to run in
            pass


def _swallow(signum: int) -> None:
    _SignalledOnCollection(signum)  # collected at once: its __del__ takes the signal


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_a_swallowed_interruption_ends_the_block(signum, capsys):
    with pytest.raises(KeyboardInterrupt) as stopped, interrupts.stop_as_interrupt():
        _swallow(signum)
    assert interrupts.exit_code(stopped.value) == 128 + signum
    assert "Traceback" not in capsys.readouterr().err


def _swallowed_then_published(tmp: Path, output: Path) -> None:
    with interrupts.stop_as_interrupt():
        _swallow(signal.SIGHUP)
        outputs.publish(tmp, output, force=False)


def test_nothing_is_published_after_a_swallowed_interruption(tmp_path):
    tmp, output = tmp_path / "r.tmp", tmp_path / "r"
    tmp.write_text("whole")
    with pytest.raises(interrupts.Stopped):
        _swallowed_then_published(tmp, output)
    assert not output.exists()
    assert not tmp.exists()


def _loop_swallowing_at(stop_at: int, done: list[int]) -> None:
    with interrupts.stop_as_interrupt():
        for item in progress.wrap(range(5), "items"):
            done.append(item)
            if item == stop_at:
                _swallow(signal.SIGTERM)


def test_a_loop_with_progress_stops_at_the_next_item():
    done: list[int] = []
    with pytest.raises(interrupts.Stopped):
        _loop_swallowing_at(1, done)
    assert done == [0, 1]


def test_the_next_block_starts_clean():
    with pytest.raises(interrupts.Stopped), interrupts.stop_as_interrupt():
        _swallow(signal.SIGHUP)
    with interrupts.stop_as_interrupt():
        interrupts.raise_if_stopped()  # nothing left over from the block before

"""One capture run at a time on a machine (issues 41 and 46): a second run waits for the
machine's capture lock, says for whom, and gives up after --wait seconds in one line; the lock
is taken in pcieperf's state folder, never in TMPDIR."""

import json
import threading
import time

import pytest

from pcieperf import statedir
from pcieperf.capture import lock
from pcieperf.errors import PcieperfError, UsageError
from tests.helpers.processes import holding

WAIT_S = 300.0  # a generous deadline for conditions on a loaded 2-core machine
HOLD = """
import sys
from pcieperf import statedir
from pcieperf.capture import lock
statedir._folder_path = lambda: __import__("pathlib").Path(sys.argv[1])
with lock.machine_lock(0):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def own_folder(tmp_path, monkeypatch):
    """The state folder (and so the lock) of this test alone: root's is machine-wide."""
    folder = tmp_path / "state"
    monkeypatch.setattr(statedir, "_folder_path", lambda: folder)
    return folder


@pytest.fixture
def holder(own_folder):
    """Another process holding the lock until the test lets it go (a line on its stdin)."""
    with holding(HOLD, str(own_folder), ready="held") as proc:
        yield proc


def test_a_held_lock_is_refused_at_once_naming_its_holder(holder):
    expected = f"the capture run of process {holder.pid} "
    with pytest.raises(PcieperfError, match=expected), lock.machine_lock(0):
        pass
    holding = json.loads(statedir.read_text(lock.HOLDER))
    assert holding["pid"] == holder.pid


def test_a_waiting_run_says_for_whom_and_goes_on_once_it_is_free(holder, capsys):
    got = threading.Event()

    def waiting_run():
        with lock.machine_lock(WAIT_S):
            got.set()

    waiter = threading.Thread(target=waiting_run)
    waiter.start()
    said = ""
    deadline = time.monotonic() + WAIT_S
    while "pcieperf: waiting for" not in said:
        assert time.monotonic() < deadline, "the waiting run said nothing"
        said += capsys.readouterr().err
        time.sleep(0.05)
    assert f"the capture run of process {holder.pid} (" in said
    assert not got.is_set()
    holder.communicate("\n", timeout=WAIT_S)  # the holder lets go
    waiter.join(timeout=WAIT_S)
    assert got.is_set()
    assert statedir.read_text(lock.HOLDER) is None  # gone with its holder


def test_a_dead_holder_does_not_hold_the_lock(holder):
    # flock(2) is released with the holder's last descriptor, even by kill -9.
    holder.kill()
    holder.wait()
    with lock.machine_lock(0):
        pass


@pytest.mark.parametrize("wait", [-1, float("nan"), float("inf"), "5"])
def test_a_bad_wait_is_refused(wait):
    with pytest.raises(UsageError, match="is not allowed; give seconds from 0 on"):
        lock.check_wait(wait)

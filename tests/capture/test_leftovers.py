"""Recovering what a killed capture run left (issues 41, 43 and 46): only what the dead run's
record proves it made is touched (its own processes, private folders, the mount in one of them,
a hugepage count nobody changed since, EAL's folder of its prefix), only once its owner is dead,
and nothing a record names is followed elsewhere."""

import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from pcieperf import statedir
from pcieperf.capture import hugepages, leftovers
from pcieperf.dpdk import testpmd

WAIT_S = 300.0  # a generous deadline for conditions on a loaded 2-core machine
SLEEPER = "import sys; print('up', flush=True); sys.stdin.readline()"


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A state folder, a hugepage pool, mounts and EAL's runtime folders of the test's own."""
    state, runtime = tmp_path / "state", tmp_path / "dpdk"
    runtime.mkdir()
    monkeypatch.setattr(statedir, "_folder_path", lambda: state)
    monkeypatch.setattr(testpmd, "runtime_dir", lambda prefix: runtime / prefix)
    pool = {"pages": 300, "mounts": set(), "unmounted": []}
    monkeypatch.setattr(hugepages, "page_count", lambda: pool["pages"])
    monkeypatch.setattr(hugepages, "set_page_count", lambda n: pool.update(pages=n))
    monkeypatch.setattr(hugepages, "is_hugetlbfs", lambda path: str(path) in pool["mounts"])
    monkeypatch.setattr(hugepages, "unmount", lambda path: pool["unmounted"].append(str(path)))
    return pool


def _dead() -> statedir.Process:
    """A process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(done.stdout)
    return statedir.Process(pid, 1)  # no process has this id and start now


def _write(record: leftovers.Record) -> None:
    statedir.write_text(record.name, json.dumps(asdict(record)))


def test_a_dead_runs_leftovers_are_undone(machine):
    owner = _dead()
    prefix = f"{leftovers.RUN_PREFIX}{owner.pid}-123"
    links = statedir.private_folder("links-")
    huge = statedir.private_folder("huge-")
    (testpmd.runtime_dir(prefix)).mkdir()
    machine["mounts"].add(str(huge))
    _write(leftovers.Record(owner, prefix, (str(links), str(huge)), str(huge), 256, 300))
    undone = leftovers.recover()
    assert len(undone) == 1
    assert undone[0].startswith(f"for process {owner.pid}: unmounted {huge}, removed {links}")
    assert machine == {"pages": 256, "mounts": {str(huge)}, "unmounted": [str(huge)]}
    assert not links.exists()
    assert not huge.exists()
    assert not testpmd.runtime_dir(prefix).exists()
    assert statedir.names(leftovers.PATTERN) == []


def test_a_forged_record_moves_nothing_it_does_not_prove(machine, tmp_path):
    # F1: a record cannot make pcieperf unmount, remove or set what the run did not make.
    owner = _dead()
    elsewhere = tmp_path / "users-folder"
    elsewhere.mkdir(mode=0o755)  # not a private folder of pcieperf's
    machine["mounts"].add(str(elsewhere))
    (testpmd.runtime_dir("not-ours")).mkdir()
    _write(leftovers.Record(owner, "not-ours", (str(elsewhere),), str(elsewhere), 10, 999))
    (undone,) = leftovers.recover()
    assert "left the hugepage count at 300 (the run had set 999" in undone
    assert machine == {"pages": 300, "mounts": {str(elsewhere)}, "unmounted": []}
    assert elsewhere.is_dir()
    assert testpmd.runtime_dir("not-ours").is_dir()


def test_a_live_runs_record_is_left_alone(machine):
    me = statedir.Process.of(os.getpid())
    huge = statedir.private_folder("huge-")
    _write(leftovers.Record(me, "p", (str(huge),), str(huge), 1, 300))
    assert leftovers.recover() == []
    assert huge.is_dir()
    assert machine["pages"] == 300
    assert statedir.names(leftovers.PATTERN) != []


def test_a_dead_runs_orphans_are_stopped_but_not_a_stranger_with_their_id(machine):
    # Issue 43: recovery must never pull resources from under a live process; the dead run's
    # own processes (recognised by id and start time) are stopped first.
    orphan, stranger = (
        subprocess.Popen([sys.executable, "-c", SLEEPER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    )  # fmt: skip
    try:
        for proc in (orphan, stranger):
            assert proc.stdout.readline() == "up\n"
        other = statedir.Process.of(stranger.pid)
        children = (statedir.Process.of(orphan.pid), statedir.Process(other.pid, other.start + 1))
        _write(leftovers.Record(_dead(), "p", children=children))
        (undone,) = leftovers.recover()
        assert f"stopped process {orphan.pid}" in undone
        assert orphan.wait(timeout=WAIT_S) == -signal.SIGKILL
        assert stranger.poll() is None
    finally:
        for proc in (orphan, stranger):  # ends the stranger, closes both's pipes
            proc.communicate("" if proc.poll() is not None else "\n", timeout=WAIT_S)


def test_an_unreadable_record_is_removed_and_nothing_else(machine):
    statedir.folder()
    statedir.write_text("capture-1-2.json", '{"owner": {"pid": "x"}}')
    assert leftovers.recover() == ["removed the unreadable record capture-1-2.json"]
    assert statedir.names(leftovers.PATTERN) == []


def test_links_planted_in_dev_shm_are_neither_followed_nor_a_crash(machine, tmp_path):
    # F5: a user's link named like a run's tmpfs folder must not crash the next run.
    target = tmp_path / "target"
    target.write_text("kept")
    link = Path("/dev/shm") / f".{leftovers.RUN_PREFIX}1-planted-{os.getpid()}"
    if not link.parent.is_dir():
        pytest.skip("no /dev/shm here")
    link.symlink_to(target)
    try:
        assert leftovers.recover() == []
        assert target.read_text() == "kept"
    finally:
        link.unlink()


def test_a_run_records_what_it_makes_and_removes_its_record(machine):
    recorder = leftovers.Recorder(f"{leftovers.RUN_PREFIX}{os.getpid()}-1")
    (name,) = statedir.names(leftovers.PATTERN)
    recorder.pages(256, 300)
    recorder.mount(Path("/x"))
    recorder.close()  # a cleanup failed: the record stays for the next run
    assert statedir.names(leftovers.PATTERN) == [name]
    recorder.mount(None)
    recorder.pages(None, None)
    recorder.close()
    assert statedir.names(leftovers.PATTERN) == []

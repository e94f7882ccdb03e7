"""pcieperf's state folder (issue 46, F1, F2, F4): only the user pcieperf runs as can write it,
whatever TMPDIR says; it is refused when it is a link, someone else's or open to others, and
its files are never reached through a link."""

import os
import subprocess
import sys

import pytest

from pcieperf import statedir
from pcieperf.errors import PcieperfError

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the case needs root (.ci/run runs as root)")
NOBODY = 65534  # the unprivileged user and group of Debian's base-passwd


def as_nobody(code: str) -> subprocess.CompletedProcess:
    """Python `code` run as the unprivileged user nobody (util-linux setpriv)."""
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*command, sys.executable, "-c", code], capture_output=True, text=True, check=False
    )


@pytest.fixture
def own_folder(tmp_path, monkeypatch):
    """The state folder moved into the test's own folder (root's is machine-wide)."""
    folder = tmp_path / "state"
    monkeypatch.setattr(statedir, "_folder_path", lambda: folder)
    return folder


def test_the_folder_is_made_private_and_files_are_written_whole(own_folder):
    assert statedir.folder() == own_folder
    assert own_folder.stat().st_mode & 0o777 == 0o700
    statedir.write_text("x.json", "one")
    statedir.write_text("x.json", "two")
    assert statedir.read_text("x.json") == "two"
    assert statedir.names("*.json") == ["x.json"]
    assert [p.name for p in own_folder.iterdir()] == ["x.json"]  # no temporary left
    statedir.remove("x.json")
    statedir.remove("x.json")  # a second removal is no error
    assert statedir.read_text("x.json") is None


@pytest.mark.parametrize("mode", [0o755, 0o777, 0o770])
def test_a_folder_open_to_others_is_refused(own_folder, mode):
    own_folder.mkdir(mode=0o700)
    own_folder.chmod(mode)
    with pytest.raises(PcieperfError, match="closed to others"):
        statedir.folder()


def test_a_folder_that_is_a_link_is_refused(own_folder, tmp_path):
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    own_folder.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PcieperfError, match="is not a folder"):
        statedir.folder()


def test_a_file_is_never_reached_through_a_link(own_folder, tmp_path):
    # F2: a link planted where pcieperf reads or writes must not lead it elsewhere.
    victim = tmp_path / "victim"
    victim.write_text("secret")
    statedir.folder()
    (own_folder / "capture.holder").symlink_to(victim)
    with pytest.raises(PcieperfError, match="is a link, not a file: remove it"):  # O_NOFOLLOW
        statedir.read_text("capture.holder")
    statedir.write_text("capture.holder", "{}")  # replaces the link, never writes through it
    assert victim.read_text() == "secret"
    assert not (own_folder / "capture.holder").is_symlink()


def test_the_folder_does_not_follow_tmpdir(monkeypatch, tmp_path):
    # F4/F5: two runs with different TMPDIR must find the same lock.
    before = statedir._folder_path()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert statedir._folder_path() == before


@as_root
def test_root_keeps_its_state_where_no_other_user_can_write():
    # F1/F4: a plain user can neither plant a record nor hold the capture lock.
    folder = statedir.folder()
    assert folder == statedir.ROOT_FOLDER
    for code in (
        f"open({str(folder / 'capture-1-1.json')!r}, 'w')",
        f"open({str(folder / 'capture.lock')!r})",
        f"import os; os.listdir({str(folder)!r})",
    ):
        done = as_nobody(code)
        assert "PermissionError" in done.stderr, (code, done.stderr)


def test_a_process_is_known_by_its_id_and_start_time():
    me = statedir.Process.of(os.getpid())
    assert me is not None
    assert me.alive()
    assert not statedir.Process(me.pid, me.start + 1).alive()  # the id reused by another
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert statedir.Process.of(int(done.stdout)) is None  # gone (and reaped)

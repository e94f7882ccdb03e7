"""Where pcieperf keeps what must outlive one of its processes (the capture lock, the record of
what a capture run made) and the private folders its DPDK runs hand paths through: a folder
only its user can write. For root it is /run/pcieperf (FHS 3.0 §3.15: /run holds run-time
data, root's alone), one per machine whatever TMPDIR says; for another user
$XDG_RUNTIME_DIR/pcieperf, or /tmp/pcieperf-UID. The folder is never followed through a link
and refused unless it belongs to the user with no access for others; files in it are opened
relative to it without following links, and written whole (a new name, then a rename).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from pcieperf.errors import PcieperfError

ROOT_FOLDER = Path("/run/pcieperf")
PRIVATE = 0o700  # rwx for the owner alone
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def folder() -> Path:
    """The state folder of the user pcieperf runs as, created (mode 0700) if missing; one that
    is a link, belongs to someone else or lets others in is refused in one line."""
    path = _folder_path()
    try:
        os.mkdir(path, PRIVATE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PcieperfError(f"cannot create the state folder {path}: {exc.strerror}") from None
    check_private(path)
    return path


def _folder_path() -> Path:
    """Root's /run/pcieperf; another user's run-time folder (pam_systemd's /run/user/UID) or,
    without one, /tmp/pcieperf-UID."""
    uid = os.geteuid()
    if uid == 0:
        return ROOT_FOLDER
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "pcieperf"
    return Path("/tmp") / f"pcieperf-{uid}"


def check_private(path: Path) -> None:
    """`path` must be a real folder (not a link) owned by this user, closed to others."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise PcieperfError(f"{path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise PcieperfError(f"{path} is not a folder (a link or a file): remove it")
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise PcieperfError(
            f"{path} belongs to uid {info.st_uid} with mode {stat.filemode(info.st_mode)}; "
            f"pcieperf keeps its state only in a folder of uid {os.geteuid()} closed to others "
            "(drwx------): remove it"
        )


@contextmanager
def _opened_folder() -> Iterator[int]:
    """A descriptor of the state folder, opened without following a link."""
    fd = os.open(folder(), _OPEN_DIR)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(name: str, flags: int, mode: int = 0o600) -> int:
    """A descriptor of the state folder's file `name`, never through a link (O_NOFOLLOW):
    a regular file of this user's, or one created now."""
    with _opened_folder() as dir_fd:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise PcieperfError(f"{folder() / name} is a link, not a file: remove it") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise PcieperfError(f"{folder() / name} is not a file of uid {os.geteuid()}: remove it")
    return fd


def read_text(name: str) -> str | None:
    """The text of the state file `name`, or None if there is none."""
    try:
        fd = open_file(name, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as file:
        return file.read()


def write_text(name: str, text: str) -> None:
    """Write the state file `name` whole: a new file (O_EXCL, never a link) renamed over it."""
    tmp = f".{name}.{os.getpid()}-{os.urandom(4).hex()}"
    with _opened_folder() as dir_fd:
        new = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(tmp, new, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            raise


def remove(name: str) -> None:
    """Remove the state file `name` if it is there."""
    with _opened_folder() as dir_fd, suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


def names(pattern: str) -> list[str]:
    """The state files whose names match the glob `pattern`, sorted."""
    return sorted(p.name for p in folder().glob(pattern) if not p.name.startswith("."))


def private_folder(prefix: str, parent: Path | None = None) -> Path:
    """A new folder of this user's alone (mode 0700, made with O_EXCL semantics by mkdtemp), in
    the state folder or in `parent` (such as /dev/shm, sticky: nobody else can replace it)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent or folder()))


def remove_stale(prefix: str) -> None:
    """Remove the private folders `prefix`PID-... of the state folder whose process is gone
    (only for folders that hold links: a mount is undone by its run's record instead)."""
    for found in folder().glob(f"{prefix}*-*"):
        pid = found.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and Process.of(int(pid)) is None:
            remove_private_folder(found)


def remove_private_folder(path: Path) -> bool:
    """Remove a folder `private_folder` made, if it is still one of this user's; False if
    there was nothing (or nothing of ours) to remove."""
    try:
        check_private(path)
    except PcieperfError:
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


@dataclass(frozen=True)
class Process:
    """A process as it can be recognised later: its id and its start time (clock ticks after
    boot, /proc/PID/stat field 22, proc(5)), so that a reused id is not taken for it."""

    pid: int
    start: int

    @classmethod
    def of(cls, pid: int) -> Process | None:
        """The process `pid` as it is now (None: it is gone)."""
        start = _start_time(pid)
        return None if start is None else cls(pid, start)

    def alive(self) -> bool:
        """Whether this very process still runs (a zombie has stopped running)."""
        return _start_time(self.pid) == self.start and _state(self.pid) not in (None, "Z", "X")


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (which may hold spaces and parentheses)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _start_time(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None  # field 22 of proc(5), the 20th after the name


def _state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None  # field 3 of proc(5)

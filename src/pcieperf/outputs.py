"""Publishing outputs whole: every file and folder pcieperf writes is made under a temporary
name beside the output, flushed to disk, then given the output's name in one step, without
replacing anything that appeared meanwhile unless --force. A reader never sees half an output;
a failure (a full disk, a signal, a bug) leaves the old output as it was and no temporary
behind, and a temporary left by a killed run is removed by the next run that writes the same
output (its name holds the writer's process id).
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pcieperf import interrupts
from pcieperf.errors import UsageError, param, warn

MARK = "pcieperf"  # a temporary's name: .OUTPUT.pcieperf-PID-RANDOM.part
RENAME_NOREPLACE = 1  # renameat2(2) flag, <linux/fs.h>
AT_FDCWD = -100  # <fcntl.h>


def temporary_beside(output: str | os.PathLike) -> Path:
    """A fresh name beside `output` for the file or folder being written, after removing the
    temporaries of `output` whose writer is gone. Not created here: the writer creates it like
    any new file, so it gets the user's umask (a mkstemp file would stay 0600)."""
    out = Path(output)
    remove_stale(out)
    return _fresh_name(out)


def _fresh_name(output: Path) -> Path:
    """A temporary's name for `output` that no other has (this process's id, random bytes)."""
    return output.parent / f".{output.name}.{MARK}-{os.getpid()}-{os.urandom(4).hex()}.part"


def remove_stale(output: Path) -> None:
    """Remove the temporaries of `output` that a killed pcieperf left (their process is gone),
    and say so."""
    for found in output.parent.glob(f".{output.name}.{MARK}-*-*.part"):
        pid = found.name.rsplit(f".{MARK}-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            _remove(found)
            warn(f"removed {found}, left by pcieperf process {pid}, which is gone")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def discard(tmp: Path, output: str | os.PathLike) -> None:
    """Remove `output`'s temporary folder `tmp`, which other processes (Dask workers) may
    still be writing into: it is renamed first, to another of `output`'s temporary names, so
    that a file they open by its old path fails instead of appearing after the removal (and a
    run killed meanwhile leaves what the next run removes); then removed with what it holds."""
    doomed = _fresh_name(Path(output))
    try:
        tmp.rename(doomed)
    except FileNotFoundError:
        return
    _remove(doomed)


def _remove(path: Path) -> None:
    """Remove a temporary if it is there (on a read-only mount, unlink(2) of a name that does
    not exist fails with EROFS, not ENOENT: that must not hide the error being reported)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink(missing_ok=True)


@contextmanager
def written(output: str | os.PathLike, force: bool, durable: bool = True) -> Iterator[Path]:
    """The temporary path to write `output` to; when the block ends without an error, the file
    is flushed to disk (unless not `durable`: a file its reader checks, such as a sweep's part)
    and published (`publish`). Any failure removes the temporary; an OS error (a full disk, a
    read-only folder) becomes one line naming `output` and the reason."""
    out = Path(output)
    tmp = temporary_beside(out)
    try:
        with os_errors(out):
            yield tmp
            if durable:
                _sync(tmp)
        publish(tmp, out, force)
    finally:
        _remove(tmp)


@contextmanager
def os_errors(output: Path) -> Iterator[None]:
    """An OSError in the block as the UsageError a user acts on: which output, why."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        raise UsageError(f"cannot write {output}: {os.strerror(exc.errno)}") from None


def write_text(output: str | os.PathLike, text: str, force: bool) -> None:
    """Publish `text` as the file `output` (UTF-8), whole or not at all."""
    with written(output, force) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_texts(files: Sequence[tuple[str | os.PathLike, str, bool]]) -> None:
    """Publish several texts (output, text, force), each as UTF-8, together or not at all:
    every one is written to its temporary and flushed first (a failure there publishes none);
    then each is given its name in turn, and a name that cannot be given undoes those given
    before it (what was new removed, what `force` replaced put back), so that a failure
    leaves every output as it was (`capture calibrate`'s calibration and its runs)."""
    made: list[tuple[Path, Path, bool]] = []
    try:
        for output, text, force in files:
            out = Path(output)
            made.append((temporary_beside(out), out, force))
            with os_errors(out):
                made[-1][0].write_text(text, encoding="utf-8")
                _sync(made[-1][0])
        _publish_all(made)
    finally:
        for tmp, _, _ in made:
            _remove(tmp)


def _publish_all(made: Sequence[tuple[Path, Path, bool]]) -> None:
    """`publish` each (temporary, output, force), undoing the ones done if one fails."""
    done: list[tuple[Path, Path | None]] = []  # (output, the file it replaced, kept aside)
    try:
        for tmp, out, force in made:
            kept = _kept_aside(out) if force and out.is_file() else None
            try:
                publish(tmp, out, force)
            except BaseException:
                if kept is not None:
                    _remove(kept)
                raise
            done.append((out, kept))
    except BaseException:
        for out, kept in reversed(done):
            if kept is None:
                _remove(out)
            else:
                kept.replace(out)
        raise
    finally:
        for _, kept in done:
            if kept is not None:
                _remove(kept)


def _kept_aside(output: Path) -> Path:
    """A second name for the file `output` is, under one of its temporaries' names (a hard
    link: the file stays where it is until it is replaced)."""
    kept = _fresh_name(output)
    with os_errors(output):
        os.link(output, kept)
    return kept


def write_with(
    output: str | os.PathLike, force: bool, write: Callable[[Path], object], durable: bool = True
) -> None:
    """Publish the file that `write(path)` writes as `output`, whole or not at all (`written`)."""
    with written(output, force, durable) as tmp:
        write(tmp)


def _sync(path: Path) -> None:
    """Flush a written file, or a folder's files and the folder itself, to disk, so that the
    published name never points at data still in the page cache only."""
    items = [*(p for p in path.rglob("*") if p.is_file()), path] if path.is_dir() else [path]
    for item in items:
        fd = os.open(item, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish(tmp: Path, output: Path, force: bool) -> None:
    """Give the complete file or folder `tmp` the name `output` in one step: refused if `output`
    exists by now, unless `force`, which replaces a file atomically; `tmp` is gone either way."""
    try:
        interrupts.raise_if_stopped()
        with os_errors(output):
            if force:
                tmp.replace(output)
            else:
                _rename_noreplace(tmp, output)
    finally:
        _remove(tmp)


def _rename_noreplace(src: Path, dst: Path) -> None:
    """rename(2) that fails if `dst` exists (renameat2 RENAME_NOREPLACE; a hard link where the
    file system lacks it)."""
    try:
        _renameat2(src, dst, RENAME_NOREPLACE)
    except FileExistsError:
        raise UsageError(f"{dst} exists; pass {param('force')} to overwrite it") from None
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS) or src.is_dir():
            raise
        try:
            os.link(src, dst)
        except FileExistsError:
            raise UsageError(f"{dst} exists; pass {param('force')} to overwrite it") from None


def _renameat2(src: Path, dst: Path, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), os.fspath(dst))


@contextmanager
def folder(output: str | os.PathLike, force: bool) -> Iterator[Path]:
    """A temporary folder to build the folder `output` in, published whole when the block ends
    without an error: as `output` if there is none; into an existing one (which holds other
    files: a report's or prediction's folder given again) file by file, each no-clobber unless
    `force`."""
    out = Path(output)
    tmp = temporary_beside(out)
    try:
        with os_errors(out):
            tmp.mkdir()
            yield tmp
            _sync(tmp)
        if out.is_dir():
            for path in sorted(tmp.iterdir()):
                publish(path, out / path.name, force)
        else:
            publish(tmp, out, force=False)
    finally:
        _remove(tmp)

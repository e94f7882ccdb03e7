"""Hugepage memory for a capture run. DPDK's capture tools are secondary processes, and a
primary started with --no-huge cannot have secondaries (EAL: "Cannot get hugepage
information"), so a capture run's testpmd needs hugepages: the user's hugetlbfs folder
(`huge_dir`), or, as root, 2 MiB pages reserved and a hugetlbfs mount of the run's own, both
undone afterwards."""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pcieperf.errors import PcieperfError, UsageError

PAGE_MB = 2  # the x86-64 2 MiB page size (Documentation/admin-guide/mm/hugetlbpage.rst)
POOL = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")
MOUNTS = Path("/proc/mounts")


def check(huge_dir: Path | None) -> None:
    """Refuse, before anything starts, a run that cannot have hugepages: without `huge_dir`
    it must run as root on a kernel with 2 MiB pages; `huge_dir` must be a hugetlbfs mount."""
    if huge_dir is not None:
        if not is_hugetlbfs(huge_dir):
            raise UsageError(
                f"--huge-dir {huge_dir}: not a hugetlbfs mount point (see /proc/mounts); mount "
                "one with `mount -t hugetlbfs nodev DIR`"
            )
        return
    if os.geteuid() != 0:
        raise UsageError(
            "a capture run needs hugepages: run as root (pcieperf reserves 2 MiB pages and "
            "mounts hugetlbfs itself, and undoes both), or give --huge-dir with a hugetlbfs "
            "mount that has free pages"
        )
    if not (POOL / "nr_hugepages").exists():
        raise UsageError(f"this kernel offers no 2 MiB hugepages ({POOL} is missing)")


def is_hugetlbfs(folder: Path) -> bool:
    """Whether `folder` is a hugetlbfs mount point."""
    target = os.path.realpath(folder)
    for line in MOUNTS.read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "hugetlbfs" and _unescape(fields[1]) == target:
            return True
    return False


def _unescape(field: str) -> str:
    r"""A /proc/mounts path field: spaces and tabs are written as octal escapes (\040)."""
    return field.encode().decode("unicode_escape")


LOCK = Path(tempfile.gettempdir()) / "pcieperf-capture.lock"


@contextmanager
def exclusive() -> Iterator[None]:
    """One capture run at a time on a machine: a second waits for the first (flock(2)). Two
    at once would take each other's hugepages (each reserves what it sees missing and puts
    back the count it found) and each other's CPU time."""
    fd = os.open(LOCK, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def pages_for(megabytes: int) -> int:
    """2 MiB pages that hold `megabytes`."""
    return -(-megabytes // PAGE_MB)


@contextmanager
def hugepages(pages: int, huge_dir: Path | None) -> Iterator[Path]:
    """A hugetlbfs folder with `pages` free pages for the run: `huge_dir` as it is, or pages
    reserved and a private mount made here, unmounted and the page count put back on exit."""
    if huge_dir is not None:
        yield huge_dir
        return
    previous = _reserve(pages)
    try:
        folder = Path(tempfile.mkdtemp(prefix="pcieperf-huge-"))
        try:
            _run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={PAGE_MB}M", "nodev", str(folder)])
            try:
                yield folder
            finally:
                _run(["umount", str(folder)])
        finally:
            folder.rmdir()
    finally:
        if previous is not None:
            (POOL / "nr_hugepages").write_text(str(previous))


def _reserve(pages: int) -> int | None:
    """Make `pages` free 2 MiB pages; the page count before, to restore, or None if enough
    were free already."""
    free = int((POOL / "free_hugepages").read_text())
    if free >= pages:
        return None
    total = POOL / "nr_hugepages"
    previous = int(total.read_text())
    total.write_text(str(previous + pages - free))
    got = int((POOL / "free_hugepages").read_text())
    if got < pages:
        total.write_text(str(previous))
        raise PcieperfError(
            f"only {got} of the {pages} 2 MiB hugepages a capture run needs could be reserved "
            "(memory fragmented or too small); free memory or give --huge-dir"
        )
    return previous


def _run(command: list[str]) -> None:
    """mount/umount, one line on failure."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PcieperfError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout}")

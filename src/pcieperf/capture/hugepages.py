"""Hugepage memory for a capture run. DPDK's capture tools are secondary processes, and a
primary started with --no-huge cannot have secondaries (EAL: "Cannot get hugepage
information"), so a capture run's testpmd needs hugepages: the user's hugetlbfs folder
(`huge_dir`), or, as root, 2 MiB pages reserved and a hugetlbfs mount of the run's own, both
undone afterwards."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from pcieperf import statedir
from pcieperf.errors import PcieperfError, UsageError, param


class Recorder(Protocol):
    """Where a run writes down what it makes as it makes it (`leftovers.Recorder`)."""

    def folder(self, path: Path) -> None:
        """A private folder of the run's."""

    def mount(self, path: Path | None) -> None:
        """Its hugetlbfs mount (None: unmounted)."""

    def pages(self, found: int | None, set_to: int | None) -> None:
        """The hugepage count it found and set (None, None: put back)."""


PAGE_MB = 2  # the x86-64 2 MiB page size (Documentation/admin-guide/mm/hugetlbpage.rst)
POOL = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")
MOUNTS = Path("/proc/mounts")


def check(huge_dir: Path | None) -> None:
    """Refuse, before anything starts, a run that cannot have hugepages: without `huge_dir`
    it must run as root on a kernel with 2 MiB pages; `huge_dir` must be a hugetlbfs mount."""
    if huge_dir is not None:
        if not is_hugetlbfs(huge_dir):
            raise UsageError(
                f"{param('huge_dir')} {huge_dir}: not a hugetlbfs mount point (see /proc/mounts); "
                "mount "
                "one with `mount -t hugetlbfs nodev DIR`"
            )
        return
    if os.geteuid() != 0:
        raise UsageError(
            "a capture run needs hugepages: run as root (pcieperf reserves 2 MiB pages and "
            "mounts hugetlbfs itself, and undoes both), or give "
            f"{param('huge_dir')} with a hugetlbfs mount that has free pages"
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


def pages_for(megabytes: int) -> int:
    """2 MiB pages that hold `megabytes`."""
    return -(-megabytes // PAGE_MB)


@contextmanager
def hugepages(pages: int, huge_dir: Path | None, record: Recorder) -> Iterator[Path]:
    """A hugetlbfs folder with `pages` free pages for the run: `huge_dir` as it is, or pages
    reserved and a mount of the run's own made in a private folder, unmounted and the page
    count put back on exit (and by the next run's recovery if this one is killed outright:
    `record` says what to undo)."""
    if huge_dir is not None:
        yield huge_dir
        return
    found = _reserve(pages, record)
    try:
        folder = statedir.private_folder(f"huge-{os.getpid()}-")
        record.folder(folder)
        try:
            record.mount(folder)
            options = f"pagesize={PAGE_MB}M,mode=0700"  # private, as the folder under it
            _run(["mount", "-t", "hugetlbfs", "-o", options, "nodev", str(folder)])
            try:
                yield folder
            finally:
                unmount(folder)
                record.mount(None)
        finally:
            folder.rmdir()
    finally:
        if found is not None:
            set_page_count(found)
            record.pages(None, None)


def page_count() -> int:
    """The 2 MiB hugepages the kernel holds now (nr_hugepages)."""
    return int((POOL / "nr_hugepages").read_text())


def set_page_count(count: int) -> None:
    """Ask the kernel to hold `count` 2 MiB hugepages."""
    (POOL / "nr_hugepages").write_text(str(count))


def _reserve(pages: int, record: Recorder) -> int | None:
    """Make `pages` free 2 MiB pages; the page count before, to restore (recorded before it
    changes, and again with what the kernel gave), or None if enough were free already."""
    free = int((POOL / "free_hugepages").read_text())
    if free >= pages:
        return None
    found = page_count()
    wanted = found + pages - free
    record.pages(found, wanted)
    set_page_count(wanted)
    record.pages(found, page_count())
    got = int((POOL / "free_hugepages").read_text())
    if got < pages:
        set_page_count(found)
        record.pages(None, None)
        raise PcieperfError(
            f"only {got} of the {pages} 2 MiB hugepages a capture run needs could be reserved "
            f"(memory fragmented or too small); free memory or give {param('huge_dir')}"
        )
    return found


UNMOUNT_TRIES = 20  # 0.1 s apart: a DPDK process starting elsewhere scans every hugetlbfs mount


def unmount(folder: Path) -> None:
    """Unmount the run's hugetlbfs. Another DPDK process starting meanwhile opens every
    hugetlbfs mount it finds (EAL's hugepage_info scan) and so keeps ours busy for a moment:
    wait for it, then detach the mount lazily (umount -l), which the kernel completes once the
    other process lets go; the mount is private to the run, so nothing else needs it."""
    for _ in range(UNMOUNT_TRIES):
        done = subprocess.run(["umount", str(folder)], capture_output=True, text=True)
        if done.returncode == 0:
            return
        if "busy" not in done.stderr:
            break
        time.sleep(0.1)
    else:
        _run(["umount", "-l", str(folder)])
        return
    raise PcieperfError(f"umount {folder} failed: {done.stderr.strip() or done.stdout}")


def _run(command: list[str]) -> None:
    """mount/umount, one line on failure."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PcieperfError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout}")

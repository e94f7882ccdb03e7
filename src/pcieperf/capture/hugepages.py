"""Hugepage memory for a capture run. DPDK's capture tools are secondary processes, and a
primary started with --no-huge cannot have secondaries (EAL: "Cannot get hugepage
information"), so a capture run's testpmd needs hugepages: the user's hugetlbfs folder
(`huge_dir`), or, as root, 2 MiB pages reserved and a hugetlbfs mount of the run's own, both
undone afterwards."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pcieperf.errors import PcieperfError, UsageError, param

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
    reserved and a private mount made here, unmounted and the page count put back on exit
    (and by the next run's `recover` if this one is killed outright: STATE says what to undo)."""
    if huge_dir is not None:
        yield huge_dir
        return
    state: dict = {"previous": None, "mount": None}
    try:
        state["previous"] = _reserve(pages, lambda previous: _save(state | {"previous": previous}))
        folder = Path(tempfile.mkdtemp(prefix="pcieperf-huge-"))
        _save(state | {"mount": str(folder)})
        try:
            _run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={PAGE_MB}M", "nodev", str(folder)])
            try:
                yield folder
            finally:
                _unmount(folder)
        finally:
            folder.rmdir()
    finally:
        if state["previous"] is not None:
            (POOL / "nr_hugepages").write_text(str(state["previous"]))
        STATE.unlink(missing_ok=True)


STATE = Path(tempfile.gettempdir()) / "pcieperf-capture.state"
"""What the running capture run has changed (the page count it found, its mount), so that a
run killed outright (SIGKILL) can be undone by the next one."""


def _save(state: dict) -> None:
    """Write STATE whole (a temporary file renamed over it)."""
    tmp = STATE.with_name(STATE.name + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(STATE)


def recover() -> list[str]:
    """Undo what a killed run left: called under `exclusive()`, when no other run can be going
    on, so a STATE file is a dead run's. Returns what was undone, one phrase each."""
    try:
        state = json.loads(STATE.read_text())
    except (OSError, ValueError):
        return []
    undone = []
    folder = state.get("mount")
    if folder and is_hugetlbfs(Path(folder)):
        _unmount(Path(folder))
        undone.append(f"unmounted {folder}")
    if folder and Path(folder).is_dir():
        Path(folder).rmdir()
    if state.get("previous") is not None:
        (POOL / "nr_hugepages").write_text(str(state["previous"]))
        undone.append(f"hugepages back to {state['previous']}")
    STATE.unlink()
    return undone


def _reserve(pages: int, saving: Callable[[int], None]) -> int | None:
    """Make `pages` free 2 MiB pages; the page count before, to restore (handed to `saving`
    before it changes), or None if enough were free already."""
    free = int((POOL / "free_hugepages").read_text())
    if free >= pages:
        return None
    total = POOL / "nr_hugepages"
    previous = int(total.read_text())
    saving(previous)
    total.write_text(str(previous + pages - free))
    got = int((POOL / "free_hugepages").read_text())
    if got < pages:
        total.write_text(str(previous))
        raise PcieperfError(
            f"only {got} of the {pages} 2 MiB hugepages a capture run needs could be reserved "
            f"(memory fragmented or too small); free memory or give {param('huge_dir')}"
        )
    return previous


UNMOUNT_TRIES = 20  # 0.1 s apart: a DPDK process starting elsewhere scans every hugetlbfs mount


def _unmount(folder: Path) -> None:
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

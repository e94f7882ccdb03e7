"""What a capture run makes that must not outlive it, written down as it is made, so that a run
killed outright (SIGKILL: no cleanup runs) is undone by the next one. The record is a file in
pcieperf's state folder (`pcieperf.statedir`, root's /run/pcieperf), never /tmp: only what it
proves the dead run made is touched (its processes, recognised by id and start time; its
private folders and the hugetlbfs mounted inside one; the hugepage count it set, if nobody
changed it since; EAL's runtime folder of its file prefix), and only once its owner is dead."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pcieperf import statedir
from pcieperf.capture import hugepages
from pcieperf.dpdk import testpmd
from pcieperf.errors import PcieperfError

PATTERN = "capture-*.json"
RUN_PREFIX = "pcieperf-capture-"  # EAL file prefix of a run: RUN_PREFIX + pid + '-' + ns
_PREFIX = re.compile(re.escape(RUN_PREFIX) + r"[0-9]+-[0-9]+")
STOP_DEADLINE_S = 30.0


@dataclass(frozen=True)
class Record:
    """What one capture run made: its owner (the pcieperf process), EAL file prefix, private
    folders, hugetlbfs mount, the hugepage count it found and set, and its DPDK processes."""

    owner: statedir.Process
    prefix: str
    folders: tuple[str, ...] = ()
    mount: str | None = None
    pages_found: int | None = None
    pages_set: int | None = None
    children: tuple[statedir.Process, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """The record's file in the state folder."""
        return f"capture-{self.owner.pid}-{self.owner.start}.json"


class Recorder:
    """The running capture's record, rewritten whole at each change and removed at its end."""

    def __init__(self, prefix: str) -> None:
        owner = statedir.Process.of(os.getpid())
        assert owner is not None, "this process runs"
        self.record = Record(owner, prefix)
        self._write()

    def folder(self, path: Path) -> None:
        """A private folder of the run's (removed whole by a recovery)."""
        self._change(folders=(*self.record.folders, str(path)))

    def mount(self, path: Path | None) -> None:
        """The run's hugetlbfs mount (None: unmounted)."""
        self._change(mount=None if path is None else str(path))

    def pages(self, found: int | None, set_to: int | None) -> None:
        """The hugepage count the run found and the one it set (None, None: put back)."""
        self._change(pages_found=found, pages_set=set_to)

    def child(self, pid: int) -> None:
        """A DPDK process the run started."""
        child = statedir.Process.of(pid)
        if child is not None:
            self._change(children=(*self.record.children, child))

    def close(self) -> None:
        """Remove the record once the run has undone what only a record can show: its mount and
        its hugepage count (if either is still there, a cleanup failed: the next run retries)."""
        if self.record.mount is None and self.record.pages_found is None:
            statedir.remove(self.record.name)

    def _change(self, **changes: object) -> None:
        self.record = replace(self.record, **changes)  # type: ignore[arg-type]  # Record's fields
        self._write()

    def _write(self) -> None:
        statedir.write_text(self.record.name, json.dumps(asdict(self.record)))


def recover() -> list[str]:
    """Undo what dead capture runs left (called under the machine's capture lock); what was
    undone, one phrase each. A record whose owner still runs is left alone."""
    undone: list[str] = []
    for name in statedir.names(PATTERN):
        record = _read(name)
        if record is None:
            statedir.remove(name)
            undone.append(f"removed the unreadable record {name}")
        elif not record.owner.alive():
            done = _undo(record)
            statedir.remove(name)
            undone.append(f"for process {record.owner.pid}: {', '.join(done) or 'nothing left'}")
    return undone


def _read(name: str) -> Record | None:
    """A record as written, or None if it is not one."""
    try:
        data = json.loads(statedir.read_text(name) or "")
        return Record(
            owner=statedir.Process(**data["owner"]),
            prefix=str(data["prefix"]),
            folders=tuple(str(f) for f in data["folders"]),
            mount=None if data["mount"] is None else str(data["mount"]),
            pages_found=_count(data["pages_found"]),
            pages_set=_count(data["pages_set"]),
            children=tuple(statedir.Process(**c) for c in data["children"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _count(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(value)
    return value


def _undo(record: Record) -> list[str]:
    """Stop the dead run's processes, then remove what they used."""
    undone = [f"stopped {name}" for name in _stop(record.children)]
    if record.mount in record.folders and _ours(record.mount):
        hugepages.unmount(Path(record.mount))
        undone.append(f"unmounted {record.mount}")
    undone += [f"removed {f}" for f in record.folders if statedir.remove_private_folder(Path(f))]
    if record.pages_found is not None:
        undone.append(_restore_pages(record.pages_found, record.pages_set))
    if _PREFIX.fullmatch(record.prefix):
        runtime = testpmd.runtime_dir(record.prefix)
        if runtime.is_dir():
            shutil.rmtree(runtime, ignore_errors=True)
            undone.append(f"removed {runtime}")
    return undone


def _stop(children: tuple[statedir.Process, ...]) -> list[str]:
    """SIGKILL the recorded processes that still run (an id now another process's is left
    alone), and wait until they are gone."""
    running = [c for c in children if c.alive()]
    for child in running:
        os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + STOP_DEADLINE_S
    while any(c.alive() for c in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [f"process {c.pid}" for c in running]


def _ours(mount: str) -> bool:
    """Whether `mount` is a hugetlbfs on a private folder in pcieperf's state folder, where a
    run mounts its own (`hugepages.hugepages`)."""
    path = Path(mount)
    if path.parent != statedir.folder() or not hugepages.is_hugetlbfs(path):
        return False
    try:
        statedir.check_private(path)
    except PcieperfError:
        return False
    return True


def _restore_pages(found: int, set_to: int | None) -> str:
    """Put the hugepage count back if it is still what the dead run set."""
    now = hugepages.page_count()
    if now == set_to:
        hugepages.set_page_count(found)
        return f"hugepages back to {found}"
    return f"left the hugepage count at {now} (the run had set {set_to}; it changed since)"

"""Statistics of capture archives (issue 17): `trace stats --archive GLOB...` summarises many
files on Dask workers (the Rust reader, without the GIL) and merges the summaries exactly, per
port, into the statistics of the port's files concatenated in time order (docs/scale.md).

A port is the files whose interfaces have the same link type, timestamp resolution and name,
in the same order (a capture appliance rotating one port's capture writes such files). Its
files are ordered by the time of their first packet, then by path; files without packets come
last. Steps:

1. the first record of every file (its time, and the interfaces then), read in this process
   where it can read the file (a local path: tens of microseconds a file), by the workers,
   HEADS_PER_TASK files a task, where it cannot (an fsspec URL): this groups files into ports
   and gives each port's origin (its first packet), from which every file counts its rate
   windows. So a local archive costs one round of tasks, not two (docs/scale.md);
2. on the engine (`engine.map_chunks`), one `TracePartial` per file
   (`rust/core/src/trace/archive.rs`): sums, the edge windows, the bursts touching either end,
   the distinct gaps; consecutive files of at least MIN_TASK_BYTES a task, or one task per
   worker thread for a smaller archive that splits evenly (`batches`). A task reads on its
   own thread (one task, one core) unless every worker thread has READ_AHEAD_CORES cores, as
   the in-process default on two cores has; then a second thread reads ahead of the parsing;
3. per port, the partials appended in order and summarised. Where that cannot be exact (files
   of one port overlap in time, or a file out of time order holds a packet before the port's
   first record) the port is summarised again in one task that sorts all its packets by time
   as `trace stats` sorts one capture out of time order: in bounded runs spilled to disk and
   merged (`rust/core/src/trace/spill.rs`), so memory stays bounded whatever the port holds.

The same partials carry the PCIe demand of `trace demand` (per-window bytes from a NIC
profile's cost per frame size). Merging by time ranges is `archive_merge`. fsspec URLs are
copied to the worker and read from there.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from pcieperf import engine
from pcieperf._native import call, checked, core
from pcieperf.errors import PcieperfError, TraceFileError, UsageError, require_positive
from pcieperf.net.trace.files import LINK_HEADER_BYTES, NS_PER_S, Interface
from pcieperf.net.trace.rewrite import _check_inputs
from pcieperf.net.trace.statistics import WINDOWS_NS, _report, stats_config

if TYPE_CHECKING:
    from distributed import Client

    from pcieperf._core import TracePartial

S = TypeVar("S")
R = TypeVar("R")

HEAD_BYTES = 1 << 20
"""Bytes of a remote (fsspec) file copied to read its first record: the header, interfaces
and first packet of any capture but one whose first record is larger."""

READ_AHEAD_CORES = 2
"""Cores per worker thread from which a file's partial is read ahead on a second thread: with
read-ahead one partial keeps about 1.7 cores busy (the parser, plus the reader's copy from the
page cache), so with fewer the workers' tasks take cores from each other (docs/scale.md)."""

MIN_TASK_BYTES = 1 << 30
"""Capture bytes one partial task reads at least (consecutive files of the archive taken
together), unless the archive holds less than that per worker thread (`batches`). A task costs
the local scheduler ~3.6 ms of CPU on this host and its worker ~3 ms (docs/scale.md): ~1 % of
the 0.4-0.7 s one core takes to read 1 GiB of 64-byte frames."""

EVEN_SPLIT = 1.1
"""A smaller archive is read in one task per worker thread where no task then holds more than
this times a thread's share of the bytes; on 2 cores, 4 tasks a thread made a 32-file run ~13 %
slower than 1 (docs/scale.md), so a split more uneven than that is the worse choice."""

TASKS_PER_THREAD = 4
"""Tasks per worker thread where one each would be uneven: dask sends a one-thread worker two
tasks at once, and gives the rest to whichever worker finishes first."""

HEADS_PER_TASK = 64
"""Files whose first record (or time span, for a merge) one task reads: opening a file costs
well under a millisecond, so one file per task would be mostly scheduler overhead."""

_GLOB_CHARS = frozenset("*?[")


def expand(patterns: Sequence[str]) -> list[str]:
    """The files named by paths and glob patterns (`**` included), each pattern's matches in
    sorted order (a path that exists is taken as it is). A pattern that matches nothing is an
    error."""
    found: list[str] = []
    for pattern in patterns:
        if _GLOB_CHARS.isdisjoint(pattern) or os.path.exists(pattern):
            found.append(pattern)
            continue
        matches = (
            _url_glob(pattern) if is_url(pattern) else sorted(glob.glob(pattern, recursive=True))
        )
        if not matches:
            raise UsageError(f"{pattern!r} matches no file; give capture files or a glob")
        found += matches
    return found


def _url_glob(pattern: str) -> list[str]:
    """The URLs an fsspec glob matches, sorted."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(pattern)
    return sorted(fs.unstrip_protocol(p) for p in fs.glob(path))


@dataclass(frozen=True)
class Head:
    """A file's first record time (None without packets), its port's key and its size in
    bytes (None where the worker cannot tell it cheaply: an fsspec URL)."""

    path: str
    first_ts_ns: int | None
    port: tuple[tuple[int, int, str | None], ...]
    size: int | None = None


def is_url(path: str) -> bool:
    """Whether `path` is an fsspec URL (s3://, gs://, http://, memory://, ...) rather than a
    local path, which the Rust reader opens itself."""
    return "://" in path and not path.startswith("file://")


def _absolute(path: str) -> str:
    """The path as a worker in another folder must see it (URLs as they are)."""
    return path if is_url(path) else os.path.abspath(path)


@contextmanager
def _readable(paths: Sequence[str], limit: int | None = None) -> Iterator[list[str]]:
    """Paths the Rust reader can open: a local path as it is; an fsspec URL copied (its first
    `limit` bytes, or all) into this worker's temporary folder for the call, removed after,
    and named again in errors instead of the copy."""
    copies: dict[str, str] = {}
    try:
        yield [_copy(p, limit, copies) if is_url(p) else p for p in paths]
    except TraceFileError as exc:
        text = str(exc)
        for local, url in copies.items():
            text = text.replace(local, url)
        raise TraceFileError(text) from None
    finally:
        for local in copies:
            os.unlink(local)


def _copy(url: str, limit: int | None, copies: dict[str, str]) -> str:
    import fsspec

    fd, local = tempfile.mkstemp(prefix="pcieperf-", suffix=".capture")
    copies[local] = url
    try:
        with os.fdopen(fd, "wb") as out, fsspec.open(url, "rb") as src:
            if limit is None:
                shutil.copyfileobj(src, out, 1 << 20)
            else:
                out.write(src.read(limit))
    except (OSError, ValueError) as exc:
        raise TraceFileError(f"{url}: cannot be read ({exc})") from None
    return local


def _head(path: str, item: object) -> Head:
    """The Head of `path` from its `trace_first_records` item (its error raised)."""
    first, interfaces = checked(item)
    port = tuple((i["linktype"], i["tsresol"], i["name"]) for i in interfaces)
    return Head(path, first, port, None if is_url(path) else os.path.getsize(path))


def _heads_task(shared: tuple[bool, bool], paths: tuple[str, ...]) -> list[Head]:
    skip_bad, strict = shared
    with _readable(paths, HEAD_BYTES) as local:
        found = core().trace_first_records(local, skip_bad, strict)
        return [_head(p, item) for p, item in zip(paths, found, strict=True)]


def _heads_here(paths: Sequence[str], skip_bad: bool, strict: bool) -> dict[str, Head]:
    """The heads of the local files this process can read: a first record costs tens of
    microseconds to read, a round of tasks before the partials ~10 ms of the scheduler's CPU
    and a wait for the slowest (docs/scale.md). Files it fails on are left to the workers,
    which may see other files and report a real error as one line."""
    local = [p for p in paths if not is_url(p)]
    found = core().trace_first_records(local, skip_bad, strict, os.cpu_count() or 1)
    heads = {}
    for path, item in zip(local, found, strict=True):
        try:
            heads[path] = _head(path, item)
        except (PcieperfError, OSError):
            continue  # read by a worker, as a URL is
    return heads


def _heads(client: Client, paths: list[str], skip_bad: bool, strict: bool) -> list[Head]:
    """The head of every file, in order: read in this process where it can (`_heads_here`),
    by the workers (HEADS_PER_TASK files a task) where it cannot: fsspec URLs, which a worker
    copies the start of, and files this process cannot read."""
    here = _heads_here(paths, skip_bad, strict)
    rest = [p for p in paths if p not in here]
    there = dict(
        zip(
            rest,
            _batched(client, _heads_task, rest, (skip_bad, strict), "first records"),
            strict=True,
        )
    )
    return [here.get(p) or there[p] for p in paths]


def _partials_task(
    shared: tuple[dict, bool, bool, object, bool], chunk: tuple[tuple[str, int], ...]
) -> list[TracePartial]:
    """The partial of each (file, origin) of the chunk, in order."""
    config, skip_bad, strict, demand, read_ahead = shared
    partials = []
    for path, origin in chunk:
        with _readable([path]) as (local,):
            partial = core().trace_partial(
                local, config, origin, skip_bad, strict, demand, read_ahead
            )
            partial.rename_file(local, path)
        partials.append(partial)
    return partials


def _port_task(shared: tuple[dict, bool, bool, object], paths: tuple[str, ...]) -> TracePartial:
    config, skip_bad, strict, demand = shared
    with _readable(paths) as local:
        partial = core().trace_partial_files(local, config, skip_bad, strict, demand)
        for copy, path in zip(local, paths, strict=True):
            partial.rename_file(copy, path)
    return partial


def _stats_task(shared: tuple[dict, bool, bool, object], path: str) -> dict:
    config, skip_bad, strict, _ = shared
    with _readable([path]) as local:
        (found,) = core().trace_stats(local, config, skip_bad, strict, 1)
        raw = checked(found)
    if raw["cut_short"]:
        raw["cut_short"] = raw["cut_short"].replace(local[0], path)
    return raw


def _batched(
    client: Client,
    task: Callable[[S, tuple[str, ...]], list[R]],
    paths: list[str],
    shared: S,
    desc: str,
) -> list[R]:
    """`task` over the paths, HEADS_PER_TASK a task; its results in path order."""
    batches = [tuple(paths[k : k + HEADS_PER_TASK]) for k in range(0, len(paths), HEADS_PER_TASK)]
    found: list[list[R]] = [[] for _ in batches]
    for done in engine.map_chunks(
        client, task, batches, shared=shared, weight=len, desc=desc, unit="file"
    ):
        found[done.index] = done.result
    return [item for batch in found for item in batch]


def batches(heads: Sequence[Head], threads: int) -> list[range]:
    """Consecutive files (positions in `heads`) that one task reads: at least MIN_TASK_BYTES
    together, or, for a smaller archive, a worker thread's share of it where the files split
    evenly (EVEN_SPLIT), else a TASKS_PER_THREAD-th of that. A file of unknown size counts as a
    whole task's bytes (and makes the split uneven: its size is not known)."""
    threads = max(1, threads)
    share = sum(h.size or 0 for h in heads) / threads
    found = _cut(heads, min(MIN_TASK_BYTES, share))
    sizes = [sum(h.size or 0 for h in heads[r.start : r.stop]) for r in found]
    if all(h.size is not None for h in heads) and max(sizes, default=0) <= EVEN_SPLIT * share:
        return found
    return _cut(heads, min(MIN_TASK_BYTES, share / TASKS_PER_THREAD))


def _cut(heads: Sequence[Head], target: float) -> list[range]:
    """Consecutive files of at least `target` bytes together (the last run: what is left)."""
    found: list[range] = []
    start, held = 0, 0.0
    for k, head in enumerate(heads):
        held += target if head.size is None else head.size
        if held >= target:
            found.append(range(start, k + 1))
            start, held = k + 1, 0.0
    if start < len(heads):
        found.append(range(start, len(heads)))
    return found


def ports(heads: Sequence[Head]) -> list[list[Head]]:
    """Files grouped by port, each port's files in time order of their first packet (then
    path; files without packets last), ports in order of their first packet."""
    groups: dict[tuple, list[Head]] = {}
    for head in heads:
        groups.setdefault(head.port, []).append(head)

    def order(h: Head) -> tuple:
        return (h.first_ts_ns is None, h.first_ts_ns or 0, h.path)

    found = [sorted(group, key=order) for group in groups.values()]
    return sorted(found, key=lambda group: order(group[0]))


class _Fold:
    """Appends each port's partials in port order as they arrive, in any order: only those that
    come before their turn are held, so the driver holds about the tasks in flight, not the
    archive. A port whose partials cannot be appended exactly is marked for a second look."""

    def __init__(self, grouped: Sequence[Sequence[Head]], config: dict, demand: object) -> None:
        self.port_of = [k for k, port in enumerate(grouped) for _ in port]
        self.config, self.demand = config, demand
        self.waiting: dict[int, TracePartial] = {}
        self.turn = 0
        self.merged: list[TracePartial | None] = [None] * len(grouped)
        self.failed: set[int] = set()

    def add(self, index: int, partial: TracePartial) -> None:
        """The partial of chunk `index`; appended now if it is its turn."""
        self.waiting[index] = partial
        while self.turn in self.waiting:
            self._append(self.port_of[self.turn], self.waiting.pop(self.turn))
            self.turn += 1

    def _append(self, port: int, partial: TracePartial) -> None:
        total = self.merged[port]
        if port in self.failed:
            return
        if total is None:  # the port's first file
            self.merged[port] = partial
            return
        try:
            call(total.append, partial, self.config, self.demand)
        except UsageError:  # the files overlap in time (or were read by other rules)
            self.failed.add(port)
            self.merged[port] = None

    def result(self) -> list[TracePartial | None]:
        """Each port's partial, None where it must be summarised again (its files overlap, or
        its windows were not counted from its first packet)."""
        for port, total in enumerate(self.merged):
            try:
                if total is not None:
                    call(total.summary, self.config)
            except UsageError:  # windows not counted from the port's first packet
                self.merged[port] = None
        return self.merged


def _where(n: int, port: Sequence[Head]) -> dict:
    """The keys that name a port of an archive."""
    return {"port": n, "files": len(port), "first_file": port[0].path, "last_file": port[-1].path}


def _port_report(n: int, port: Sequence[Head], raw: dict, eth_gbps: float) -> dict:
    interfaces = [Interface(**i) for i in raw["interfaces"]]
    report = _report(port[0].path, raw, interfaces, eth_gbps)
    del report["file"]
    return _where(n, port) | report


def _port_partials(
    client: Client,
    files: Sequence[str],
    shared: tuple[dict, bool, bool, object],
    *,
    per_file: bool = False,
    read_ahead: bool | None = None,
) -> list[tuple[list[Head], TracePartial]]:
    """Each port (each file with `per_file`) and the partial of its files in port order: the
    steps of the module notes. Files are read ahead as `read_ahead` says, or (None) where
    every worker thread has READ_AHEAD_CORES cores."""
    config, skip_bad, strict, demand = shared
    if read_ahead is None:
        read_ahead = engine.cores_per_thread(client) >= READ_AHEAD_CORES
    # Absolute for workers that run in another folder; a file named twice is read once.
    given = {_absolute(f): f for f in files}
    found = [replace(h, path=given[h.path]) for h in _heads(client, list(given), skip_bad, strict)]
    grouped = [[h] for h in found] if per_file else ports(found)
    origins = [
        min((h.first_ts_ns for h in p if h.first_ts_ns is not None), default=0) for p in grouped
    ]
    placed = [(h, origin) for p, origin in zip(grouped, origins, strict=True) for h in p]
    tasks = batches([h for h, _ in placed], sum(client.nthreads().values()))
    chunks = [
        tuple((_absolute(h.path), origin) for h, origin in placed[r.start : r.stop]) for r in tasks
    ]
    fold = _Fold(grouped, config, demand)
    for done in engine.map_chunks(
        client,
        _partials_task,
        chunks,
        shared=(*shared, read_ahead),
        weight=len,
        desc="reading",
        unit="file",
    ):
        for k, partial in enumerate(done.result, tasks[done.index].start):
            fold.add(k, partial)
    merged = fold.result()
    redo = [k for k, partial in enumerate(merged) if partial is None]
    again = [tuple(_absolute(h.path) for h in grouped[k]) for k in redo]
    for redone in engine.map_chunks(
        client, _port_task, again, shared=shared, weight=len, desc="overlapping", unit="file"
    ):
        merged[redo[redone.index]] = redone.result
    return list(zip(grouped, [p for p in merged if p is not None], strict=True))


def archive_stats(
    client: Client,
    paths: Sequence[str],
    *,
    eth_gbps: float = 40,
    windows_ns: Sequence[int] = WINDOWS_NS,
    skip_bad: bool = False,
    strict: bool = False,
    read_ahead: bool | None = None,
) -> list[dict]:
    """`trace stats` of each port of an archive: the files of a port as if concatenated in
    time order, the same keys as one file's statistics without `file`, plus `port`, `files`,
    `first_file` and `last_file`. `read_ahead` forces the reading of files on a second thread
    on or off (None: on where every worker thread has READ_AHEAD_CORES cores); the result is
    the same either way."""
    config, files = _checked(paths, eth_gbps, windows_ns)
    found = _port_partials(client, files, (config, skip_bad, strict, None), read_ahead=read_ahead)
    return [
        _port_report(n, port, partial.summary(config), eth_gbps)
        for n, (port, partial) in enumerate(found)
    ]


def file_stats(
    client: Client,
    paths: Sequence[str],
    *,
    eth_gbps: float = 40,
    windows_ns: Sequence[int] = WINDOWS_NS,
    skip_bad: bool = False,
    strict: bool = False,
) -> list[dict]:
    """`trace stats` of each file, in order, one task per file: what `trace.stats_files`
    computes in this process."""
    config, files = _checked(paths, eth_gbps, windows_ns)
    found: list[dict] = [{}] * len(files)
    for done in engine.map_chunks(
        client,
        _stats_task,
        [_absolute(f) for f in files],
        shared=(config, skip_bad, strict, None),
        desc="trace stats",
        unit="file",
    ):
        found[done.index] = done.result
    return [
        _report(path, raw, [Interface(**i) for i in raw["interfaces"]], eth_gbps)
        for path, raw in zip(files, found, strict=True)
    ]


def _checked(
    paths: Sequence[str], eth_gbps: float, windows_ns: Sequence[int]
) -> tuple[dict, list[str]]:
    """The statistics config and the files, checked before any work; standard input cannot be
    read by a worker."""
    config = stats_config(eth_gbps, windows_ns)
    files = _check_inputs(paths)
    if "-" in files:
        raise UsageError("standard input (-) cannot be read by Dask workers; give files")
    return config, files


# --- PCIe demand of archives ------------------------------------------------------------------


def _require_ethernet(name: str, raw: dict) -> None:
    """Frames are priced as Ethernet frames: other link types have no size to price."""
    unknown = sorted({i["linktype"] for i in raw["interfaces"]} - set(LINK_HEADER_BYTES))
    if unknown and raw["packets"]:
        raise UsageError(
            f"{name}: link type {unknown[0]} has no Ethernet equivalent; the demand needs link "
            f"types {', '.join(map(str, LINK_HEADER_BYTES))}"
        )


def demand(
    client: Client,
    paths: Sequence[str],
    *,
    cost: object,
    profile: str,
    capacity_gbps: float,
    window_ns: int,
    per_file: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
) -> list[dict]:
    """The PCIe bandwidth each port (or each file, `per_file`) needs per window of `window_ns`
    from NIC `profile` on a link of `capacity_gbps`, every packet priced at its own frame
    size by `cost` (`nic.demand_cost`) at the time it was captured: mean (over the duration)
    and peak Gb/s per direction, and the windows above the link's capacity. Windows follow
    `trace stats`'s rule (from the first packet; peaks over whole windows; a last window that
    covers less, up to the last packet, is the tail, reported apart), across file boundaries."""
    require_positive("window", window_ns)
    config, files = _checked(paths, 40, WINDOWS_NS)
    found = _port_partials(client, files, (config, skip_bad, strict, cost), per_file=per_file)
    out = []
    for n, (port, partial) in enumerate(found):
        raw = partial.summary(config)
        name = port[0].path if per_file else f"port {n} ({port[0].path} ...)"
        _require_ethernet(name, raw)
        try:
            d = call(partial.demand, cost)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}") from None
        packets = raw["packets"]
        span = raw["last_ts_ns"] - raw["first_ts_ns"] if packets else 0
        where = {"file": port[0].path} if per_file else _where(n, port)
        out.append(
            where
            | {
                "profile": profile,
                "packets": packets,
                "mean_frame_bytes": d["frame_bytes"] / packets if packets else None,
                "duration_s": span / NS_PER_S,
                "window_ns": window_ns,
                "windows": d["windows"],
                "full_windows": d["full_windows"],
                "capacity_gbps": capacity_gbps,
                "mean_up_gbps": d["bytes_up"] * 8 / span if span else None,
                "mean_down_gbps": d["bytes_down"] * 8 / span if span else None,
                # peaks over whole windows only (none: the capture is shorter than one)
                "peak_up_gbps": d["peak_up_gbps"] if d["full_windows"] and span else None,
                "peak_down_gbps": d["peak_down_gbps"] if d["full_windows"] and span else None,
                "windows_over_capacity": d["windows_over_capacity"] if span else 0,
                "fits": not span or d["windows_over_capacity"] == 0,
                "tail_ns": d["tail_ns"],
                "tail_up_gbps": d["tail_up_gbps"] if d["tail_ns"] else None,
                "tail_down_gbps": d["tail_down_gbps"] if d["tail_ns"] else None,
            }
        )
    return out

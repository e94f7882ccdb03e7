"""`trace merge --scheduler` (issue 17): the merge of many captures cut into time ranges that
Dask workers merge (each range from every input, in time order) and this process concatenates;
the output is the single-process merge's, byte for byte (docs/scale.md)."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf import engine, outputs
from pcieperf._native import checked, core
from pcieperf.errors import TraceFileError, UsageError
from pcieperf.net.archive import _batched, is_url
from pcieperf.net.trace.files import INT64_MAX, INT64_MIN
from pcieperf.net.trace.rewrite import (
    _check_inputs,
    _check_output,
    _write_atomically,
    output_format,
)

if TYPE_CHECKING:
    from distributed import Client

MERGE_PARTS_PER_WORKER = 4
"""Time ranges per worker thread of a partitioned merge: parts of unequal cost still keep every
worker busy until the last wave (docs/scale.md)."""


def _scan_task(shared: tuple[bool, bool], paths: tuple[str, ...]) -> list[dict]:
    skip_bad, strict = shared
    found = core().trace_scan(list(paths), skip_bad, strict)
    return [checked(item) for item in found]


def _merge_part_task(
    shared: tuple[list[str], str, bool, bool], chunk: tuple[str, int, int, list[bool]]
) -> dict:
    inputs, fmt, skip_bad, strict = shared
    part, from_ns, to_ns, selected = chunk
    return core().trace_merge_part(inputs, part, fmt, from_ns, to_ns, selected, skip_bad, strict)


def _expected_before(t: int, scans: Sequence[dict]) -> float:
    """Packets expected before time `t` if each input's packets spread evenly over its span."""
    total = 0.0
    for s in scans:
        if not s["packets"] or t <= s["first_ns"]:
            continue
        span = s["last_ns"] - s["first_ns"]
        total += s["packets"] * (
            1.0 if t > s["last_ns"] or span == 0 else (t - s["first_ns"]) / span
        )
    return total


def time_ranges(scans: Sequence[dict], parts: int) -> list[tuple[int, int]]:
    """[from, to) ranges, in time order, each expected to hold about 1/parts of the packets;
    the first starts at the smallest int64, the last ends at the largest (to the end)."""
    spans = [(s["first_ns"], s["last_ns"]) for s in scans if s["packets"]]
    if not spans:
        return [(INT64_MIN, INT64_MAX)]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    total = sum(s["packets"] for s in scans)
    bounds = [INT64_MIN]
    for j in range(1, parts):
        a, b = lo, hi
        while a < b:  # the first time with at least j/parts of the packets before it
            mid = (a + b) // 2
            if _expected_before(mid, scans) < total * j / parts:
                a = mid + 1
            else:
                b = mid
        if a > bounds[-1]:
            bounds.append(a)
    bounds.append(INT64_MAX)
    return list(itertools.pairwise(bounds))


def merge(
    client: Client,
    inputs: Sequence[str],
    output: str,
    *,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
    parts: int | None = None,
) -> dict:
    """`trace.merge` cut into time ranges merged by the workers and concatenated here: the
    output is byte for byte `trace.merge`'s. Every input is first scanned for its time span;
    where one is not in time order or defines an interface after its first packet, the merge
    is one range. Workers write the parts into a temporary folder beside `output`, so they
    must see that folder; it is removed whatever happens (a stopped or failed run's, by the
    next run to the same output once its process is gone: `outputs.temporary_beside`)."""
    fmt = output_format(output)
    paths = _check_inputs(inputs)
    if not paths:
        raise UsageError("merge needs at least one input capture")
    if "-" in paths:
        raise UsageError("standard input (-) cannot be read by Dask workers; give files")
    remote = next((p for p in paths if is_url(p)), None)
    if remote:
        raise UsageError(f"{remote}: trace merge reads local files only; copy it first")
    _check_output(output, paths, force)
    absolute = [os.path.abspath(p) for p in paths]
    scans = _batched(client, _scan_task, absolute, (skip_bad, strict), "scanning")
    workers = max(1, sum(client.nthreads().values()))
    count = parts or MERGE_PARTS_PER_WORKER * workers
    mergeable = all(s["in_order"] and s["interfaces_up_front"] for s in scans)
    ranges = time_ranges(scans, count if mergeable else 1)
    folder = outputs.temporary_beside(os.path.abspath(output))  # the parts' own
    with outputs.os_errors(Path(output)):
        folder.mkdir()
    names = [str(folder / f"{k:05d}") for k in range(len(ranges) + 1)]
    chunks = [(names[0], INT64_MIN, INT64_MAX, [False] * len(paths))]  # header only
    chunks += [
        (
            name,
            a,
            b,
            [bool(s["packets"]) and s["first_ns"] < b and s["last_ns"] >= a for s in scans],
        )
        for name, (a, b) in zip(names[1:], ranges, strict=True)
    ]
    try:
        results: list[dict] = [{}] * len(chunks)
        for done in engine.map_chunks(
            client,
            _merge_part_task,
            chunks,
            shared=(absolute, fmt, skip_bad, strict),
            desc="merging",
            unit="range",
        ):
            results[done.index] = done.result
        written = _write_atomically(output, force, lambda tmp: _concatenate(names, tmp))
    finally:
        outputs.discard(folder, output)
    return {
        "packets": sum(r["packets"] for r in results[1:]),
        "interfaces": results[0]["interfaces"],
        "out_of_order": sum(r["out_of_order"] for r in results[1:]),
        "skipped": sum(s["skipped"] for s in scans),
        "truncated": sum(s["cut_short"] for s in scans),
        "writes": sum(r["writes"] for r in results),
        "bytes": written["bytes"],
        "ranges": len(ranges),
    }


def _concatenate(names: Sequence[str], out: Path) -> dict:
    """Writes the header part, then every range's part without its header, into `out`."""
    header = Path(names[0]).read_bytes()
    with out.open("wb") as dst:
        dst.write(header)
        for name in names[1:]:
            with open(name, "rb") as src:
                if src.read(len(header)) != header:
                    raise TraceFileError(f"{name}: a part does not start with the header")
                shutil.copyfileobj(src, dst, 1 << 20)
    return {"bytes": out.stat().st_size}

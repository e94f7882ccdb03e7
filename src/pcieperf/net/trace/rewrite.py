"""Writing captures: merging several in time order (or concatenating them), and converting one
to ns pcap or pcapng, streamed by the Rust core and renamed onto the output only once
complete."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pcieperf._native import core
from pcieperf.errors import TraceFileError, UsageError, require_new_file
from pcieperf.outputs import written

FORMATS = ("pcap", "pcapng")


def output_format(path: str | os.PathLike) -> str:
    """The output format (pcap or pcapng), from the output file's suffix."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise UsageError(f"output {os.fspath(path)!r} must end in .pcap or .pcapng")
    return suffix


def _check_output(
    output: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]], force: bool
) -> None:
    out = Path(output)
    same = os.path.realpath  # not Path.resolve: it raises RuntimeError on a symbolic link loop
    if any(i != "-" and same(out) == same(i) for i in (os.fspath(p) for p in inputs)):
        raise UsageError(f"output {os.fspath(output)!r} is also an input; choose another name")
    require_new_file(out, force)


def _write_atomically(
    output: str | os.PathLike, force: bool, write: Callable[[Path], dict]
) -> dict:
    with written(output, force) as tmp:
        try:
            return write(tmp)
        except TraceFileError as exc:  # name the file the user asked for, not the temporary
            raise TraceFileError(str(exc).replace(str(tmp), os.fspath(output))) from None


def _check_inputs(inputs: Sequence[str | os.PathLike]) -> list[str]:
    """Input paths as strings; standard input (`-`) can be read once only."""
    paths = [os.fspath(p) for p in inputs]
    if paths.count("-") > 1:
        raise UsageError("standard input (-) can be given once only")
    return paths


def merge(
    inputs: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
    append: bool = False,
) -> dict:
    """Merge captures into `output` (.pcap or .pcapng) in timestamp order, stable for equal
    timestamps, or with `append` write them one after another in the order given (mergecap
    -a); pcapng output keeps one interface per input interface. Inputs are streamed: memory
    does not grow with their size. `truncated` counts inputs cut short (everything before the
    cut is merged) unless `strict` makes that an error."""
    if not inputs:
        raise UsageError("merge needs at least one input capture")
    fmt = output_format(output)
    paths = _check_inputs(inputs)
    _check_output(output, paths, force)
    return _write_atomically(
        output,
        force,
        lambda tmp: core().trace_merge(paths, os.fspath(tmp), fmt, skip_bad, strict, append),
    )


def convert(
    source: str | os.PathLike,
    output: str | os.PathLike,
    *,
    shift_ns: int = 0,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
) -> dict:
    """Rewrite a capture as ns pcap or pcapng (by suffix), packet for packet, interfaces and
    their names kept, every time moved by `shift_ns`; streamed like `merge`."""
    fmt = output_format(output)
    (path,) = _check_inputs([source])
    _check_output(output, [path], force)
    return _write_atomically(
        output,
        force,
        lambda tmp: core().trace_convert(
            path, os.fspath(tmp), fmt, skip_bad=skip_bad, strict=strict, shift_ns=shift_ns
        ),
    )

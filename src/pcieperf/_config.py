"""One TOML loader for every file pcieperf reads as configuration: NIC profiles, device and host
profiles, calibration files, platforms and sweep specs (issue 16).

Each kind names its file in its own words (a `label`: "spec x.toml", "profile p.toml", or just
the path); the loader turns every I/O, encoding and syntax problem into one line that starts
with that label, so all kinds fail alike:

    cannot read LABEL: REASON            UsageError (missing, unreadable, a folder)
    LABEL: not UTF-8 text (byte N: ...)  ProfileError
    LABEL: not valid TOML: DETAIL        ProfileError

May import: errors, _cache.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from pcieperf._cache import cached
from pcieperf.errors import ProfileError, UsageError, unreadable

MAX_TEXT_BYTES = 16 << 20  # the largest shipped file is a few KiB; /dev/zero never ends
CACHED_TEXT_CHARS = 1 << 20  # texts kept parsed (`_tables`): shipped files are a few KiB


def read_bounded(
    path: Path, label: str | None = None, limit: int = MAX_TEXT_BYTES, expected: str = "a few KiB"
) -> bytes:
    """A text file's bytes (a configuration, a host fact, a counter export), read up to `limit`:
    an endless or huge file is refused in one line, not read into memory."""
    where = str(path) if label is None else label
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise unreadable(where, exc) from None
    if len(data) > limit:
        raise UsageError(
            f"{where} is larger than {limit >> 20} MiB; it should be text of {expected} "
            "(is it the right file?)"
        )
    return data


def read_text(path: Path, label: str | None = None) -> str:
    """A configuration file's text (UTF-8: TOML v1.0.0 "Spec" says a TOML file must be UTF-8),
    bounded as `read_bounded` reads it."""
    where = str(path) if label is None else label
    data = read_bounded(path, where)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def loads_toml(text: str, label: str) -> dict[str, Any]:
    """Parse TOML text; a syntax error becomes one line naming `label`. Each caller gets its
    own tables: a text parsed before comes from `_tables` as a copy."""
    try:
        if len(text) > CACHED_TEXT_CHARS:
            return tomllib.loads(text)
        return copy.deepcopy(_tables(text))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{label}: not valid TOML: {exc}") from None


@cached(32)
def _tables(text: str) -> dict[str, Any]:
    """A TOML text's tables, parsed once per process (shared: `loads_toml` copies them). An
    `iommu sim` point loads some 12 calibration and platform files, a sweep thousands of points
    the same few (8 ms a point parsed each time, 2 ms parsed once)."""
    return tomllib.loads(text)


def load_toml(path: Path, label: str | None = None) -> dict[str, Any]:
    """Read and parse a TOML file; errors name `label` (the path where none is given)."""
    where = str(path) if label is None else label
    return loads_toml(read_text(path, where), where)

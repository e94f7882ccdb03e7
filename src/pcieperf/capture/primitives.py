"""A machine's probe: the primitives a capture path's CPU costs are made of (a cache line's
round trip between two CPUs, a ring's item on one CPU and between two, a byte copied warm and
cold, a `write` call into each sink), each the median of several repeats with their lowest and
highest, as `pcieperf capture probe` measures them (`capture.probe`), a calibration records
them for the machine its runs came from, and `capture.travel` scales costs by them. Read and
checked here (one line naming the key), written as one JSON or TOML table."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pcieperf.capture.path import MODEL_SINKS
from pcieperf.errors import ProfileError, is_number

PRIMITIVES = {
    "round_trip_ns": "ns per round trip of a cache line between two CPUs",
    "ring_ns": "ns per item through a ring from one CPU to another",
    "ring_local_ns": "CPU ns per item through a ring on one CPU, bursts of 32",
    "copy_warm_ns_per_byte": "CPU ns per byte copied from lines in L1",
    "copy_cold_ns_per_byte": "CPU ns per byte copied from lines no longer cached",
    **{
        f"write_{sink}_ns": f"CPU ns per write call of a record into {sink}" for sink in MODEL_SINKS
    },
}
"""Each primitive's key and what it is, with its unit."""


def write_key(sink: str) -> str:
    """The primitive of a `write` call into `sink`."""
    return f"write_{sink}_ns"


@dataclass(frozen=True)
class Spread:
    """A primitive's median over the probe's repeats, with the lowest and highest."""

    median: float
    low: float
    high: float


@dataclass(frozen=True)
class Probe:
    """The primitives measured on one kind of machine (CPU model and count); a primitive the
    machine gave no answer for (a ring or round trip without real-time priority) is absent."""

    cpu_model: str
    cpus: int
    repeats: int
    primitives: dict[str, Spread]

    @property
    def kind(self) -> tuple[str, int]:
        """The kind of machine probed (`capture.machine.Machine.kind`)."""
        return (self.cpu_model, self.cpus)

    def table(self) -> dict[str, object]:
        """As JSON or a TOML inline table writes it: each primitive [median, low, high]."""
        spreads = {k: [s.median, s.low, s.high] for k, s in self.primitives.items()}
        return {"cpu_model": self.cpu_model, "cpus": self.cpus, "repeats": self.repeats} | spreads


def probe_of(table: object, origin: str) -> Probe:
    """A probe from its table (`Probe.table`), every value checked: one line naming the key."""
    if not isinstance(table, Mapping):
        raise ProfileError(f"{origin}: the probe is {table!r}; give a table")
    model = table.get("cpu_model")
    if not isinstance(model, str) or not model:
        raise ProfileError(f"{origin}: probe cpu_model = {model!r}; give the CPU model's text")
    whole = {key: _whole(table.get(key)) for key in ("cpus", "repeats")}
    for key, value in whole.items():
        if value is None:
            raise ProfileError(
                f"{origin}: probe {key} = {table.get(key)!r}; give a whole number >= 1"
            )
    unknown = sorted(set(table) - {"cpu_model", "cpus", "repeats", *PRIMITIVES})
    if unknown:
        raise ProfileError(f"{origin}: probe key {unknown[0]!r} is unknown; use {list(PRIMITIVES)}")
    return Probe(
        model,
        whole["cpus"] or 0,
        whole["repeats"] or 0,
        {k: _spread(table[k], f"{origin}: probe {k}") for k in PRIMITIVES if k in table},
    )


def _whole(value: object) -> int | None:
    """A whole number from 1 to 2**20, None for anything else."""
    if isinstance(value, int | float) and is_number(value, 1, 2**20) and value % 1 == 0:
        return int(value)
    return None


def _spread(value: object, where: str) -> Spread:
    """[median, low, high]: positive, finite, low <= median <= high."""
    found = value if isinstance(value, list) and len(value) == 3 else []
    if len(found) == 3 and all(is_number(v, 0, 1e9) for v in found):
        median, low, high = (float(v) for v in found)
        if 0 < low <= median <= high:
            return Spread(median, low, high)
    raise ProfileError(
        f"{where} = {value!r} is not allowed; give [median, low, high], 0 < low <= median <= high"
    )


def probe_folder(db: str | os.PathLike[str] | None) -> Path:
    """The folder the store `db` is in (default: the user's store's), where probes are kept."""
    from pcieperf.measure.store import default_db_path

    return Path(db).parent if db is not None else default_db_path().parent


def cache_file(folder: Path, kind: tuple[str, int]) -> Path:
    """Where a kind of machine's probe is kept in `folder` (the store's): its name says the
    CPU count and a digest of the CPU model."""
    digest = hashlib.sha256(kind[0].encode()).hexdigest()[:12]
    return folder / "probes" / f"probe-{kind[1]}cpu-{digest}.json"


def cached(folder: Path, kind: tuple[str, int]) -> Probe | None:
    """The probe kept for `kind` in `folder`, None if there is none (or another kind's, or a
    damaged one: it is measured again)."""
    path = cache_file(folder, kind)
    try:
        found = probe_of(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError, ProfileError):
        return None
    return found if found.kind == kind else None


def ratio(here: Probe, there: Probe, key: str) -> tuple[float, float, float] | None:
    """The primitive `key` here over there: (median, lowest, highest) over both probes'
    spreads; None where either has no answer for it."""
    if key not in here.primitives or key not in there.primitives:
        return None
    a, b = here.primitives[key], there.primitives[key]
    found = (a.median / b.median, a.low / b.high, a.high / b.low)
    return found if all(math.isfinite(r) and r > 0 for r in found) else None

"""Which IIO stack (root port) of a counter file to explain or fit: each stack named once
(`stack_key`: its socket first, where the file has sockets), and the one the user asked for or
the one that carries traffic (`choose_stack`, `pick_stack`: the rule `explain`, `iommu fit` and
a stored import share)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pcieperf.errors import UsageError, param
from pcieperf.measure.counters.samples import BYTES_PER_S, Samples


def stack_key(socket: int | None, stack: str) -> str:
    """A stack's name in explain's output: its socket first, where the file has sockets."""
    return stack if socket is None else f"socket {socket}: {stack}"


@dataclass(frozen=True)
class StackIndex:
    """Each sample's stack as a small integer, and the stacks' names: one pass over the file's
    samples, then numpy."""

    names: list[str]
    ids: NDArray[np.int64]

    @classmethod
    def of(cls, samples: Samples) -> StackIndex:
        """Number the (socket, stack) pairs in order of appearance."""
        # dict and map walk the rows in C: a generator took 22 ms of an `explain` (57 600 rows)
        pairs = dict.fromkeys(zip(samples.socket, samples.stack, strict=True))
        number = {pair: i for i, pair in enumerate(pairs)}
        rows = map(number.__getitem__, zip(samples.socket, samples.stack, strict=True))
        ids = np.fromiter(rows, dtype=np.int64, count=len(samples))
        return cls([stack_key(*pair) for pair in number], ids)


def choose_stack(samples: Samples, wanted: str | None, index: StackIndex | None = None) -> str:
    """The stack to explain: the one matching `wanted`, else the only one carrying traffic."""
    index = index or StackIndex.of(samples)
    known = sorted(index.names)
    busy: list[str] = []  # the busy ones found only where they decide
    if needs_traffic(known, wanted):
        moving = (np.asarray(samples.value) != 0) & (np.asarray(samples.unit) == BYTES_PER_S)
        # Counted, not np.unique: its first call loads numpy.ma (~10 ms of an `explain`).
        traffic = np.bincount(index.ids[moving], minlength=len(index.names))
        busy = sorted(index.names[i] for i in np.flatnonzero(traffic))
    return pick_stack(known, busy, wanted, samples.file)


def pick_stack(known: list[str], busy: list[str], wanted: str | None, file: str) -> str:
    """`choose_stack` from the stacks' names and those carrying traffic (sorted, `stack_key`)."""
    if wanted is not None:
        matches = _matching(known, wanted)
        if len(matches) > 1:
            matches = [k for k in matches if k in busy] or matches
        if len(matches) != 1:
            raise UsageError(
                f"{param('stack')} {wanted!r} matches {len(matches)} of the file's stacks; choose "
                "one of: " + "; ".join(known)
            )
        return matches[0]
    if len(busy) != 1:
        raise UsageError(
            f"{file} has traffic on {len(busy)} stacks; choose one with {param('stack')}: "
            + "; ".join(busy or known)
        )
    return busy[0]


def needs_traffic(known: list[str], wanted: str | None) -> bool:
    """Whether `pick_stack` needs the stacks carrying traffic: it picks by traffic where no
    stack is asked for, or one whose name several contain (else a store need not sum it)."""
    return wanted is None or len(_matching(known, wanted)) > 1


def _matching(known: list[str], wanted: str) -> list[str]:
    """The stacks `--stack wanted` names: those whose name contains it."""
    return [k for k in known if wanted in k]

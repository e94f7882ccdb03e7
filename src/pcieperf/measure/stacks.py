"""Which IIO stack (root port) of a counter file to explain or fit, and what is read of it: each
stack named once (`stack_key`: its socket first, where the file has sockets), the one the user
asked for or the one that carries traffic (`pick_stack`: the rule `explain`, `iommu fit` and
a stored import share), and that stack's counters over time (`StackCounters`, which the store
sums up: a counter file of any size is read in bounded memory)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf.errors import UsageError, param

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def stack_key(socket: int | None, stack: str) -> str:
    """A stack's name in explain's output: its socket first, where the file has sockets."""
    return stack if socket is None else f"socket {socket}: {stack}"


@dataclass(frozen=True)
class Series:
    """One metric of a stack over time (summed over its parts at each sample time)."""

    metric: str
    unit: str
    t_s: NDArray[np.float64]
    value: NDArray[np.float64]


@dataclass(frozen=True)
class StackCounters:
    """One stack's counters: each metric over time (`Series`, by name), the stack's name
    (`stack_key`), and the file and tool they come from."""

    file: str
    source: str
    stack: str
    series: dict[str, Series]


def pick_stack(known: list[str], busy: list[str], wanted: str | None, file: str) -> str:
    """The stack to explain or fit, from the stacks' names and those carrying traffic (sorted,
    `stack_key`): the one matching `wanted`, else the only one carrying traffic."""
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

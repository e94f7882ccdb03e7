"""The bounds a NIC's packet rate meets, by name and code: Ethernet, PCIe up and down, and the
device's read tags (`BOTTLENECKS`, whose index is a `bottleneck_code`), and the order of the
near ones (`limit_order` of a `limited_by_code`), for results and sweeps to share."""

from __future__ import annotations

import itertools

from pcieperf._cache import cached

ETHERNET, PCIE_UP, PCIE_DOWN, READ_REQUESTS = 0, 1, 2, 3
"""`bottleneck_code` values (uint8 in arrays): which bound sets a row's rate."""

BOTTLENECKS = ("ethernet", "pcie_up", "pcie_down", "read_requests")
"""Names of the `bottleneck_code` values, and the bounds `limited_by` names."""

NEAR_LIMIT = 0.01  # a bound within 1 % of the achieved rate is named as a limit too

KEEPS_UP = 1e-12
"""PCIe within this fraction of line rate keeps up: Ethernet is named the bottleneck."""


PAIRS = tuple(
    (BOTTLENECKS.index(a), BOTTLENECKS.index(b))
    for a, b in itertools.combinations(sorted(BOTTLENECKS), 2)
)
"""Pairs of bounds, each (a, b) with a's name first alphabetically: bit `len(BOTTLENECKS) + k`
of a `limited_by_code` says whether pair k's a <= b."""


@cached(1 << 10)  # every code: 4 near bits and 6 pair bits
def limit_order(code: int) -> tuple[str, ...]:
    """`limited_by` of a `limited_by_code`: the near bounds (bit i: BOTTLENECKS[i] is near) in
    ascending order by value then name (the pair bits, `PAIRS`)."""
    bounds = len(BOTTLENECKS)
    near = [i for i in range(bounds) if code >> i & 1]
    first = {}  # (a, b) -> whether a comes before b
    for k, (a, b) in enumerate(PAIRS):
        first[(a, b)] = bool(code >> (bounds + k) & 1)
        first[(b, a)] = not first[(a, b)]
    rank = {n: sum(first[(m, n)] for m in near if m != n) for n in near}
    return tuple(BOTTLENECKS[n] for n in sorted(near, key=lambda n: (rank[n], BOTTLENECKS[n])))

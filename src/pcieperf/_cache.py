"""The package's one caching mechanism: `cached`, `functools.lru_cache` on a function whose
arguments are its whole key (hashable, and complete: everything the result depends on), and
`ArrayKey`, how an array takes part in such a key.

What is cached, by what key, and why (a sweep prices one point per call, and most of what a
point costs is shared with its neighbours):
- `pcie.tlp._priced_sizes`: a DMA's TLPs and wire bytes per size, by (`TlpRules`, operation,
  offset, sizes): links that differ only in speed share them, and only the rate is per link.
- `nic.pricing`: a NIC profile's operations planned at some sizes, by (profile, sizes)
  (`_plan`); their TLP terms on one set of `TlpRules` (`_terms`); their sums per choice of
  paths (`_sums`, rx+tx going on from rx) and per-packet totals (`_packet_costs`), by
  (profile, sizes, rules, paths). A size is a Python int (a command line's few) or an
  `ArrayKey`.
- `nic.rows`: rows checked and sorted by frame sizes (`fixed_rows`), and what a port gives
  each row (`line_rates`), by (rows, port).
- `pcie.tlp.link_rules`: a link's rules and TLP byte rate, by link (derived anew at every
  attribute access of a `Link`).
- `nic.api._profile_once`, `nic.host.assumed_host`, `nic.bounds`: files read once.
- `_config._tables`: a TOML text's tables, by the text (files are still read: an edited file
  is a new text); `load_toml` hands out copies.
- `pciebench.calibration_file._calibration` and `iommu.profiles._profile`: a calibration and a
  platform profile parsed, by the file's text (and the calibration's time and size, for a
  profile whose parameters come `from` it): an `iommu sim` point reads them three and two times.
- `iommu.model`: a port's run without IOMMU and its limits, by (platform, traffic, run length,
  `Model._key`), in a `_Reference`, and its costs per packet, by (platform, traffic,
  `pricing_key`), in a `_Priced`, each filled by the first model to need it: a sweep's points
  along rxd or page share them.
Every cache is bounded; what it returns is shared, so arrays in it are read-only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from pcieperf._numpy import np

F = TypeVar("F", bound=Callable[..., Any])
_HASHED = 8  # values from each end of an array that its hash takes


def cached(entries: int) -> Callable[[F], F]:
    """Keep the last `entries` results of the decorated function by its arguments (thread-safe:
    sweeps price on several threads)."""
    return functools.lru_cache(maxsize=entries)  # type: ignore[return-value] # same signature


class ArrayKey:
    """An array as part of a cache key: equal to another where the values, dtype and shape
    are, hashed from its shape and a few values at each end (equality decides, and costs one
    comparison where a hash of every value would cost more than the pricing it saves).
    The array must not change: the key keeps a read-only one (`own`)."""

    __slots__ = ("_hash", "array")

    def __init__(self, array: NDArray[Any]) -> None:
        self.array = array
        ends = (array[:_HASHED].tobytes(), array[-_HASHED:].tobytes()) if array.ndim else ()
        self._hash = hash((array.shape, array.dtype.str, *ends))

    def own(self) -> NDArray[Any]:
        """The array, as a read-only copy where it was writeable (call it where the key is
        kept: in a cached function, which runs only for a key not kept yet)."""
        if self.array.flags.writeable:
            self.array = np.array(self.array)
            self.array.flags.writeable = False
        return self.array

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayKey):
            return NotImplemented
        mine, theirs = self.array, other.array
        same_kind = mine.dtype == theirs.dtype and mine.shape == theirs.shape
        return mine is theirs or (same_kind and bool(np.array_equal(mine, theirs)))

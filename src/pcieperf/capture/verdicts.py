"""What a capture run's own measurements say about it, one rule each, for every command that
judges a run (`capture run`, `capture show`, `capture calibrate`): whether its capture thread
had CPU to spare, and whether its consumer was the limit."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

SATURATED = 1e-3  # a run that lost more than 0.1 % of its copies had its consumer saturated...
SLEPT_PER_S = 100.0
"""...unless its capture thread slept this often per second or more: dumpcap with copies to
spare slept 286-8419 times a second in 180 runs here, a saturated one 0.25-68 times (blocking
calls), dpdk-pdump (which polls without sleeping) 0.25-1.4 (docs/capture.md)."""


def slept(sleeps_per_s: NDArray[np.float64] | float) -> NDArray[np.bool_]:
    """Whether a capture thread that slept this often had CPU to spare (SLEPT_PER_S; NaN,
    not measured: no)."""
    return np.asarray(sleeps_per_s, dtype=np.float64) >= SLEPT_PER_S

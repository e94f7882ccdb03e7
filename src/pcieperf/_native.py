"""Access to the Rust extension `pcieperf._core`, with a clear error when it was not built."""

from __future__ import annotations

from types import ModuleType

from pcieperf.errors import PcieperfError


def core() -> ModuleType:
    """Return `pcieperf._core`, or explain how to build it."""
    try:
        from pcieperf import _core
    except ImportError as exc:  # pragma: no cover - only without a build
        raise PcieperfError(
            "the Rust extension pcieperf._core is missing; install the package with "
            "`python3 -m pip install .` (needs a Rust toolchain)"
        ) from exc
    return _core

"""numpy, imported when one of its attributes is first used: `--help`, `link`, `dma` and `nic`
with a command line's few sizes start without it (tests/test_startup_footprint.py; numpy is
~60-100 ms of a 120 ms start-up). pcieperf's own modules are all imported statically."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING


def _lazily_imported_numpy() -> ModuleType:
    """The numpy module as imported now if it already is, else as importlib's LazyLoader
    registers it."""
    if "numpy" in sys.modules:
        return sys.modules["numpy"]
    spec = importlib.util.find_spec("numpy")
    if spec is None or spec.loader is None:
        raise ImportError("no module named 'numpy'")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    lazy = importlib.util.module_from_spec(spec)
    sys.modules["numpy"] = lazy
    loader.exec_module(lazy)
    return lazy


if TYPE_CHECKING:  # type checkers read numpy's own types; at run time the lazy handle
    import numpy as np
else:
    np = _lazily_imported_numpy()


def in_use() -> bool:
    """Whether numpy has really been imported (registered lazily and never used, it has not):
    the models price a few sizes with Python ints until then."""
    return type(sys.modules.get("numpy")).__name__ not in ("_LazyModule", "NoneType")

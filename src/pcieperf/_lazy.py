"""Modules imported on first use: the capture commands start without numpy, duckdb or
matplotlib, which take most of a light command's start-up time and memory (docs/trace.md)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def module(name: str) -> ModuleType:
    """`name`, imported now if it already is, else when one of its attributes is first used
    (importlib's LazyLoader)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    lazy = importlib.util.module_from_spec(spec)
    sys.modules[name] = lazy
    loader.exec_module(lazy)
    return lazy


def loaded(name: str) -> bool:
    """Whether module `name` has been imported and run (one that `module` registered and
    nothing has used yet has not)."""
    found = sys.modules.get(name)
    return found is not None and type(found).__name__ != "_LazyModule"

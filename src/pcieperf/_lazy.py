"""Modules imported on first use: the capture commands start without numpy, duckdb or
matplotlib, which take most of a light command's start-up time and memory (docs/trace.md)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import inspect


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


class _CallablePackage(ModuleType):
    """A package that is also the API function of its name (`pp.nic(...)`, `pp.report(...)`):
    called, it calls the function `_api()` returns, and shows that function's signature."""

    _api: Callable[[], Callable[..., object]]

    def __call__(self, **options: object) -> object:
        """The API function, with these keywords."""
        return self._api()(**options)

    @property
    def __signature__(self) -> inspect.Signature:
        """`inspect.signature(pp.nic)` (editors, notebooks' tooltips): the function's."""
        import inspect  # here: it costs every command's start-up otherwise

        return inspect.signature(self._api())


def callable_package(name: str, api: Callable[[], Callable[..., object]]) -> None:
    """Make the package `name` callable as the function `api()` returns (imported on the
    call, so that importing the package stays light)."""
    package = sys.modules[name]
    package.__class__ = _CallablePackage
    package._api = api  # type: ignore[attr-defined]

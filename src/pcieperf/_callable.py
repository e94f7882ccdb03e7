"""Packages that are also the API function of their name (`pp.nic(...)`, `pp.report(...)`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import inspect


class _CallablePackage(ModuleType):
    """A package that, called, calls the function `_api()` returns, and shows that function's
    signature."""

    _api: Callable[[], Callable[..., object]]

    def __call__(self, *args: object, **options: object) -> object:
        """The API function, with these arguments (`pp.sweep` takes two positional ones)."""
        return self._api()(*args, **options)

    @property
    def __signature__(self) -> inspect.Signature:
        """`inspect.signature(pp.nic)` (editors, notebooks' tooltips): the function's."""
        import inspect  # here: it costs every command's start-up otherwise

        return inspect.signature(self._api())


def callable_package(name: str, api: Callable[[], Callable[..., object]]) -> None:
    """Make the package `name` callable as the function `api()` returns (`api` imports it on
    the call, so that importing the package stays light)."""
    package = sys.modules[name]
    package.__class__ = _CallablePackage
    package._api = api  # type: ignore[attr-defined]  # set on the module object here

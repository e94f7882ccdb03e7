"""API functions that hand their keyword arguments on (`**options` to `pp.iommu.inputs`,
`**link_options` to `pp.make_link`): `forwards` gives such a function the signature of every
keyword it takes (what `help()`, `inspect.signature` and docs/api.md show) and refuses a keyword
none of them takes in the function's own name, listing the ones it takes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def forwards(*targets: Callable[..., Any], skip: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorate a function whose `**options` go to `targets`: its signature becomes its own
    parameters and then the targets' keywords (less `skip`, which it sets itself)."""
    import inspect  # here: the light commands' modules (link, dma) do not use `forwards`

    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)

    def decorate(function: F) -> F:
        own = inspect.signature(function)
        kept = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
        names = {p.name for p in kept} | set(skip)
        for target in targets:
            for p in inspect.signature(target).parameters.values():
                if p.kind in named and p.name not in names:
                    kept.append(p.replace(kind=p.KEYWORD_ONLY))
                    names.add(p.name)
        signature = own.replace(parameters=kept)
        allowed = [p.name for p in kept]

        @functools.wraps(function)
        def checked(*args: Any, **options: Any) -> Any:
            for name in options:
                if name not in signature.parameters:
                    raise TypeError(unknown_keyword(_public(function), name, allowed))
            return function(*args, **options)

        checked.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect
        return checked  # type: ignore[return-value]  # the same call, checked first

    return decorate


PUBLIC = {"iommu_fit": "pp.iommu.fit"}
"""API functions that `pp` names otherwise than `pp.<name>` (and the `pp.iommu` namespace's)."""


def _public(function: Callable[..., Any]) -> str:
    """How a user calls `function`: `pp.iommu.sim`, `pp.iommu.fit`, else `pp.<name>`."""
    space = "iommu." if function.__module__ == "pcieperf.iommu.api" else ""
    return PUBLIC.get(function.__name__, f"pp.{space}{function.__name__}")


def unknown_keyword(function: str, name: str, allowed: list[str]) -> str:
    """The message for a keyword `function` does not take: the nearest it does, and all."""
    import difflib  # only for the message

    near = difflib.get_close_matches(name, allowed, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return (
        f"{function}() got an unexpected keyword argument {name!r}{hint}; it takes "
        f"{', '.join(allowed)}"
    )

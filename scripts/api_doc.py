"""Writes docs/api.md's headings from the code: each `### `pp.NAME(...)`` heading becomes the
signature `inspect.signature` gives for `pp.NAME` (parameters, defaults, return type), so that
the documented signatures are the real ones. `python scripts/api_doc.py` rewrites them; `--check`
only says which differ (exit 1; tests/test_api_docs.py runs it)."""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

import pcieperf as pp
from pcieperf import results

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"
HEADING = re.compile(r"^### `((?:pp\.)?[A-Za-z_][\w.]*)\(.*\)(?: -> [^`]+)?`$", re.MULTILINE)


def target(name: str) -> object:
    """The object a heading names: `pp.a.b` from `pp`, a bare name from `pcieperf.results`."""
    found: object = pp if name.startswith("pp.") else results
    for part in name.removeprefix("pp.").split("."):
        found = getattr(found, part)
    return found


def literal(value: object, module: str) -> str:
    """A default as the docs write it: a Python literal (strings in double quotes), or the name
    under which the function's module (else another module of pcieperf's) holds it (a path of
    shipped data: its text would name the folder pcieperf is installed in)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple | list):
        items = [literal(v, module) for v in value]
        inside = ", ".join(items) + ("," if isinstance(value, tuple) and len(items) == 1 else "")
        return f"({inside})" if isinstance(value, tuple) else f"[{inside}]"
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    homes = [module, *sorted(m for m in sys.modules if m.startswith("pcieperf."))]
    names = (
        name
        for home in homes
        for name, v in vars(sys.modules[home]).items()
        if v is value and name.isupper()
    )
    return next(names, repr(value))


def signature_text(name: str) -> str:
    """`name(parameters) -> return`, as `inspect.signature` gives it."""
    obj = target(name)
    signature = inspect.signature(obj)  # type: ignore[arg-type]  # a function or a class
    module = obj.__module__
    parts, star = [], False
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
        star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={literal(p.default, module)}")
    back = signature.return_annotation
    arrow = "" if back is signature.empty or inspect.isclass(obj) else f" -> {back}"
    return f"{name}({', '.join(parts)}){arrow}"


def rewritten(text: str) -> str:
    """docs/api.md with every signature heading as the code gives it."""
    return HEADING.sub(lambda m: f"### `{signature_text(m.group(1))}`", text)


def stale(text: str) -> list[str]:
    """The headings of `text` that are not their code's signature."""
    return [m.group(0) for m in HEADING.finditer(text) if m.group(0) not in rewritten(m.group(0))]


def main() -> int:
    """Rewrite the headings, or with --check name those that differ."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which headings differ")
    args = parser.parse_args()
    text = DOC.read_text(encoding="utf-8")
    if args.check:
        found = stale(text)
        print("\n".join([*found, f"{len(found)} headings differ from the code"]))
        return 1 if found else 0
    DOC.write_text(rewritten(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

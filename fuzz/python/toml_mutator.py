"""A structure-aware libFuzzer mutator for the TOML targets.

Byte mutations rarely turn `points = 7378` into `points = "x"` or `hosts = [..]` into
`hosts = 5`: the result is mostly invalid TOML, which the loaders reject early. Half of the
time this mutator parses the input and changes one value anywhere in the document to a value
of another TOML type (or deletes its key, or adds an unknown one), then writes the document
back; the other half it leaves to libFuzzer's byte mutations, so syntax stays fuzzed too.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import tomllib

import atheris

# Values of every TOML type, with the boundaries loaders trip on (TOML 1.0: integers are
# 64-bit signed, floats IEEE 754 binary64 including nan and inf).
VALUES: tuple[object, ...] = (
    0,
    -1,
    1,
    3,
    2**63 - 1,
    -(2**63),
    0.5,
    -0.0,
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    True,
    False,
    "",
    "x",
    "off",
    "mps",
    "4k",
    "\u00e9\U0001f600",
    [],
    [1, 2],
    ["a"],
    [[]],
    [{}],
    {},
    {"a": 1},
    dt.datetime(2026, 11, 21, 23, 8, 10),
    dt.date(2026, 11, 21),
    dt.time(23, 8, 10),
)


def dumps(document: dict) -> str:
    """A TOML document: top-level `key = value` lines, tables written inline."""
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in document.items())


def _key(key: str) -> str:
    """A quoted key (TOML basic strings accept JSON's escapes)."""
    return json.dumps(key, ensure_ascii=False)


def _value(value: object) -> str:
    """One TOML value, inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else {math.inf: "inf", -math.inf: "-inf"}.get(value, repr(value))
        )
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _containers(node: object) -> list[dict | list]:
    """Every table and array in the document, the root first."""
    found: list[dict | list] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            found.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found


def mutate_document(document: dict, rng: random.Random) -> None:
    """Replace, delete or add one value somewhere in `document`, in place."""
    target = rng.choice(_containers(document))
    new = rng.choice(VALUES)
    if isinstance(target, list):
        if target and rng.random() < 0.8:
            target[rng.randrange(len(target))] = new
        else:
            target.append(new)
    elif target and rng.random() < 0.8:
        key = rng.choice(list(target))
        if rng.random() < 0.85:
            target[key] = new
        else:
            del target[key]
    else:
        target[rng.choice(("colour", "name", "x"))] = new


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """The custom mutator libFuzzer calls: a typed value change half the time, else bytes."""
    rng = random.Random(seed)
    if rng.random() < 0.5:
        try:
            document = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            pass
        else:
            mutate_document(document, rng)
            out = dumps(document).encode()
            if len(out) <= max_size:
                return out
    return atheris.Mutate(data, max_size)

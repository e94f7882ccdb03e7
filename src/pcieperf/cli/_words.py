"""How the CLI names the library's parameters: a message names a parameter with
`errors.param(name)`, and the CLI shows the flag that sets it (the long options of the command's
option whose dest is that name, else the table below), in this one place."""

from __future__ import annotations

import argparse
from collections.abc import Callable

# Parameters whose name is not the dest of the option that sets them.
FLAG_OF_PARAM = {
    "format": "--capture-format",  # capture_run(format=...)
    "direction": "--rx-only/--tx-only",  # capture_run(direction=...)
    "interval_s": "--interval",  # counter imports
}


def _long_options(parser: argparse.ArgumentParser | None) -> dict[str, str]:
    """Each dest of a command's options and its long options, joined as `--frame/--pkt`."""
    flags: dict[str, str] = {}
    for action in parser._actions if parser is not None else ():
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs:
            flags.setdefault(action.dest, "/".join(longs))
    return flags


def flag_namer(parser: argparse.ArgumentParser | None) -> Callable[[str], str]:
    """How the command that `parser` parses names a library parameter."""
    flags = _long_options(parser)

    def flag(name: str) -> str:
        return flags.get(name) or FLAG_OF_PARAM.get(name) or "--" + name.replace("_", "-")

    return flag

"""`pcieperf profiles`: the built-in NIC profiles and their sources (pcieperf.nic.api:
`pp.profiles`, `pp.profile`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.nic import api


def cmd_profiles(args: argparse.Namespace) -> None:
    """List the built-in NIC profiles, or show one."""
    emit(args, api.profile(args.name) if args.name else api.profiles())


def _add_profiles_command(sub: argparse._SubParsersAction) -> None:
    """The `profiles` command and its options."""
    p = _add_command(sub, "profiles", cmd_profiles)
    p.add_argument("name", nargs="?", help="show this profile")

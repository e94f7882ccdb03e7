"""`pcieperf profiles`: the built-in NIC profiles and their sources."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from pcieperf.cli._common import nic
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.results import format_table


def cmd_profiles(args: argparse.Namespace) -> None:
    """List the built-in NIC profiles, or show one."""
    if args.name:
        p = nic.load_profile(args.name)
        out: object = {
            "name": p.name,
            "description": p.description,
            "source": p.source,
            "notes": p.notes.strip(),
            "params": p.params,
            "device": asdict(p.device) if p.device else None,
            "operations": [
                {
                    "path": path,
                    "what": op.what,
                    "initiator": op.initiator,
                    "size": op.size,
                    "every": op.every,
                }
                for path, op in p.operations()
            ],
        }

        def human() -> str:
            table = format_table(
                ("path", "operation", "initiator", "size", "every"),
                [
                    (o["path"], o["what"], o["initiator"], o["size"], o["every"])
                    for o in out["operations"]
                ],
            )
            text = f"{p.name}: {p.description}\nsource: {p.source}\n{p.notes.strip()}\n\n{table}"
            return text + (_device_text(p.device) if p.device else "")
    else:
        profiles = [nic.load_profile(n) for n in nic.builtin_profiles()]
        out = [{"name": p.name, "description": p.description} for p in profiles]

        def human() -> str:
            return format_table(
                ("profile", "description"), [(p.name, p.description) for p in profiles]
            )

    _emit(args, out, human)


def _device_text(device: nic.DeviceFacts) -> str:
    """The profile's [device] facts, each assumed one with its range."""
    rows = [
        (name, getattr(device, name), "-".join(map(str, device.assumed.get(name, ()))) or "cited")
        for name in nic.DEVICE_FACTS
    ]
    table = format_table(("device fact", "value", "assumed range"), rows)
    return f"\n\ndevice: {device.name}\nsource: {device.source}\n{table}"


def _add_profiles_command(sub: argparse._SubParsersAction) -> None:
    """The `profiles` command and its options."""
    p = _add_command(sub, "profiles", cmd_profiles)
    p.add_argument("name", nargs="?", help="show this profile")

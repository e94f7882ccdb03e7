"""Writes docs/model.md's NIC profile tables from the shipped profiles (`nic/profiles/*.toml`),
so that a new profile appears in the docs without editing them: `python scripts/profiles_doc.py`
rewrites the tables between `<!-- BEGIN name -->` and `<!-- END name -->`; `--check` only
says whether they are current (exit 1 if not; tests/nic/test_profiles_doc.py runs it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pcieperf.nic.profile import DeviceFacts, NicProfile, builtin_profiles, load_profile

DOC = Path(__file__).resolve().parent.parent / "docs" / "model.md"


def table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def profiles() -> list[NicProfile]:
    """Every shipped profile, in the order `pcieperf profiles` lists them."""
    return [load_profile(name) for name in builtin_profiles()]


def models_table() -> str:
    """What each profile models and where its numbers come from."""
    rows = [(f"`{p.name}`", p.description, p.source) for p in profiles()]
    return table(("profile", "models", "sources"), rows)


def fact(device: DeviceFacts, name: str, unit: str = "") -> str:
    """A device fact, with its assumed range where no datasheet gives it."""
    text = f"{getattr(device, name)}{unit}"
    if name in device.assumed:
        low, high = device.assumed[name]
        text += f", assumed [{low}, {high}]"
    return text


def devices_table() -> str:
    """Each profile's `[device]` facts: the NIC, its tags, fetch sizes and write-backs."""
    rows = []
    for p in profiles():
        d = p.device
        if d is None:
            rows.append((f"`{p.name}`", "no `[device]` table", "", "", "", "", ""))
            continue
        rows.append(
            (
                f"`{p.name}`",
                d.name,
                fact(d, "read_requests"),
                f"{fact(d, 'rx_fetch_bytes', ' B')} / {fact(d, 'tx_fetch_bytes', ' B')}",
                fact(d, "rx_wb_batch"),
                fact(d, "queues"),
                d.source,
            )
        )
    headers = ("profile", "NIC", "read requests", "fetch Rx / Tx", "Rx write-back", "queues")
    return table((*headers, "sources"), rows)


TABLES: dict[str, Callable[[], str]] = {
    "nic-profiles": models_table,
    "nic-devices": devices_table,
}


def rewritten(text: str) -> str:
    """`text` with every table of `TABLES` regenerated between its markers."""
    for name, make in TABLES.items():
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        head, found, rest = text.partition(begin)
        if not found or end not in rest:
            raise SystemExit(f"{DOC}: no {begin} ... {end} markers")
        text = f"{head}{begin}\n{make()}\n{end}{rest.split(end, 1)[1]}"
    return text


def main() -> None:
    """Rewrite the tables, or with --check say whether they are current."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the tables are stale")
    args = parser.parse_args()
    text = DOC.read_text()
    new = rewritten(text)
    if args.check:
        if new != text:
            print(f"{DOC}: NIC profile tables are stale; run scripts/profiles_doc.py")
            sys.exit(1)
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()

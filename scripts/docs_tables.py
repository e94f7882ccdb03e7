"""Writes the docs' tables of shipped data from the data itself, so that a new NIC profile
(`nic/profiles/*.toml`: docs/model.md) or counter format (`measure.counters.formats`:
docs/counters.md) appears in the docs without editing them: `python scripts/docs_tables.py`
rewrites each table between `<!-- BEGIN name -->` and `<!-- END name -->`; `--check` only says
whether they are current (exit 1 if not; tests/test_docs_tables.py runs it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pcieperf.measure.counters import formats
from pcieperf.nic.profile import DeviceFacts, NicProfile, builtin_profiles, load_profile

DOCS = Path(__file__).resolve().parent.parent / "docs"


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


def counter_formats_table() -> str:
    """Every counter format `counters import` reads, in the order detection tries them."""
    rows = [
        (f"`{f.name}`", f"`{f.written_by}`", ", ".join(f"`{o}`" for o in sorted(f.options)))
        for f in formats.FORMATS
    ]
    return table(("--counters-format", "written by", "parameters it takes"), rows)


TABLES: dict[str, dict[str, Callable[[], str]]] = {
    "model.md": {"nic-profiles": models_table, "nic-devices": devices_table},
    "counters.md": {"counter-formats": counter_formats_table},
}
"""Each document's generated tables, by marker name."""


def rewritten(doc: Path, text: str) -> str:
    """`text` (of `doc`) with every table of `TABLES` regenerated between its markers."""
    for name, make in TABLES[doc.name].items():
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        head, found, rest = text.partition(begin)
        if not found or end not in rest:
            raise SystemExit(f"{doc}: no {begin} ... {end} markers")
        text = f"{head}{begin}\n{make()}\n{end}{rest.split(end, 1)[1]}"
    return text


def main() -> None:
    """Rewrite the tables, or with --check say whether they are current."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the tables are stale")
    args = parser.parse_args()
    stale = []
    for name in TABLES:
        doc = DOCS / name
        text = doc.read_text()
        new = rewritten(doc, text)
        if new != text and args.check:
            stale.append(str(doc))
        elif new != text:
            doc.write_text(new)
    if stale:
        print(f"stale tables in {', '.join(stale)}; run scripts/docs_tables.py")
        sys.exit(1)


if __name__ == "__main__":
    main()

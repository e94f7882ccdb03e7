"""`pcieperf devices` for people: one line per device (its link now and at most, MPS/MRRS,
tags, NUMA node, driver), the network controllers priced, each finding and each note on a
line of its own; everything fits 80 columns (pcieperf.results wraps the names)."""

from __future__ import annotations

from typing import Any

from pcieperf.devices.express import link_text
from pcieperf.devices.inventory import Inventory
from pcieperf.results import Column, Table

DEVICE_COLUMNS = (
    Column("at", "device"),
    Column("what", "class: name"),
    Column("link", "link"),
    Column("most", "max"),
    Column("sizes", "MPS/MRRS"),
    Column("tag_space", "tags"),
    Column("numa", "NUMA"),
    Column("driver_shown", "driver"),
)
NIC_COLUMNS = (
    Column("at", "device"),
    Column("nic_shown", "NIC"),
    Column("profile", "profile"),
    Column("eth_shown", "GbE"),
    Column("now", "64 B Mpps"),
    Column("capable", "capable"),
    Column("limits", "limited by"),
)
LINE_COLUMNS = (Column("at", "device"), Column("line", "finding"))


def short(bdf: str) -> str:
    """An address as lspci shows it: without the domain where it is 0000."""
    return bdf.removeprefix("0000:")


def _link(row: dict[str, Any]) -> str:
    """The link now: `Gen3 x8`, `down` (x0), or why there is none."""
    if row["express"] is False:
        return "no PCIe"
    if row["express"] is None:
        return "unknown"
    if row["lanes"] is None and row["gen"] is None:
        return "-"
    return "down" if row["lanes"] == 0 else link_text(row["gen"], row["lanes"])


def _text_row(row: dict[str, Any]) -> dict[str, Any]:
    """A device's cells."""
    sizes = f"{row['mps'] or '?'}/{row['mrrs'] or '?'}" if row["express"] else "-"
    has_cap = row["gen_cap"] is not None or row["lanes_cap"] is not None
    mark = " <" if row["downgraded"] else ""
    return row | {
        "at": short(row["bdf"]),
        "what": f"{row['class'] or '?'}: {row['name'] or '?'}",
        "link": _link(row) + mark,
        "most": link_text(row["gen_cap"], row["lanes_cap"]) if has_cap else "-",
        "sizes": sizes,
        "tag_space": row["tags"] or "-",
        "numa": "-" if row["numa_node"] is None else row["numa_node"],
        "driver_shown": row["driver"] or "-",
    }


def _nic_row(row: dict[str, Any]) -> dict[str, Any]:
    """A network controller's price cells."""
    priced = row["ceiling_mpps_64"] is not None
    return {
        "at": short(row["bdf"]),
        "nic_shown": row["nic"] or "not in the table",
        "profile": row["profile"] or "-",
        "eth_shown": row["eth_gbps"] or "-",
        "now": f"{row['ceiling_mpps_64']:.2f}" if priced else "-",
        "capable": f"{row['ceiling_mpps_64_capable']:.2f}" if priced else "-",
        "limits": " + ".join(row["limited_by"]) or "-",
    }


def devices_table(rows: list[dict[str, Any]], inventory: Inventory) -> Table:
    """The devices' table, the network controllers' prices, their findings and the notes."""
    express = sum(1 for r in rows if r["express"])
    nics = [r for r in rows if "advice" in r]
    title = (
        f"{len(rows)} PCI devices, {inventory.source}: {express} with a PCI Express link, "
        f"{len(nics)} network controller{'s' if len(nics) != 1 else ''}"
    )
    footer = (
        [" < the link runs below its capability (LnkSta under LnkCap)"]
        if any(r["downgraded"] for r in rows)
        else []
    )
    if not express:
        footer.append("no device has a PCI Express link (a virtual machine?): nothing to price")
    footer += _host_lines(inventory)
    details = []
    if nics:
        title_nics = "\nnetwork controllers, priced on their links (pcieperf nic at 64 B):"
        details.append(Table([_nic_row(r) for r in nics], NIC_COLUMNS, title=title_nics))
        advice = [{"at": short(r["bdf"]), "line": line} for r in nics for line in r["advice"]]
        if advice:
            details.append(Table(advice, LINE_COLUMNS, title="\nfindings:"))
    notes = [{"at": short(r["bdf"]), "line": note} for r in rows for note in r["notes"]]
    if notes:
        details.append(Table(notes, (LINE_COLUMNS[0], Column("line", "note")), title="\nnotes:"))
    return Table(
        rows,
        DEVICE_COLUMNS,
        title=title,
        footer="\n".join(footer),
        text_rows=[_text_row(r) for r in rows],
        details=details,
        optional=("driver_shown", "numa", "tag_space"),
    )


def _host_lines(inventory: Inventory) -> list[str]:
    """The machine's hugepages, where the input is this machine."""
    pages = inventory.host.hugepages
    if pages is None:
        return []
    reserved = [f"{count} x {size}" for size, count in pages.items() if count]
    return [f"hugepages reserved: {', '.join(reserved) or 'none'}"]

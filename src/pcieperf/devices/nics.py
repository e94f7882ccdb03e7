"""NICs by PCI id: `nics.csv`, one row per vendor:device id (a new NIC is one row), with the
line rate and ports of one port, the PCIe generation and width the silicon supports, the NIC
profile its DPDK driver is priced with (empty: none fits, the default profile stands in, said
so), notes and the sources. A text without ids (`lspci -vv` without `-n`) is matched by the
device names lspci printed, said so."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pcieperf.errors import UsageError
from pcieperf.net.wire import RATES_GBPS
from pcieperf.nic.profile import DEFAULT_PROFILE, builtin_profiles
from pcieperf.pcie.link import GENERATIONS, LANE_WIDTHS

TABLE = Path(__file__).with_name("nics.csv")
COLUMNS: tuple[str, ...] = ("vendor_id", "device_id", "name", "lspci_names", "eth_gbps", "ports")
COLUMNS += ("gen", "lanes", "profile", "notes", "source")


@dataclass(frozen=True)
class NicRow:
    """One NIC of the table."""

    vendor_id: int
    device_id: int
    name: str
    lspci_names: tuple[str, ...]  # the device names pci.ids has had for the id
    eth_gbps: int  # one port's line rate
    ports: int
    gen: int
    lanes: int
    profile: str | None  # None: no profile fits its driver
    notes: str
    source: str

    @property
    def ids(self) -> str:
        """`vvvv:dddd`."""
        return f"{self.vendor_id:04x}:{self.device_id:04x}"


@dataclass(frozen=True)
class NicMatch:
    """A device's row of the table (None: not in it), how it was found, and the profile it
    is priced with (the default one where the row has none or there is no row)."""

    row: NicRow | None
    how: str
    profile: str

    @property
    def profile_note(self) -> str:
        """Why the profile is the one it is."""
        if self.row is None:
            return f"not in the NIC table: the default profile {self.profile} stands in"
        if self.row.profile is None:
            return f"{self.row.notes}: the default profile {self.profile} stands in"
        return f"{self.row.name}'s profile" + (f" ({self.row.notes})" if self.row.notes else "")


@cache
def nic_rows() -> tuple[NicRow, ...]:
    """The table, each row checked (ids in hex, a known line rate, generation, width and
    profile)."""
    with open(TABLE, newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise UsageError(f"{TABLE}: the columns are {', '.join(COLUMNS)}")
        return tuple(_row(line, number) for number, line in enumerate(reader, start=2))


def _row(line: dict[str, str], number: int) -> NicRow:
    """One line of the table as a row, checked."""
    where = f"{TABLE.name} line {number}"
    try:
        row = NicRow(
            vendor_id=int(line["vendor_id"], 16),
            device_id=int(line["device_id"], 16),
            name=line["name"],
            lspci_names=tuple(n for n in line["lspci_names"].split("|") if n),
            eth_gbps=int(line["eth_gbps"]),
            ports=int(line["ports"]),
            gen=int(line["gen"]),
            lanes=int(line["lanes"]),
            profile=line["profile"] or None,
            notes=line["notes"],
            source=line["source"],
        )
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    checks = (
        (row.eth_gbps in RATES_GBPS, f"line rate {row.eth_gbps} is none of {RATES_GBPS}"),
        (row.gen in GENERATIONS, f"generation {row.gen} is none of {sorted(GENERATIONS)}"),
        (row.lanes in LANE_WIDTHS, f"width x{row.lanes} is none of {LANE_WIDTHS}"),
        (row.ports >= 1, f"ports {row.ports} is not a count"),
        (row.profile in (None, *builtin_profiles()), f"profile {row.profile} is not built in"),
        (bool(row.source), "the row has no source"),
    )
    for ok, problem in checks:
        if not ok:
            raise UsageError(f"{where}: {problem}")
    return row


def find_nic(vendor_id: int | None, device_id: int | None, name: str | None) -> NicMatch:
    """The table's row for a device: by its ids, or, where the source printed none, by the
    device name lspci printed (`Intel Corporation Ethernet Controller XL710 for 40GbE QSFP+`)."""
    rows = nic_rows()
    if vendor_id is not None and device_id is not None:
        row = next((r for r in rows if (r.vendor_id, r.device_id) == (vendor_id, device_id)), None)
        return _match(row, f"id {vendor_id:04x}:{device_id:04x}")
    named = [r for r in rows if name and any(name.endswith(n) for n in r.lspci_names)]
    if not named:
        return _match(None, "no id in the input, and no name in the NIC table")
    also = ", ".join(r.ids for r in named[1:])
    how = f"name (no id in the input; lspci -nn prints it) {named[0].ids}"
    return _match(named[0], how + (f", also {also}" if also else ""))


def _match(row: NicRow | None, how: str) -> NicMatch:
    """A match with the profile its row gives, or the default."""
    return NicMatch(row, how, (row.profile if row else None) or DEFAULT_PROFILE)

"""Names from the PCI ID database (`pci.ids`, the file lspci reads): vendor, device and class
names by id, written as lspci writes them where the database has none (`Device 1af4:1041`,
`Class 0200`). Only the lines asked for are looked up in the file's text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

IDS_PATHS = (
    Path("/usr/share/misc/pci.ids"),  # Debian, Ubuntu (pciutils' default)
    Path("/usr/share/hwdata/pci.ids"),  # Fedora, RHEL, Arch
    Path("/usr/share/pci.ids"),
    Path("/usr/local/share/pci.ids"),
)
"""Where pciutils' builds look for the database, in that order (its Makefile's IDSDIR)."""
MAX_IDS_BYTES = 16 << 20  # the database is ~1.3 MiB
TOP_LEVEL = re.compile(r"\n(?=[0-9a-f]{4}  |C [0-9a-f]{2}  )")


@dataclass(frozen=True)
class PciIds:
    """The database's text (empty: none found, every name written from its ids)."""

    text: str = ""
    found: dict[str, tuple[str, str] | None] = field(default_factory=dict, compare=False)

    @cached_property
    def _classes(self) -> int:
        """Where the class section starts (`C 00`): class lookups search from there only."""
        return max(self.text.find("\nC 00  "), 0)

    def _section(self, head: str) -> tuple[str, str] | None:
        """The name on the top-level line `head` and the lines below it up to the next one
        (each looked up once)."""
        if head not in self.found:
            self.found[head] = self._look_up(head)
        return self.found[head]

    def _look_up(self, head: str) -> tuple[str, str] | None:
        """`_section`, searched in the text."""
        at = self.text.find(f"\n{head}  ", self._classes if head.startswith("C ") else 0)
        if at < 0:
            return None
        end = TOP_LEVEL.search(self.text, at + 1)
        block = self.text[at + 1 : end.start() if end else len(self.text)]
        first, _, rest = block.partition("\n")
        return first[len(head) + 2 :].strip(), "\n" + rest

    def _item(self, head: str, code: int, width: int) -> str | None:
        """The name of `code` (`width` hex digits: 4 for a device, 2 for a subclass) under
        `head`."""
        section = self._section(head)
        if section is None:
            return None
        found = re.search(rf"\n\t{code:0{width}x}  (.+)", section[1])
        return found[1].strip() if found else None

    def name(self, vendor_id: int, device_id: int) -> str:
        """`Vendor Device` as lspci prints it after the class."""
        vendor = self._section(f"{vendor_id:04x}")
        if vendor is None:
            return f"Device {vendor_id:04x}:{device_id:04x}"
        device = self._item(f"{vendor_id:04x}", device_id, 4)
        return f"{vendor[0]} {device or f'Device {device_id:04x}'}"

    def class_name(self, class_code: int) -> str:
        """A class code's (base class and subclass) name: the subclass's, else the base
        class's, else `Class 0200`."""
        head = f"C {class_code >> 8:02x}"
        sub = self._item(head, class_code & 0xFF, 2)
        base = self._section(head)
        return sub or (base[0] if base else f"Class {class_code:04x}")


def load_ids(path: str | Path | None = None) -> PciIds:
    """The database at `path`, or the first of `IDS_PATHS` there is (none: names from ids)."""
    candidates = [Path(path)] if path is not None else [p for p in IDS_PATHS if p.is_file()]
    for candidate in candidates[:1]:
        with open(candidate, "rb") as file:
            data = file.read(MAX_IDS_BYTES)
        return PciIds(data.decode("utf-8", errors="replace"))
    return PciIds()

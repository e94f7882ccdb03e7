"""Saved `lspci -vv`/`-vvv` text, as users paste it, read back into devices: every lspci
version's layout (no link markers before pciutils 3.6.0, `(ok)`/`(downgraded)` from 3.6.0,
`(downgraded)` alone from 3.8.0; 10-bit tag bits in newer ones only),
tabs or spaces, reST-indented or `>`-quoted blocks, lines a paste wrapped, `-nn` codes, `-D`
domains, `-x`/`-xxx`/`-xxxx` hex dumps (decoded as configuration space where the text leaves
a field out), one device or a whole machine. What lspci prints is taken as printed; a field a
block cuts short or holds out of range is left unknown with a note on that device."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from pcieperf.devices.config_space import HEADER_BYTES, parse_config
from pcieperf.devices.device import BDF, Device, normal_bdf
from pcieperf.devices.express import GEN_OF_GTS, LINK_WIDTHS, NO_LINK, SIZES_BYTES, Express
from pcieperf.errors import UsageError

MAX_TEXT_BYTES = 64 << 20  # a whole machine's `lspci -vvvv -xxxx` is a few MiB
HEADER = re.compile(rf"^{BDF.pattern}\s+(?P<rest>\S.*)$")
HEX_LINE = re.compile(r"^(?P<offset>[0-9a-f]{2,3}):(?P<bytes>(?: [0-9a-f]{2}){1,16})\s*$")
QUOTE = re.compile(r"^\s*(?:>\s?)+")
EXPRESS = re.compile(
    r"^Capabilities: \[[0-9a-f]+\] Express (?:\(v(?P<version>\d+)\) )?(?P<type>[^,]+)"
)
LABELS = (
    *("DevCap2", "DevCtl2", "DevSta2", "LnkCap2", "LnkCtl2", "LnkSta2", "SltCap2", "SltCtl2"),
    *("SltSta2", "DevCap", "DevCtl", "DevSta", "LnkCap", "LnkCtl", "LnkSta", "SltCap"),
    *("SltCtl", "SltSta", "RootCap", "RootCtl", "RootSta"),
)
SECTION = re.compile(rf"^(?P<label>{'|'.join(LABELS)}):\s*(?P<text>.*)$")
SPEED = r"Speed (?:(?P<speed>\d+(?:\.\d+)?)GT/s|(?P<unknown>unknown))"
MARK = r"(?: \((?:ok|downgraded|overdriven|strange)\))?"
WIDTH = r"Width x(?P<width>\d+)"
NAME_IDS = re.compile(r"\s*\[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]$")
CLASS_CODE = re.compile(r"^(?P<name>.*?)\s*\[(?P<code>[0-9a-f]{4})\]$")
NUMERIC_CLASS = re.compile(r"^Class (?P<code>[0-9a-f]{4})$")
NUMERIC_NAME = re.compile(r"^Device (?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})$")
SUFFIXES = re.compile(r"(?:\s+\((?:rev [0-9a-f]{2}|prog-if [0-9a-f]{2}(?: \[[^]]*\])?)\))+$")


def _hex(text: str) -> int:
    """A bus number as lspci prints it, in hex."""
    return int(text, 16)


def read_lspci_text(path: str | Path) -> str:
    """The text of a saved lspci output (`-`: standard input), refused in one line where it is
    empty, binary or too large to be one."""
    shown = "standard input" if str(path) == "-" else str(path)
    if str(path) == "-":
        data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
    else:
        with open(path, "rb") as file:
            data = file.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise UsageError(f"{shown}: larger than {MAX_TEXT_BYTES >> 20} MiB; not an lspci text")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # `lspci > file` in PowerShell: UTF-16
        data = data.decode("utf-16").encode()
    if b"\0" in data:
        raise UsageError(f"{shown}: a binary file, not the text `lspci -vv` prints")
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise UsageError(f"{shown}: empty; give the text `lspci -vv` prints")
    return text


def parse_lspci(text: str, source: str = "lspci text") -> list[Device]:
    """Every device block of `text` (lines before the first block, a shell prompt or a warning,
    are skipped); the ports above each device found from the bridges' bus numbers."""
    blocks = _blocks(text)
    if not blocks:
        raise UsageError(
            f"{source}: no device line (`03:00.0 Ethernet controller: ...`); give the text "
            "`lspci -vv` prints"
        )
    devices = [_device(block) for block in blocks]
    return _with_parents(devices)


@dataclass
class _Block:
    """One device's lines: its header, the lines below it (stripped) and its hex dump."""

    bdf: str
    header: str
    lines: list[str] = field(default_factory=list)
    dump: dict[int, bytes] = field(default_factory=dict)


def _blocks(text: str) -> list[_Block]:
    """The text cut into device blocks at each `BB:DD.F class: name` line."""
    blocks: list[_Block] = []
    for raw in text.splitlines():
        line = QUOTE.sub("", raw).strip()
        head = HEADER.match(line)
        hex_line = HEX_LINE.match(line)
        if head and not hex_line:
            bdf = normal_bdf(line.split(None, 1)[0])
            if bdf is not None:
                blocks.append(_Block(bdf, head["rest"]))
        elif blocks and hex_line:
            blocks[-1].dump[int(hex_line["offset"], 16)] = bytes.fromhex(hex_line["bytes"])
        elif blocks and line:
            blocks[-1].lines.append(line)
    return blocks


def _device(block: _Block) -> Device:
    """One block as a device: the header's class and name, the body's driver, NUMA node,
    IOMMU group, bus numbers and PCI Express capability, the hex dump where it adds a field."""
    notes: list[str] = []
    device = replace(_header(block.bdf, block.header), **_body_facts(block.lines))
    express, has_express = _express(block.lines, notes)
    device = replace(device, express=express, has_express=has_express)
    config = _dump_bytes(block.dump)
    if len(config) >= HEADER_BYTES:
        device = _with_dump(device, config, notes)
    return replace(device, notes=tuple(notes))


def _header(bdf: str, rest: str) -> Device:
    """`Ethernet controller [0200]: Intel Corporation 82599ES ... [8086:10fb] (rev 01)`: the
    class name (and code with -nn), the name (and ids with -nn, or `Device vvvv:dddd` where
    lspci had no pci.ids)."""
    class_part, _, name_part = rest.partition(": ")
    class_name: str | None = class_part.strip()
    class_code = None
    if coded := CLASS_CODE.match(class_part):
        class_name, class_code = coded["name"], int(coded["code"], 16)
    if numeric := NUMERIC_CLASS.match(class_part):
        class_name, class_code = None, int(numeric["code"], 16)
    name: str | None = SUFFIXES.sub("", name_part.strip())
    vendor_id = device_id = None
    if ids := NAME_IDS.search(name or "") or NUMERIC_NAME.match(name or ""):
        vendor_id, device_id = int(ids["vendor"], 16), int(ids["device"], 16)
        name = NAME_IDS.sub("", name or "") if NAME_IDS.search(name or "") else None
    return Device(
        bdf,
        class_name=class_name,
        class_code=class_code,
        name=name or None,
        vendor_id=vendor_id,
        device_id=device_id,
    )


BODY_FACTS: dict[str, tuple[re.Pattern[str], Callable[[str], object]]] = {
    "driver": (re.compile(r"^Kernel driver in use: (\S+)"), str),
    "numa_node": (re.compile(r"^NUMA node: (\d+)$"), int),
    "iommu_group": (re.compile(r"^IOMMU group: (\d+)$"), int),
    "secondary_bus": (re.compile(r"^Bus: primary=[0-9a-f]+, secondary=([0-9a-f]+),"), _hex),
    "subordinate_bus": (re.compile(r"^Bus: .*subordinate=([0-9a-f]+)"), _hex),
}
"""Lines of a block outside its capabilities that pcieperf reads: Device field -> the line's
pattern and how its value reads."""


def _body_facts(lines: list[str]) -> dict[str, Any]:
    """The driver, NUMA node, IOMMU group and a bridge's bus numbers a block prints."""
    found: dict[str, Any] = {}
    for line in lines:
        for name, (pattern, read) in BODY_FACTS.items():
            if name not in found and (match := pattern.match(line)):
                found[name] = read(match[1])
    return found


def _express(lines: list[str], notes: list[str]) -> tuple[Express | None, bool | None]:
    """The PCI Express capability's fields and whether the device has one (None: lspci could
    not read the capabilities: it ran without root)."""
    if any(line == "Capabilities: <access denied>" for line in lines):
        notes.append(
            "lspci could not read the capabilities (<access denied>: it ran without root): "
            "PCI Express registers unknown"
        )
        return None, None
    start = next((k for k, line in enumerate(lines) if EXPRESS.match(line)), None)
    if start is None:
        return None, False
    head = EXPRESS.match(lines[start])
    port_type = head["type"].split(" (")[0].strip() if head else None
    body = []
    for line in lines[start + 1 :]:
        if line.startswith(("Capabilities:", "Kernel driver", "Kernel modules")):
            break
        body.append(line)
    sections = _sections(body)
    if not sections:
        notes.append("the PCI Express capability prints no registers (lspci -v): use lspci -vv")
        return Express(port_type=port_type), True
    return _registers(port_type, sections, notes), True


def _sections(body: list[str]) -> dict[str, str]:
    """Each register's text (`DevCtl`, `LnkSta`, ...), its continuation lines joined."""
    sections: dict[str, str] = {}
    label = None
    for line in body:
        if match := SECTION.match(line):
            label = match["label"]
            sections[label] = match["text"]
        elif label is not None:
            sections[label] += " " + line
    return sections


def _registers(port_type: str | None, sections: dict[str, str], notes: list[str]) -> Express:
    """The fields each register prints, each checked against what PCIe defines."""
    devcap, devctl = sections.get("DevCap", ""), sections.get("DevCtl", "")
    found = Express(
        port_type=port_type,
        mps_cap=_bytes_field(r"MaxPayload (\d+) bytes", devcap, "DevCap MaxPayload", notes),
        ext_tag_cap=_flag("ExtTag", devcap),
        mps=_bytes_field(r"MaxPayload (\d+) bytes", devctl, "DevCtl MaxPayload", notes),
        mrrs=_bytes_field(r"MaxReadReq (\d+) bytes", devctl, "DevCtl MaxReadReq", notes),
        ext_tag=_flag("ExtTag", devctl),
        relaxed_ordering=_flag("RlxdOrd", devctl),
        no_snoop=_flag("NoSnoop", devctl),
        ten_bit_tag_cap=_flag("10BitTagReq", sections.get("DevCap2", "")),
        ten_bit_tag=_flag("10BitTagReq", sections.get("DevCtl2", "")),
    )
    if found.ten_bit_tag is None and found.ten_bit_tag_cap is False:
        found = replace(found, ten_bit_tag=False)  # §7.5.3.16: hardwired 0 where unsupported
    missing = [label for label in ("DevCap", "DevCtl") if label not in sections]
    if port_type not in NO_LINK or "LnkCap" in sections:  # lspci < 3.2.1 printed RCiEPs' too
        cap_speed, cap_width = _link(sections, "LnkCap", notes)
        speed, width = _link(sections, "LnkSta", notes)
        found = replace(
            found, speed_cap_gts=cap_speed, lanes_cap=cap_width, speed_gts=speed, lanes=width
        )
        missing += [label for label in ("LnkCap", "LnkSta") if label not in sections]
    if missing:
        notes.append(f"the PCI Express capability is cut short: no {', '.join(missing)} line")
    return found


def _flag(name: str, text: str) -> bool | None:
    """A `Name+`/`Name-` bit of a register's text (None: not printed)."""
    match = re.search(rf"(?<![\w-]){name}([+-])", text)
    return None if match is None else match[1] == "+"


def _bytes_field(pattern: str, text: str, what: str, notes: list[str]) -> int | None:
    """A size in bytes, checked to be one PCIe encodes (128 .. 4096)."""
    match = re.search(pattern, text)
    if match is None:
        return None
    value = int(match[1])
    if value not in SIZES_BYTES:
        notes.append(f"{what} {value} bytes is out of range (128 to 4096): left unknown")
        return None
    return value


def _link(
    sections: dict[str, str], label: str, notes: list[str]
) -> tuple[float | None, int | None]:
    """A link register's speed (GT/s) and width, each checked against what PCIe defines; an
    `unknown` speed stays unknown without a note (lspci says so itself)."""
    text = sections.get(label, "")
    speed = re.search(SPEED + MARK, text)
    width = re.search(WIDTH + MARK, text)
    gts = None
    if speed is not None and speed["speed"] is not None:
        gts = float(speed["speed"])
        if gts not in GEN_OF_GTS:
            notes.append(f"{label} speed {speed['speed']}GT/s is none PCIe defines: left unknown")
            gts = None
    lanes = None
    if width is not None:
        lanes = int(width["width"])
        if lanes != 0 and lanes not in LINK_WIDTHS:
            notes.append(f"{label} width x{lanes} is none PCIe defines: left unknown")
            lanes = None
    if label in sections and (speed is None or width is None):
        notes.append(f"{label} is cut short: no {'speed' if speed is None else 'width'}")
    return gts, lanes


def _dump_bytes(dump: dict[int, bytes]) -> bytes:
    """The hex dump's bytes from offset 0 as far as they run without a gap."""
    data = bytearray()
    while len(data) in dump and len(dump[len(data)]) == 16:
        data += dump[len(data)]
    return bytes(data)


def _with_dump(device: Device, config: bytes, notes: list[str]) -> Device:
    """The device with what its hex dump adds: ids and class code where the text printed none,
    a bridge's bus numbers, and each PCI Express field the text left out (an older lspci
    prints no 10-bit tag bits); a field both give differently is noted, the text kept."""
    decoded = parse_config(config)
    header = decoded.header
    if header is None:
        return device
    device = replace(
        device,
        vendor_id=header.vendor_id if device.vendor_id is None else device.vendor_id,
        device_id=header.device_id if device.device_id is None else device.device_id,
        class_code=header.class_code if device.class_code is None else device.class_code,
        secondary_bus=device.secondary_bus
        if device.secondary_bus is not None
        else header.secondary_bus,
        subordinate_bus=device.subordinate_bus
        if device.subordinate_bus is not None
        else header.subordinate_bus,
    )
    if decoded.express is None or device.express is None:
        return device
    merged = {}
    for item in fields(Express):
        text, dump = getattr(device.express, item.name), getattr(decoded.express, item.name)
        if text is not None and dump is not None and text != dump:
            notes.append(f"the hex dump gives {item.name} {dump}, the text {text}: text kept")
        merged[item.name] = text if text is not None else dump
    return replace(device, express=Express(**merged))


def _with_parents(devices: list[Device]) -> list[Device]:
    """Each device with the bridge above it: the one in its domain whose secondary bus is the
    device's bus (whole-machine texts print every bridge's bus numbers)."""
    bridges = {
        (d.domain_bus[0], d.secondary_bus): d.bdf for d in devices if d.secondary_bus is not None
    }
    return [replace(d, parent=d.parent or bridges.get(d.domain_bus)) for d in devices]

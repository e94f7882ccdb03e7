"""Saved `lspci -vv` text read back (issue 42's acceptance): every real output in
../shared/data/lspci and pcie-bench's sys-lspci.txt files, and the hex dumps there re-printed
by this machine's lspci (`lspci -F`), give for every device with a PCI Express capability
exactly what lspci printed: link speed and width now and at most, MPS (both), MRRS and ExtTag,
and `downgraded` as lspci's own markers say. What lspci printed is read here by regexes over
each raw block, independently of the parser."""

import itertools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pcieperf.devices.device import normal_bdf
from pcieperf.devices.lspci import parse_lspci, read_lspci_text
from pcieperf.errors import UsageError
from tests.helpers import PCIE_BENCH, SHARED

LSPCI = SHARED / "lspci"
REAL = sorted(LSPCI.glob("*.txt")) + sorted(PCIE_BENCH.glob("*/sys-lspci.txt"))
# pciutils' own test dumps (-xxx: past the 64-byte header; 06-... is a -x dump of 64 bytes)
HEX_DUMPS = [p for p in sorted(LSPCI.glob("*-hex.txt")) if "\n40: " in p.read_text()]
needs_shared = pytest.mark.skipif(not LSPCI.is_dir(), reason=f"{LSPCI} is absent")
needs_lspci = pytest.mark.skipif(shutil.which("lspci") is None, reason="no lspci (pciutils)")

BLOCK_START = re.compile(r"^[ \t>]*(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ", re.M)
PRINTED = {
    "mps_cap": (r"DevCap:\s+MaxPayload (\d+) bytes", int),
    "ext_tag_cap": (r"DevCap:.*?ExtTag([+-])", "+".__eq__),
    "mps": (r"DevCtl:.*?MaxPayload (\d+) bytes", int),
    "mrrs": (r"DevCtl:.*?MaxReadReq (\d+) bytes", int),
    "ext_tag": (r"DevCtl:.*?RlxdOrd[+-] ExtTag([+-])", "+".__eq__),
    "speed_cap_gts": (r"LnkCap:\s+Port #\d+, Speed ([\d.]+)GT/s", float),
    "lanes_cap": (r"LnkCap:\s+Port #\d+, Speed \S+, Width x(\d+)", int),
    "speed_gts": (r"LnkSta:\s+Speed ([\d.]+)GT/s", float),
    "lanes": (r"LnkSta:\s+Speed [^,]+, Width x(\d+)", int),
}
MARKS = re.compile(r"LnkSta:\s+Speed \S+?(?: \((\w+)\))?, Width x\d+(?: \((\w+)\))?")


def printed(block):
    """What lspci printed in one raw block's PCI Express capability (None: it has none)."""
    start = re.search(r"Capabilities: \[[0-9a-f]+\] Express", block)
    if start is None:
        return None
    region = re.split(r"\n\s*Capabilities:", block[start.end() :])[0]
    values = {}
    for key, (pattern, read) in PRINTED.items():
        found = re.search(pattern, region, re.S)
        values[key] = None if found is None else read(found[1])
    marks = MARKS.search(region)
    values["marks"] = {m for m in (marks.groups() if marks else ()) if m}
    return values


def raw_blocks(text):
    """The raw text of each device block, by address."""
    starts = [m.start() for m in BLOCK_START.finditer(text)] + [len(text)]
    blocks = [text[a:b] for a, b in itertools.pairwise(starts)]
    return {normal_bdf(b.split()[0].lstrip(">")): b for b in blocks}


def check_text(text, source):
    """Every PCI Express device of `text` parsed as lspci printed it; returns how many."""
    parsed = {d.bdf: d for d in parse_lspci(text, source)}
    checked = 0
    for bdf, block in raw_blocks(text).items():
        want = printed(block)
        device = parsed[bdf]
        if want is None:
            assert device.has_express in (False, None), (source, bdf)
            continue
        e = device.express
        got = {key: getattr(e, key) for key in PRINTED}
        assert got == {k: want[k] for k in PRINTED}, (source, bdf)
        if "downgraded" in want["marks"]:
            assert e.downgraded is True, (source, bdf)
        elif want["marks"] == {"ok"}:
            assert e.downgraded is False, (source, bdf)
        below = [(a, b) for a, b in ((e.speed_gts, e.speed_cap_gts), (e.lanes, e.lanes_cap))]
        if all(None not in pair for pair in below):  # status below capability is downgraded
            assert e.downgraded == any(a < b for a, b in below), (source, bdf)
        checked += 1
    return checked


@needs_shared
@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_output_gives_what_lspci_printed(path):
    assert check_text(read_lspci_text(path), str(path)) >= 1 or "nonroot" in path.name


@needs_shared
def test_the_real_outputs_hold_many_devices_and_markers():
    # The acceptance covers old and new layouts: count what the files hold, so that a parser
    # reading nothing cannot pass the test above.
    texts = [read_lspci_text(p) for p in REAL]
    assert sum(check_text(t, "") for t in texts) > 700
    assert sum(t.count("(downgraded)") for t in texts) >= 20


@needs_shared
@needs_lspci
@pytest.mark.parametrize("path", HEX_DUMPS, ids=lambda p: p.name)
def test_hex_dumps_reprinted_by_this_lspci(path):
    # pciutils' own test dumps, re-printed by the installed lspci from their hex (`-F`): this
    # version's layout, parsed as it prints it.
    done = subprocess.run(
        ["lspci", "-F", str(path), "-vvv"], capture_output=True, text=True, check=True
    )
    assert check_text(done.stdout, f"lspci -F {path.name}") >= 1


@needs_shared
def test_a_hex_dump_fills_what_an_older_lspci_left_out():
    # 15-haswell-...: lspci 3.2 printed no 10-bit tag bits; the -xxx dump's DevCap2 has them.
    devices = {
        d.bdf: d for d in parse_lspci(read_lspci_text(LSPCI / "15-haswell-rootport-cx3pro-hex.txt"))
    }
    nic = devices["0000:03:00.0"]
    assert nic.express.ten_bit_tag_cap is False
    assert (nic.vendor_id, nic.device_id) == (0x15B3, 0x1007)  # ConnectX-3 Pro, from the dump
    assert nic.notes == ()  # the dump and the text agree on every field both give


@needs_shared
def test_a_whole_machine_finds_each_devices_port():
    devices = {
        d.bdf: d for d in parse_lspci(read_lspci_text(LSPCI / "18-broadwell-server-whole-p100.txt"))
    }
    assert len(devices) == 201
    port = devices[devices["0000:83:00.0"].parent]
    assert port.express.port_type == "Root Port"


@needs_shared
def test_a_run_without_root_leaves_the_capability_unknown():
    (device,) = parse_lspci(read_lspci_text(LSPCI / "24-rtl8111-nonroot-access-denied.txt"))
    assert (device.has_express, device.express, device.driver) == (None, None, "r8169")
    assert "access denied" in device.notes[0]


BLOCK = (
    (
        "03:00.0 Ethernet controller [0200]: Intel Corporation 82599ES 10-Gigabit SFI/SFP+ Network "
        "Connection [8086:10fb] (rev 01)\n"
    )
    + """\
\tSubsystem: Intel Corporation Ethernet Server Adapter X520-2
\tNUMA node: 1
\tIOMMU group: 27
\tCapabilities: [a0] Express (v2) Endpoint, MSI 00
\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s <512ns, L1 <64us
\t\t\tExtTag- AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0.000W
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd- ExtTag- PhantFunc- AuxPwr- NoSnoop+ FLReset-
\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes
\t\tLnkCap:\tPort #0, Speed 5GT/s, Width x8, ASPM L0s, Exit Latency L0s <1us
\t\tLnkSta:\tSpeed 5GT/s, Width x4 (downgraded)
\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
\tKernel driver in use: vfio-pci
"""
)


def one(text):
    (device,) = parse_lspci(text)
    return device


def test_nn_codes_numa_iommu_and_driver():
    d = one(BLOCK)
    assert (d.bdf, d.class_name, d.class_code, d.vendor_id, d.device_id) == (
        "0000:03:00.0",
        "Ethernet controller",
        0x0200,
        0x8086,
        0x10FB,
    )
    assert d.name == "Intel Corporation 82599ES 10-Gigabit SFI/SFP+ Network Connection"
    assert (d.numa_node, d.iommu_group, d.driver) == (1, 27, "vfio-pci")
    assert (d.express.lanes, d.express.lanes_cap, d.express.downgraded) == (4, 8, True)


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.replace("\t", "        "),  # spaces for tabs
        lambda t: "".join(f"    {line}\n" for line in t.splitlines()),  # reST-indented
        lambda t: "".join(f"> {line}\n" for line in t.splitlines()),  # quoted in a mail
        lambda t: t.replace("\n", "\r\n"),  # saved on Windows
        lambda t: t.replace("Speed 5GT/s, Width x4", "Speed 5GT/s,\nWidth x4"),  # wrapped
        lambda t: "$ sudo lspci -vv -s 03:00.0\n" + t.replace("03:00.0", "0000:03:00.0", 1),
    ],
    ids=["spaces", "rest", "quoted", "crlf", "wrapped", "prompt-domain"],
)
def test_the_same_block_however_it_was_pasted(variant):
    d = one(variant(BLOCK))
    assert (d.bdf, d.express.mps, d.express.mrrs, d.express.lanes) == ("0000:03:00.0", 256, 512, 4)


def test_a_block_cut_short_keeps_what_it_has_with_a_note():
    d = one(BLOCK.split("\t\tLnkCap")[0])
    assert (d.express.mps, d.express.lanes) == (256, None)
    assert "no LnkCap, LnkSta line" in d.notes[0]


def test_a_value_out_of_range_is_unknown_with_a_note():
    d = one(BLOCK.replace("MaxReadReq 512", "MaxReadReq 8192").replace("Width x8", "Width x64"))
    assert (d.express.mrrs, d.express.lanes_cap) == (None, None)
    assert len(d.notes) == 2


def test_lspci_v_without_registers_says_so():
    d = one(BLOCK.split("\t\tDevCap")[0])
    assert d.has_express is True
    assert "lspci -vv" in d.notes[0]


def test_a_utf16_text_from_powershell_reads(tmp_path):
    path = tmp_path / "lspci.txt"
    path.write_bytes(BLOCK.encode("utf-16"))
    assert one(read_lspci_text(path)).express.mps == 256


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty"),
        (b" \n\n", "empty"),
        (b"\x7fELF\x02\x01\x01\x00\x00", "binary"),
        (b"just some words\nand more\n", "no device line"),
        (b"03:00", "no device line"),
    ],
    ids=["empty", "blank", "binary", "prose", "cut-header"],
)
def test_input_that_is_no_lspci_text_is_refused_in_one_line(tmp_path, content, words):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=words) as error:
        parse_lspci(read_lspci_text(path), str(path))
    assert "\n" not in str(error.value)


PCIUTILS_TESTS = os.environ.get("PCIEPERF_PCIUTILS_TESTS")  # a clone's tests/ folder


@needs_lspci
@pytest.mark.skipif(not PCIUTILS_TESTS, reason="PCIEPERF_PCIUTILS_TESTS names no pciutils tests/")
def test_every_pciutils_test_dump():
    # pciutils' tests/ (41 dumps: bridges, switches, root ports, RCiEPs, broken capability
    # lists), each as written and as this lspci re-prints it from its hex (`-F`).
    checked = 0
    for path in sorted(Path(PCIUTILS_TESTS or "").iterdir()):
        checked += check_text(path.read_text(errors="replace"), str(path))
        again = subprocess.run(["lspci", "-F", str(path), "-vvv"], capture_output=True, text=True)
        checked += check_text(again.stdout, f"lspci -F {path}") if again.stdout.strip() else 0
    assert checked > 100

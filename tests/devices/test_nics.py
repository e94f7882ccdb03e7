"""The NIC table by id (`nics.csv`): every row checked, a new NIC is one row, and each row's
PCIe generation and width are what the real lspci outputs of that NIC print as its LnkCap."""

import shutil

import pytest

from pcieperf.devices import nics
from pcieperf.devices.lspci import parse_lspci, read_lspci_text
from pcieperf.errors import UsageError
from pcieperf.nic.profile import DEFAULT_PROFILE
from tests.helpers import PCIE_BENCH, SHARED

TEXTS = sorted((SHARED / "lspci").glob("*.txt")) + sorted(PCIE_BENCH.glob("*/sys-lspci.txt"))


@pytest.fixture
def table(tmp_path, monkeypatch):
    """A copy of the table to change, read in place of the shipped one."""
    copy = tmp_path / "nics.csv"
    shutil.copy(nics.TABLE, copy)
    monkeypatch.setattr(nics, "TABLE", copy)
    nics.nic_rows.cache_clear()
    yield copy
    nics.nic_rows.cache_clear()


def test_every_row_has_an_id_once_and_a_source():
    rows = nics.nic_rows()
    assert len({r.ids for r in rows}) == len(rows) >= 20
    assert all(r.source and r.lspci_names for r in rows)


@pytest.mark.parametrize(
    ("ids", "profile"),
    [
        ((0x8086, 0x1583), "testpmd-fwd"),  # XL710: the profile of its i40e PMD
        ((0x8086, 0x10FB), "dpdk"),  # 82599: ixgbe
        ((0x15B3, 0x1017), "mlx5-dpdk"),  # ConnectX-5
        ((0x8086, 0x159B), "testpmd-fwd"),  # E810: i40e-format descriptors, said so
        ((0x1AF4, 0x1041), DEFAULT_PROFILE),  # virtio-net: not in the table, said so
    ],
)
def test_a_nic_gets_its_profile_by_id(ids, profile):
    match = nics.find_nic(*ids, None)
    assert match.profile == profile
    assert ("not in the NIC table" in match.profile_note) == (match.row is None)


def test_a_text_without_ids_is_matched_by_name_and_says_so():
    match = nics.find_nic(None, None, "Intel Corporation Ethernet Controller LX710 for 40GbE QSFP+")
    assert (match.row.ids, match.profile) == ("8086:1583", "testpmd-fwd")
    assert match.how.startswith("name (no id in the input")


def test_a_new_nic_is_one_row(table):
    row = '1d0f,efa1,A new NIC,New NIC 100G,100,1,4,16,testpmd-fwd,,"its datasheet"\n'
    table.write_text(table.read_text() + row)
    match = nics.find_nic(0x1D0F, 0xEFA1, None)
    assert (match.row.name, match.row.eth_gbps, match.profile) == ("A new NIC", 100, "testpmd-fwd")


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("1d0f,efa1,X,X,33,1,4,16,,,src", "line rate 33"),
        ("1d0f,efa1,X,X,100,1,9,16,,,src", "generation 9"),
        ("1d0f,efa1,X,X,100,1,4,16,nosuch,,src", "profile nosuch"),
        ("1d0f,efa1,X,X,100,1,4,16,,,", "no source"),
        ("zz,efa1,X,X,100,1,4,16,,,src", "line"),
    ],
)
def test_a_bad_row_is_refused_by_its_line(table, row, words):
    table.write_text(table.read_text() + row + "\n")
    with pytest.raises(UsageError, match=words):
        nics.nic_rows()


@pytest.mark.skipif(not TEXTS, reason=f"{SHARED} is absent")
def test_each_rows_link_is_what_real_lspci_outputs_print():
    # Real NICs' LnkCap registers (../shared/data: ConnectX-3/4 Lx/5 Ex/7, 82599, X520, E810,
    # X550, I350, XL710) against the table's generation and width for their ids.
    seen = set()
    for path in TEXTS:
        for device in parse_lspci(read_lspci_text(path)):
            match = nics.find_nic(device.vendor_id, device.device_id, device.name)
            if match.row is None or device.express is None or device.express.lanes_cap is None:
                continue
            e = device.express
            assert (e.gen_cap, e.lanes_cap) == (match.row.gen, match.row.lanes), (path, device.bdf)
            seen.add(match.row.ids)
    assert len(seen) >= 8

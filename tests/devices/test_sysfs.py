"""A machine's devices read from sysfs: a tree the tests write (a root-readable 4096-byte
configuration space, a 64-byte one as a user without root reads it, a device without a PCI
Express capability), and this machine's, whose form alone is checked."""

import json

import pytest

import pcieperf as pp
from pcieperf.devices.pci_ids import PciIds
from pcieperf.devices.sysfs import cpu_nodes, hugepages, read_devices
from tests.helpers.pci import config_space, write_device, write_host

PCI_IDS = """\
# a pci.ids of three lines' worth
8086  Intel Corporation
\t1583  Ethernet Controller XL710 for 40GbE QSFP+
1af4  Red Hat, Inc.
\t1041  Virtio 1.0 network device
C 02  Network controller
\t00  Ethernet controller
C 06  Bridge
\t04  PCI bridge
"""


@pytest.fixture
def sysfs(tmp_path):
    """Three devices behind one root port, two NUMA nodes, no hugepages."""
    root = tmp_path / "sys"
    port = config_space(class_code=0x0604, port_type=4, bridge_buses=(0, 1, 1), speed_cap=3)
    write_device(root, "0000:00:01.0", port, attributes={"current_link_speed": "8.0 GT/s PCIe"})
    # the NIC: root reads all 4096 bytes; trained x4 of x8, ExtTag off, MRRS 128
    nic = config_space(width=4, ext_tag=False, mrrs=0)
    write_device(
        root,
        "0000:01:00.0",
        nic,
        parent="0000:00:01.0",
        attributes={"numa_node": "1"},
        driver="vfio-pci",
        group=(12, "DMA"),
    )
    # an NVMe drive as a user without root reads it: 64 bytes; the link from sysfs
    nvme = config_space(vendor=0x144D, device=0xA808, class_code=0x0108, size=64)
    link = {"current_link_speed": "8.0 GT/s PCIe", "current_link_width": "4"}
    link |= {"max_link_speed": "16.0 GT/s PCIe", "max_link_width": "4"}
    write_device(root, "0000:00:02.0", nvme, attributes=link)
    # virtio-net: vendor-specific and MSI-X capabilities, no PCI Express one
    virtio = config_space(
        vendor=0x1AF4, device=0x1041, express=False, caps_before=[9, 0x11], size=256
    )
    write_device(root, "0000:00:03.0", virtio, driver="virtio-pci")
    write_host(root, hugepages={"2048kB": 0, "1048576kB": 0}, nodes={0: "0-1", 1: "2-3"})
    ids = tmp_path / "pci.ids"
    ids.write_text(PCI_IDS)
    return root, ids


def test_each_device_as_its_files_say(sysfs):
    root, ids = sysfs
    found = {d.bdf: d for d in read_devices(root, PciIds(ids.read_text()))}
    assert sorted(found) == ["0000:00:01.0", "0000:00:02.0", "0000:00:03.0", "0000:01:00.0"]
    nic = found["0000:01:00.0"]
    assert nic.name == "Intel Corporation Ethernet Controller XL710 for 40GbE QSFP+"
    assert (nic.class_name, nic.driver, nic.numa_node) == ("Ethernet controller", "vfio-pci", 1)
    assert (nic.iommu_group, nic.iommu_mode, nic.parent) == (12, "DMA", "0000:00:01.0")
    e = nic.express
    assert (e.gen, e.lanes, e.lanes_cap, e.downgraded) == (3, 4, 8, True)
    assert (e.mps, e.mrrs, e.ext_tag, e.tags) == (256, 128, False, 32)


def test_sixty_four_bytes_leave_the_registers_unknown_and_say_so(sysfs):
    root, _ = sysfs
    nvme = {d.bdf: d for d in read_devices(root, PciIds())}["0000:00:02.0"]
    assert nvme.has_express is True  # Linux shows link attributes for PCIe devices only
    assert (nvme.express.gen, nvme.express.lanes, nvme.express.gen_cap) == (3, 4, 4)
    assert (nvme.express.mps, nvme.express.mrrs, nvme.express.tags) == (None, None, None)
    assert "past the bytes readable" in nvme.notes[0]
    assert nvme.name == "Device 144d:a808"  # no pci.ids: as lspci writes it


def test_a_device_without_the_capability_is_listed_as_such(sysfs):
    root, _ = sysfs
    virtio = {d.bdf: d for d in read_devices(root, PciIds())}["0000:00:03.0"]
    assert (virtio.has_express, virtio.express, virtio.notes) == (False, None, ())


def test_host_facts(sysfs):
    root, _ = sysfs
    assert hugepages(root) == {"1048576kB": 0, "2048kB": 0}
    assert cpu_nodes(root) == {0: 0, 1: 0, 2: 1, 3: 1}


def test_devices_prices_the_nic_with_the_models(sysfs):
    root, ids = sysfs
    rows = {r["bdf"]: r for r in pp.devices(sysfs=root, pci_ids=ids, lcores="0-1").to_json()}
    nic = rows["0000:01:00.0"]
    # the NIC table's row for 8086:1583, and pp.nic on the device's link: Gen3 x4, MPS 256,
    # MRRS 128, 32 tags, the XL710's profile at its 40 GbE line
    assert (nic["nic"], nic["profile"], nic["eth_gbps"]) == (
        "Intel XL710 40 GbE (dual-port QSFP+)",
        "testpmd-fwd",
        40,
    )
    settings = {"profile": "testpmd-fwd", "eth": 40, "mps": 256, "mrrs": 128, "tags": 32}
    now = pp.nic(sizes=64, gen=3, lanes=4, **settings).to_json()[0]
    fixed = pp.nic(sizes=64, gen=3, lanes=8, **settings).to_json()[0]
    assert nic["ceiling_mpps_64"] == now["max_pps"] / 1e6
    assert nic["ceiling_mpps_64_capable"] == fixed["max_pps"] / 1e6
    assert nic["pcie_gbps_up"] == pp.link(gen=3, lanes=4).to_json()["tlp_gbps"]
    advice = "\n".join(nic["advice"])
    assert f"{now['max_pps'] / 1e6:.2f} Mpps now" in advice
    for words in ("MRRS 128 B", "ExtTag off: 32 read tags", "on NUMA node 1", "IOMMU translates"):
        assert words in advice
    assert "no hugepages reserved" in advice
    assert rows["0000:00:03.0"]["advice"][0].startswith("no PCI Express link to price")


def test_this_machine_in_its_form():
    # Only the form: what this machine has is its own (a VM: virtio and no PCIe links).
    result = pp.devices()
    rows = json.loads(json.dumps(result.to_json()))
    contract = {"bdf", "class", "name", "vendor_id", "device_id", "driver", "numa_node", "gen"}
    contract |= {"lanes", "gen_cap", "lanes_cap", "downgraded", "mps", "mps_cap", "mrrs"}
    contract |= {"ext_tag", "ten_bit_tag", "relaxed_ordering", "iommu_group", "iommu_mode"}
    nic_keys = {"profile", "pcie_gbps_up", "pcie_gbps_down", "ceiling_mpps_64"}
    nic_keys |= {"ceiling_mpps_64_capable", "limited_by", "advice"}
    for row in rows:
        assert contract <= row.keys()
        assert not row["express"] or row["gen"] is None or row["gen"] in range(1, 7)
        if row["class_code"] and row["class_code"].startswith("02"):
            assert nic_keys <= row.keys()

"""`report --devices`: the section of devices and findings, on by default where sysfs shows a
network controller with a PCI Express link, asked for or left out by the flag."""

import pytest

import pcieperf as pp
from pcieperf.report.api import _devices
from pcieperf.report.html import devices_section
from tests.helpers import SHARED
from tests.helpers.pci import config_space, write_device

CX4LX = SHARED / "lspci" / "11-cx4lx-x8-to-x4-okmarkers.txt"


def machine(tmp_path, pcie_nic):
    """A sysfs with one NIC: with a PCI Express link, or a virtio one without."""
    root = tmp_path / "sys"
    if pcie_nic:
        link = {"current_link_speed": "8.0 GT/s PCIe", "current_link_width": "8"}
        write_device(root, "0000:01:00.0", config_space(), attributes=link)
    else:
        virtio = config_space(vendor=0x1AF4, device=0x1041, express=False, size=256)
        write_device(root, "0000:00:03.0", virtio)
    return root


@pytest.mark.parametrize(
    ("pcie_nic", "asked", "shown"),
    [(True, None, True), (False, None, False), (False, True, True), (True, False, False)],
)
def test_the_section_is_on_where_sysfs_has_a_pcie_nic(tmp_path, pcie_nic, asked, shown):
    found = _devices(asked, None, machine(tmp_path, pcie_nic))
    assert (found is not None) == shown


def test_the_section_holds_the_devices_the_prices_and_the_findings(tmp_path):
    found = pp.devices(sysfs=machine(tmp_path, True))
    page = devices_section(found.to_json(), found.title)
    assert "0000:01:00.0" in page
    assert "Gen3 x8" in page
    assert "devices.csv" in page


@pytest.mark.slow
@pytest.mark.skipif(not CX4LX.is_file(), reason=f"{CX4LX} is absent")
def test_a_report_of_a_saved_text(tmp_path):
    written = pp.report(out=tmp_path / "r", lspci=CX4LX)
    assert "devices.csv" in written.files
    page = written.index.read_text()
    assert "link Gen3 x4 runs below Gen3 x8" in page

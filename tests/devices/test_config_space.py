"""Configuration space decoded as lspci decodes it (PCI Express Base Specification 6.0, §7.5.1
and §7.5.3): each field from its encoding, the capability list walked, and what cannot be read
said, never guessed."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.devices.config_space import parse_config
from tests.helpers.pci import config_space


def test_every_field_of_the_express_capability():
    # §7.5.3.3/4: MPS and MRRS are 128 << code; §7.5.3.6/8: speed code 4 is 16 GT/s.
    e = parse_config(config_space(mps_cap=3, mps=2, mrrs=5, speed_cap=4, width_cap=16)).express
    assert (e.mps_cap, e.mps, e.mrrs) == (1024, 512, 4096)
    assert (e.speed_cap_gts, e.lanes_cap, e.gen_cap) == (16.0, 16, 4)
    assert (e.port_type, e.ext_tag, e.relaxed_ordering, e.no_snoop) == (
        "Endpoint",
        True,
        True,
        True,
    )


def test_a_link_trained_below_its_capability_is_downgraded():
    e = parse_config(config_space(speed_cap=4, width_cap=16, speed=3, width=8)).express
    assert (e.gen, e.lanes, e.downgraded) == (3, 8, True)
    assert parse_config(config_space()).express.downgraded is False


@pytest.mark.parametrize(
    ("ext_tag", "ten_bit", "tags"),
    [(False, False, 32), (True, False, 256), (True, True, 768)],  # PCIe §2.2.6.2
)
def test_the_tags_the_control_bits_allow(ext_tag, ten_bit, tags):
    config = config_space(ext_tag=ext_tag, ten_bit_cap=ten_bit, ten_bit=ten_bit)
    assert parse_config(config).express.tags == tags


def test_the_header_of_a_bridge():
    header = parse_config(config_space(class_code=0x0604, bridge_buses=(0, 3, 5))).header
    assert (header.class_code, header.secondary_bus, header.subordinate_bus) == (0x0604, 3, 5)


def test_a_device_without_the_capability_has_none():
    # virtio-net on a VM: vendor-specific (09h) and MSI-X (11h) capabilities, no PCIe one.
    found = parse_config(config_space(express=False, caps_before=[0x09, 0x11], size=256))
    assert (found.express, found.express_read, found.notes) == (None, True, [])


def test_the_capability_is_found_behind_others():
    found = parse_config(config_space(caps_before=[0x01, 0x05], size=256))
    assert found.express.mps == 256


def test_sixty_four_bytes_say_the_registers_were_not_read():
    # A user without root reads 64 bytes of sysfs `config` (Linux pci-sysfs.c).
    found = parse_config(config_space(size=64))
    assert found.header.vendor_id == 0x8086
    assert (found.express, found.express_read) == (None, False)
    assert "past the bytes readable" in found.notes[0]


def test_a_version_1_capability_has_no_ten_bit_tag_bits():
    e = parse_config(config_space(version=1)).express
    assert (e.ten_bit_tag_cap, e.ten_bit_tag) == (None, None)


def test_a_root_complex_integrated_endpoint_has_no_link():
    e = parse_config(config_space(port_type=9)).express
    assert (e.port_type, e.speed_gts, e.lanes, e.has_link) == (
        "Root Complex Integrated Endpoint",
        None,
        None,
        False,
    )


def test_a_reserved_encoding_is_unknown_with_a_note():
    # §7.5.3.4: Max_Payload_Size 110b is reserved; speed code 7 is none PCIe 6.0 defines.
    found = parse_config(config_space(mps=6, speed=7))
    assert (found.express.mps, found.express.speed_gts) == (None, None)
    assert len(found.notes) == 2


def test_a_looping_capability_list_ends_with_a_note():
    data = bytearray(config_space(express=False, caps_before=[0x01], size=256))
    data[0x41] = 0x40  # the capability at 40h names itself as the next
    found = parse_config(bytes(data))
    assert found.express is None
    assert "loops" in found.notes[0]


def test_fewer_than_64_bytes_give_no_header():
    assert parse_config(b"\x86\x80").header is None


@given(st.binary(max_size=4096))
def test_any_bytes_decode_without_failing(data):
    # A corrupt dump, a truncated file: every outcome is a result, never an exception.
    found = parse_config(data)
    if found.express is not None:
        assert found.express.mps in (None, 128, 256, 512, 1024, 2048, 4096)

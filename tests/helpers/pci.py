"""Configuration space and sysfs trees written byte by byte for the devices tests: the
registers at the offsets the PCI Express Base Specification 6.0 gives (§7.5.1 header, §7.5.3
PCI Express capability), so that a test states each field's encoding itself."""

import os
import struct
from pathlib import Path

EXPRESS_ID = 0x10  # §7.5.3: the PCI Express capability's ID
CAP_STRIDE = 0x40  # these configs place capabilities at 40h, 80h, C0h, ...


EXPRESS_FIELDS = {
    **{"version": 2, "port_type": 0, "mps_cap": 2, "mps": 1, "mrrs": 2},
    **{"ext_tag_cap": True, "ext_tag": True, "relaxed": True, "no_snoop": True},
    **{"speed_cap": 3, "width_cap": 8, "speed": 3, "width": 8},
    **{"ten_bit_cap": False, "ten_bit": False},
}
"""The PCI Express capability's fields as `config_space` writes them unless told: a Gen3 x8
endpoint, MPS 256 of 512, MRRS 512, extended tags, as an XL710 trains."""


def config_space(
    *,
    vendor=0x8086,
    device=0x1583,
    class_code=0x0200,
    size=4096,
    express=True,
    bridge_buses=None,
    caps_before=(),
    **changes,
):
    """A device's configuration space: `changes` to `EXPRESS_FIELDS` as the registers encode
    them (`mps` 1 is 256 B, `speed` 3 is 8 GT/s); `caps_before` are capability IDs linked
    ahead of the PCI Express one (or alone, `express=False`)."""
    f = EXPRESS_FIELDS | changes
    data = bytearray(size)
    struct.pack_into("<HH", data, 0x00, vendor, device)
    struct.pack_into("<H", data, 0x0A, class_code)  # subclass at 0Ah, base class at 0Bh
    data[0x0E] = 1 if bridge_buses else 0
    if bridge_buses:
        data[0x18], data[0x19], data[0x1A] = bridge_buses
    caps = [*caps_before, *([EXPRESS_ID] if express else [])]
    places = [CAP_STRIDE * (k + 1) for k in range(len(caps))]  # 40h, 80h, C0h, ...
    if caps:
        struct.pack_into("<H", data, 0x06, 0x10)  # Status: Capabilities List
        data[0x34] = places[0]
    for ident, here, nxt in zip(caps, places, [*places[1:], 0][: len(caps)], strict=True):
        if here + 2 <= size:
            data[here], data[here + 1] = ident, nxt
    e = places[-1] if express else 0
    if express and e + 0x2C <= size:
        struct.pack_into("<H", data, e + 0x02, f["version"] | f["port_type"] << 4)
        struct.pack_into("<I", data, e + 0x04, f["mps_cap"] | f["ext_tag_cap"] << 5)
        devctl = f["relaxed"] << 4 | f["mps"] << 5 | f["ext_tag"] << 8 | f["no_snoop"] << 11
        struct.pack_into("<H", data, e + 0x08, devctl | f["mrrs"] << 12)
        struct.pack_into("<I", data, e + 0x0C, f["speed_cap"] | f["width_cap"] << 4)
        struct.pack_into("<H", data, e + 0x12, f["speed"] | f["width"] << 4)
        struct.pack_into("<I", data, e + 0x24, f["ten_bit_cap"] << 17)
        struct.pack_into("<H", data, e + 0x28, f["ten_bit"] << 12)
    return bytes(data)


def write_device(sysfs, bdf, config, *, parent=None, attributes=None, driver=None, group=None):
    """A device folder under sysfs's devices tree, linked from /sys/bus/pci/devices as Linux
    links it; `attributes` are its sysfs files by name (`class`, `current_link_speed`, ...)."""
    top = Path(sysfs) / "devices" / "pci0000:00"
    folder = (top / parent / bdf) if parent else top / bdf
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config").write_bytes(config)
    vendor, device = struct.unpack_from("<HH", config.ljust(4, b"\0"))
    files = {"vendor": f"0x{vendor:04x}", "device": f"0x{device:04x}", "numa_node": "-1"}
    code = int.from_bytes(config[0x09:0x0C].ljust(3, bytes(1)), "little")
    files["class"] = f"0x{code:06x}"
    for name, text in (files | (attributes or {})).items():
        (folder / name).write_text(text + "\n")
    if driver:
        drivers = Path(sysfs) / "bus" / "pci" / "drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        (folder / "driver").symlink_to(os.path.relpath(drivers, folder))
    if group is not None:
        groups = Path(sysfs) / "kernel" / "iommu_groups" / str(group[0])
        groups.mkdir(parents=True, exist_ok=True)
        (groups / "type").write_text(group[1] + "\n")
        (folder / "iommu_group").symlink_to(os.path.relpath(groups, folder))
    listed = Path(sysfs) / "bus" / "pci" / "devices"
    listed.mkdir(parents=True, exist_ok=True)
    (listed / bdf).symlink_to(os.path.relpath(folder, listed))
    return folder


def write_host(sysfs, *, hugepages=None, nodes=None):
    """Hugepages reserved (`{"2048kB": 0}`) and NUMA nodes' CPU lists (`{0: "0-3"}`)."""
    for size, count in (hugepages or {}).items():
        folder = Path(sysfs) / "kernel" / "mm" / "hugepages" / f"hugepages-{size}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "nr_hugepages").write_text(f"{count}\n")
    for node, cpus in (nodes or {}).items():
        folder = Path(sysfs) / "devices" / "system" / "node" / f"node{node}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cpulist").write_text(cpus + "\n")

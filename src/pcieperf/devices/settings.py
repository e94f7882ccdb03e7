"""What a device gives the models, each value with the evidence it comes from: the link it
runs (LnkSta), the link it and its slot could train to (both LnkCap registers), MPS and MRRS
(DevCtl), the read tags its control bits allow (ExtTag, 10-bit tags), the NIC profile and line
rate of its row in the NIC table (or its port's negotiated speed). The one place that turns a
device into model options: `devices` prices NICs with it, and `nic`, `latency`, `dpdk-fwd` and
`iommu sim` take `--device` through it."""

from __future__ import annotations

from dataclasses import dataclass

from pcieperf.devices.device import Device
from pcieperf.devices.express import Express, link_text
from pcieperf.devices.nics import NicMatch, find_nic
from pcieperf.net.wire import RATES_GBPS

LINK_OPTIONS = ("gen", "lanes", "mps", "mrrs")


@dataclass(frozen=True)
class Evidence:
    """A value a device gives and where it comes from."""

    value: int | str
    source: str


@dataclass(frozen=True)
class Settings:
    """A device's model inputs: `found` by option name (`gen`, `lanes`, `mps`, `mrrs`, `tags`,
    `profile`, `eth`), `unknown` the options it gives none for and why; the link it could train
    to (`gen_capable`, `lanes_capable`, from the device's and its slot's capabilities)."""

    device: Device
    found: dict[str, Evidence]
    unknown: dict[str, str]
    match: NicMatch
    gen_capable: int | None
    lanes_capable: int | None
    capable_source: str

    def value(self, name: str) -> int | str | None:
        """The value the device gives for option `name`, None for none."""
        evidence = self.found.get(name)
        return None if evidence is None else evidence.value


def settings_of(device: Device, port: Device | None = None) -> Settings:
    """What `device` gives the models; `port` is the bridge above it (its slot), if known."""
    express = device.express or Express()
    found: dict[str, Evidence] = {}
    unknown: dict[str, str] = {}
    why = _why_unknown(device)
    link_values = {
        "gen": (express.gen, "LnkSta Current Link Speed"),
        "lanes": (express.lanes or None, "LnkSta Negotiated Link Width"),
        "mps": (express.mps, "DevCtl Max_Payload_Size"),
        "mrrs": (express.mrrs, "DevCtl Max_Read_Request_Size"),
        "tags": (express.tags, f"{express.tags_source}, PCIe §2.2.6.2"),
    }
    for name, (value, source) in link_values.items():
        if value is not None:
            found[name] = Evidence(value, source)
        else:
            unknown[name] = why if why else _unknown_field(name, express)
    match = find_nic(device.vendor_id, device.device_id, device.name)
    found["profile"] = Evidence(match.profile, f"by {match.how}: {match.profile_note}")
    eth = _line_rate(device, match)
    if isinstance(eth, Evidence):
        found["eth"] = eth
    else:
        unknown["eth"] = eth
    gen_capable, lanes_capable, capable_source = _capable(express, port)
    return Settings(device, found, unknown, match, gen_capable, lanes_capable, capable_source)


def iommu_profile(profile: str) -> tuple[str, str]:
    """The profile the IOMMU model prices a NIC of `profile` with: its own, or the default one
    where it is no descriptor-ring forwarding profile, and then why ("" where its own)."""
    from pcieperf.iommu.platform import port_profile_problem
    from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile

    if port_profile_problem(load_profile(profile)) is None:
        return profile, ""
    return DEFAULT_PROFILE, (
        f"the NIC's profile {profile} is no descriptor-ring profile the IOMMU model takes"
    )


def _why_unknown(device: Device) -> str:
    """Why no PCI Express field of `device` is known, or "" where some may be."""
    if device.has_express is False:
        return "it has no PCI Express capability (a conventional PCI or virtual device)"
    if device.has_express is None:
        return "its capabilities could not be read" + (
            f" ({device.notes[0]})" if device.notes else ""
        )
    return ""


def _unknown_field(name: str, express: Express) -> str:
    """Why one field of a readable capability is unknown."""
    if name in ("gen", "lanes") and express.lanes == 0:
        return "its link is down (LnkSta Width x0)"
    if name in ("gen", "lanes"):
        return "its link speed is unknown"
    return "the registers holding it were not read (configuration space needs root)"


def _line_rate(device: Device, match: NicMatch) -> Evidence | str:
    """One port's Ethernet rate: its negotiated speed where a kernel driver has the link up,
    else its NIC table row's, else why there is none."""
    speed = device.net_speed_mbps
    if speed is not None and speed % 1000 == 0 and speed // 1000 in RATES_GBPS:
        return Evidence(speed // 1000, "the port's negotiated speed (sysfs net/*/speed)")
    if match.row is not None:
        return Evidence(match.row.eth_gbps, f"{match.row.name} in the NIC table ({match.how})")
    return "its line rate is unknown (not in the NIC table, no negotiated speed in sysfs)"


def _capable(express: Express, port: Device | None) -> tuple[int | None, int | None, str]:
    """The link the device and its slot could train to: the lower of both Link Capabilities,
    or the device's alone where the port above it is not in the input (said so)."""
    gen, lanes = express.gen_cap, express.lanes_cap
    slot = port.express if port is not None and port.express is not None else None
    if slot is None or (slot.gen_cap is None and slot.lanes_cap is None):
        return gen, lanes, "the device's LnkCap; its slot's is not in the input"
    both_gen = [g for g in (gen, slot.gen_cap) if g is not None]
    both_lanes = [n for n in (lanes, slot.lanes_cap) if n]
    shown = link_text(slot.gen_cap, slot.lanes_cap)
    return (
        min(both_gen) if both_gen else None,
        min(both_lanes) if both_lanes else None,
        f"the device's LnkCap and its port {port.bdf if port else ''}'s, {shown}",
    )

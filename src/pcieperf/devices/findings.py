"""Findings a user acts on, one line each with the number behind it, for a NIC on its link:
a link trained below what both ends support (the 64 B ceiling now and if fixed: `pp.nic`), an
MPS or MRRS that costs DMA efficiency (`pp.dma`, `pp.nic`), too few read tags for the link's
bandwidth-delay product (`pp.latency`'s tag bound), a NIC on another NUMA node than the lcores
named, IOMMU translation at the user's rings (`pp.iommu.sim`), no hugepages reserved. Each
number comes from the model that owns the question; nothing here models anything itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pcieperf.devices.device import Device
from pcieperf.devices.express import MRRS_RESET_BYTES, TAGS_8BIT, link_text
from pcieperf.devices.inventory import Host
from pcieperf.devices.pricing import NicPrice, ceiling
from pcieperf.devices.settings import LINK_OPTIONS, Settings, iommu_profile
from pcieperf.nic.profile import DEFAULT_PROFILE

FULL_FRAME = 1518  # the largest untagged Ethernet frame (IEEE 802.3 §3.2.7): the most bytes
DMA_BYTES = 1500  # a full frame's payload as the DMA model's sizes count it
TRANSLATED = ("DMA", "DMA-FQ")  # /sys/kernel/iommu_groups/*/type: the kernel translates DMA
USER_DRIVERS = ("vfio-pci",)  # VFIO maps a user process's memory: translation on whatever type


def findings(
    device: Device, settings: Settings, price: NicPrice | None, port: Device | None, host: Host
) -> list[str]:
    """Every finding for a network controller, most costly first."""
    if price is None:
        return [_unpriced(device, settings)]
    rules: list[Callable[[], list[str]]] = [
        lambda: _link(device, settings, price, port),
        lambda: _payload(device, price, port),
        lambda: _tags(device, price),
        lambda: _numa(device, host),
        lambda: _iommu(device, price, host),
        lambda: _hugepages(host),
        lambda: price.assumed,
    ]
    return [line for rule in rules for line in rule()]


def _mpps(row: dict[str, Any]) -> str:
    """`12.34 Mpps (limited by pcie_up)`."""
    return f"{row['max_pps'] / 1e6:.2f} Mpps (limited by {' + '.join(row['limited_by'])})"


def _unpriced(device: Device, settings: Settings) -> str:
    """Why a network controller has no price."""
    why = settings.unknown.get("gen") or settings.unknown.get("lanes") or "its link is unknown"
    return f"no PCI Express link to price: {why}"


def _link(device: Device, settings: Settings, price: NicPrice, port: Device | None) -> list[str]:
    """A link trained below what both ends support, or a slot narrower than the device."""
    now = {k: price.options[k] for k in ("gen", "lanes")}
    lines = []
    if (price.capable["gen"], price.capable["lanes"]) != (now["gen"], now["lanes"]) and (
        price.capable["gen"] >= now["gen"] and price.capable["lanes"] >= now["lanes"]
    ):
        capable = link_text(price.capable["gen"], price.capable["lanes"])
        lines.append(
            f"link {link_text(now['gen'], now['lanes'])} runs below {capable} "
            f"({settings.capable_source}): 64 B ceiling {price.mpps_64:.2f} Mpps now (limited "
            f"by {' + '.join(price.limited_by)}), {price.mpps_64_capable:.2f} Mpps at {capable} "
            "(reseat the card; check the slot's wiring and the BIOS link settings)"
        )
    express = device.express
    own = (express.gen_cap, express.lanes_cap) if express else (None, None)
    slot_bound = port is not None and None not in own and own != tuple(price.capable.values())
    if slot_bound and own[0] is not None and own[1] is not None:
        wider = ceiling(price.options | {"gen": own[0], "lanes": own[1]})
        lines.append(
            f"its slot (port {port.bdf if port else ''}) holds it to "
            f"{link_text(price.capable['gen'], price.capable['lanes'])}; in a "
            f"{link_text(*own)} slot the 64 B ceiling is {_mpps(wider)}"
        )
    return lines


def _changed(
    options: dict[str, Any], op: str, name: str, value: int
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A full frame's DMA `op` now and with option `name` at `value` (the DMA model), and the
    full-frame ceilings of both (the NIC model), as words."""
    link = {k: options[k] for k in LINK_OPTIONS if k in options}
    then = options | {name: value}
    frames = (
        f"{FULL_FRAME} B frames: {_mpps(ceiling(options, FULL_FRAME))}, "
        f"{_mpps(ceiling(then, FULL_FRAME))} at {value} B"
    )
    return _dma_row(op, link), _dma_row(op, link | {name: value}), frames


def _dma_row(op: str, link: dict[str, Any]) -> dict[str, Any]:
    """The DMA model's row for one full frame's `op` ("read" or "write") on `link`."""
    from pcieperf.pcie.api import dma

    rows = dma(op="read" if op == "read" else "write", sizes=[DMA_BYTES], **link).to_json()
    if not isinstance(rows, list):
        raise TypeError("dma's JSON is one row per size")
    row: dict[str, Any] = rows[0]
    return row


def _payload(device: Device, price: NicPrice, port: Device | None) -> list[str]:
    """MRRS below the reset default, MPS below what both ends support: the DMA model's cost of
    a full frame and the NIC model's full-frame ceiling, now and changed."""
    options, lines = price.options, []
    mrrs = options.get("mrrs")
    if mrrs is not None and mrrs < MRRS_RESET_BYTES:
        dma_now, dma_then, frames = _changed(options, "read", "mrrs", MRRS_RESET_BYTES)
        lines.append(
            f"MRRS {mrrs} B: a 64 B read is one request, a {DMA_BYTES} B Tx read "
            f"{dma_now['tlps_up']} ({dma_then['tlps_up']} at {MRRS_RESET_BYTES} B, the PCIe "
            f"default), {dma_now['bytes_up']} B upstream instead of {dma_then['bytes_up']}; "
            f"{frames} (setpci, or the driver's MRRS setting)"
        )
    slot = port.express.mps_cap if port is not None and port.express is not None else None
    own = device.express.mps_cap if device.express is not None else None
    best = min((c for c in (own, slot) if c is not None), default=None)
    ends = "both ends support" if slot is not None else "the device supports"
    unknown = "" if slot is not None else " (its port's limit is not in the input)"
    mps = options.get("mps")
    if mps is not None and best is not None and mps < best:
        dma_now, dma_then, frames = _changed(options, "write", "mps", best)
        lines.append(
            f"MPS {mps} B where {ends} {best} B{unknown}: {DMA_BYTES} B writes reach "
            f"{dma_now['effective_gbps']:.1f} Gb/s of {price.pcie_gbps:.1f} "
            f"({dma_then['effective_gbps']:.1f} at {best} B); {frames} "
            "(Linux sets MPS at boot: pci=pcie_bus_perf)"
        )
    return lines


def _tags(device: Device, price: NicPrice) -> list[str]:
    """Extended tags off, or fewer tags than 64 B at line rate keeps in flight: the latency
    model's tag bound at the host's read round trip."""
    from pcieperf.nic.api import latency

    express = device.express
    tags = price.options.get("tags")
    if express is None or tags is None or "eth" not in price.options:
        return []  # without the line rate there is no rate to hold reads in flight for
    keys = ("profile", "eth", *LINK_OPTIONS, "tags")
    row = latency(sizes=[64], **{k: price.options[k] for k in keys if k in price.options})
    first = row.to_json()
    assert isinstance(first, list)
    needed, bound = first[0]["tags_needed"], first[0]["tag_bound_pps"]
    off = express.ext_tag is False
    if not off and needed <= tags:
        return []
    enough = " (enough at this line rate)" if needed <= tags else ""
    fix = ""
    if off:
        fix = f"; ExtTag+ gives {TAGS_8BIT}" if express.ext_tag_cap else "; it has no ExtTag"
    return [
        f"{'ExtTag off: ' if off else ''}{tags} read tags, and 64 B at line rate keeps "
        f"{needed:.0f} reads in flight (latency model, the assumed host's read round trip): "
        f"the tags hold 64 B to {bound / 1e6:.2f} Mpps{enough}{fix}"
    ]


def _numa(device: Device, host: Host) -> list[str]:
    """A NIC on another NUMA node than every lcore named."""
    if not host.lcores or host.cpu_nodes is None or device.numa_node is None:
        return []
    nodes = sorted({host.cpu_nodes[c] for c in host.lcores if c in host.cpu_nodes})
    if device.numa_node in nodes:
        return []
    local = sorted(c for c, n in host.cpu_nodes.items() if n == device.numa_node)
    return [
        f"on NUMA node {device.numa_node}, but the lcores are on node "
        f"{', '.join(map(str, nodes))}: every DMA and descriptor access crosses the socket "
        f"interconnect; run the lcores on node {device.numa_node} (CPUs {_cpus(local)})"
    ]


def _cpus(cpus: list[int]) -> str:
    """CPUs as a list with ranges, `0-3,8`."""
    runs: list[list[int]] = []
    for cpu in cpus:
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _iommu(device: Device, price: NicPrice, host: Host) -> list[str]:
    """IOMMU translation of the NIC's DMA: its cost at the user's rings on the pages DPDK will
    use (the IOMMU model); passthrough says there is none."""
    if host.hugepages is None:  # not this machine: its IOMMU is not in an lspci text
        return []
    if device.iommu_group is None:
        return ["no IOMMU group: DMA is not translated (no IOTLB cost)"]
    translated = device.iommu_mode in TRANSLATED or device.driver in USER_DRIVERS
    if not translated:
        return [f"IOMMU group {device.iommu_group} is {device.iommu_mode}: no translation cost"]
    from pcieperf.iommu.api import sim

    profile = str(price.options.get("profile", DEFAULT_PROFILE))
    priced_with, stand_in = iommu_profile(profile)
    options: dict[str, Any] = {
        **{k: price.options[k] for k in ("gen", "lanes", "eth") if k in price.options},
        "profile": priced_with,
        "rxd": host.rxd,
        "frame": "64",
    }
    huge = sorted(size for size, count in host.hugepages.items() if count > 0)
    page = "4k" if not huge else ("2m" if "2048kB" in huge else "1g")
    found = sim(page=page, **options).to_json()
    assert isinstance(found, dict)
    line = (
        f"IOMMU translates its DMA (group {device.iommu_group}, {device.iommu_mode or 'VFIO'}):"
        f" 64 B on {page} pages at rxd {host.rxd}: {found['mpps_iommu']:.2f} Mpps of "
        f"{found['mpps_no_iommu']:.2f} untranslated (limited by "
        f"{' + '.join(found['limited_by'])}; IOMMU model"
        + (f", {priced_with} standing in for {profile})" if stand_in else ")")
    )
    if page == "4k":
        huge_run = sim(page="2m", **options).to_json()
        assert isinstance(huge_run, dict)
        line += f"; on 2 MiB pages {huge_run['mpps_iommu']:.2f} Mpps"
    return [line]


def _hugepages(host: Host) -> list[str]:
    """No hugepages reserved on this machine."""
    if host.hugepages is None or any(host.hugepages.values()):
        return []
    return [
        "no hugepages reserved (/sys/kernel/mm/hugepages): DPDK needs them, or runs --no-huge "
        "on 4 KiB pages, one IOTLB entry each (e.g. dpdk-hugepages.py --setup 1G)"
    ]

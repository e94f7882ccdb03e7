"""A NIC priced on the link it has: the TLP bandwidth per direction (`pp.link`'s model), and
the highest 64 B forwarding rate the NIC model (`pp.nic`: its profile, its tags, the line)
gives on that link and on the one the device and its slot could train to. Options the device
does not give are priced at the model's defaults, and said so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcieperf.devices.settings import LINK_OPTIONS, Settings
from pcieperf.nic.api import nic
from pcieperf.pcie.api import make_link

FRAME_BYTES = 64  # the smallest Ethernet frame (IEEE 802.3 §4.4.2): the most packets per second


@dataclass(frozen=True)
class NicPrice:
    """What the models give for a NIC: `options` as `pp.nic` took them, the TLP Gb/s per
    direction, the 64 B ceilings (Mpps) now and on the capable link and what limits each;
    `assumed` names each option priced at its default, with why."""

    options: dict[str, Any]
    pcie_gbps: float
    mpps_64: float
    limited_by: list[str]
    mpps_64_capable: float
    limited_by_capable: list[str]
    capable: dict[str, int]
    assumed: list[str] = field(default_factory=list)


def nic_options(settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """The options `pp.nic` takes from a device's settings, and the ones left at their
    defaults, each with why."""
    options: dict[str, Any] = {}
    assumed = []
    for name in (*LINK_OPTIONS, "tags", "profile", "eth"):
        value = settings.value(name)
        if value is not None:
            options[name] = value
        elif name in settings.unknown and name not in ("gen", "lanes", "tags"):
            assumed.append(f"{name} at the default: {settings.unknown[name]}")
    if "tags" not in options and "tags" in settings.unknown:
        assumed.append(f"tags from the profile: {settings.unknown['tags']}")
    return options, assumed


def price_nic(settings: Settings) -> NicPrice | None:
    """The NIC's price on its link and on the capable one; None where the link is unknown (no
    PCI Express link, a link that is down, or capabilities that could not be read)."""
    options, assumed = nic_options(settings)
    if "gen" not in options or "lanes" not in options:
        return None
    now = ceiling(options)
    capable = {
        "gen": settings.gen_capable or options["gen"],
        "lanes": settings.lanes_capable or options["lanes"],
    }
    better = ceiling(options | capable)
    return NicPrice(
        options=options,
        pcie_gbps=make_link(**{k: options[k] for k in LINK_OPTIONS if k in options}).tlp_gbps,
        mpps_64=now["max_pps"] / 1e6,
        limited_by=list(now["limited_by"]),
        mpps_64_capable=better["max_pps"] / 1e6,
        limited_by_capable=list(better["limited_by"]),
        capable=capable,
        assumed=assumed,
    )


def ceiling(options: dict[str, Any], frame: int = FRAME_BYTES) -> dict[str, Any]:
    """`pp.nic`'s row for `frame`-byte frames with `options`."""
    rows = nic(sizes=frame, **options).to_json()
    assert isinstance(rows, list)  # nic's JSON is one row per size
    row: dict[str, Any] = rows[0]
    return row

"""`pp.capture_demand`: the PCIe bandwidth captures need from a NIC profile (`pcieperf trace
demand`). It lives with the NIC model, which prices the packets; reading the captures and
summing per window is the net package's (`net.api.priced_demand`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pcieperf.net.api import priced_demand
from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile
from pcieperf.pcie.api import make_link
from pcieperf.results import Report
from pcieperf.units import parse_duration_ns

if TYPE_CHECKING:
    from typing import Unpack

    from pcieperf.pcie.api import LinkOptions


def capture_demand(
    files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    profile: str = DEFAULT_PROFILE,
    paths: str = "rx,tx",
    window: str = "1ms",
    archive: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
    scheduler: str | None = None,
    debug: bool = False,
    **link_options: Unpack[LinkOptions],
) -> Report:
    """Mean and peak PCIe Gb/s up and down per `window` that replaying captures through NIC
    `profile` (a built-in name or a .toml file) needs on the link `link_options` describe
    (`pcie.api.make_link`), and how many windows exceed it; per file, or per port of an
    archive (`archive`), on Dask. `paths`: the DMA paths priced, "rx", "tx" or "rx,tx"."""
    from pcieperf.nic import nic  # numpy: not for the light capture commands
    from pcieperf.nic.api import dma_paths

    window_ns = parse_duration_ns(window, "window")
    link = make_link(**link_options)
    nic_profile = load_profile(profile)
    return priced_demand(
        files,
        cost=nic.demand_cost(nic_profile, link, window_ns, dma_paths(paths)),
        profile=nic_profile.name,
        capacity_gbps=link.tlp_bytes_per_s * 8 / 1e9,
        window_ns=window_ns,
        archive=archive,
        skip_bad=skip_bad,
        strict=strict,
        scheduler=scheduler,
        debug=debug,
    )

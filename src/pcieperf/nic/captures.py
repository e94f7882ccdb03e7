"""`pp.capture_demand` and `pp.nic_trace`: the PCIe bandwidth captures need from a NIC profile
(`pcieperf trace demand`, `pcieperf nic --trace`; `dpdk-fwd --trace` reports through
`demand_report` too). It lives with the NIC model, which prices the packets; reading the
captures and summing per window is the net package's (`net.api.priced_demand`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf.net.api import priced_demand
from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile
from pcieperf.pcie.api import make_link
from pcieperf.results import Report
from pcieperf.text import format_table, plural
from pcieperf.units import duration_text, duration_token, parse_duration_ns

if TYPE_CHECKING:
    from typing import Unpack

    from pcieperf.net.trace.bandwidth import Demand
    from pcieperf.net.trace.timeline import Timeline
    from pcieperf.pcie.api import LinkOptions
    from pcieperf.pcie.link import Link


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


def nic_trace(
    trace: str | os.PathLike[str],
    *,
    profile: str = DEFAULT_PROFILE,
    paths: str = "rx,tx",
    window: str = "1ms",
    skip_bad: bool = False,
    **link_options: Unpack[LinkOptions],
) -> Report:
    """Mean and peak PCIe Gb/s up and down per `window` that replaying one capture through NIC
    `profile` needs, each packet priced at its own size at the time it was captured
    (`pcieperf nic --trace`), the capture read as it streams; `source` is the `Demand`, for a
    plot of it."""
    from pcieperf.net.trace.timeline import timeline
    from pcieperf.nic import nic
    from pcieperf.nic.api import dma_paths

    link = make_link(**link_options)
    nic_profile = load_profile(profile)
    dma = dma_paths(paths)  # checked before the capture is read
    window_ns = parse_duration_ns(window, "window")
    captured = timeline(trace, skip_bad=skip_bad)
    found = nic.trace_demand(nic_profile, link, captured, window_ns, dma)
    return demand_report(captured, found, link, {"profile": nic_profile.name})


def demand_report(
    captured: Timeline, found: Demand, link: Link, extra: dict[str, object], note: str = ""
) -> Report:
    """The report of a capture's PCIe demand: the capture, `extra` (what priced it) and the
    windows' summary as JSON; the mean and peak per direction as text, after `note`."""
    data = {
        "trace": captured.path,
        "packets": captured.packets,
        "skipped": captured.skipped,
        "mean_frame_bytes": found.frame_bytes / captured.packets,
        **extra,
        **found.summary(),
    }
    return Report(data, lambda: _demand_text(data, link, note), source=found)


def _demand_text(s: dict[str, Any], link: Link, note: str) -> str:
    """The demand report for people: capture, link, mean and peak per direction, windows over."""
    tail = ""
    if s["tail_ns"] and s["tail_up_gbps"] is not None:  # a last, shorter window with rates
        tail = (
            f"; the last {duration_text(s['tail_ns'])}: {s['tail_up_gbps']:.3f} up / "
            f"{s['tail_down_gbps']:.3f} down Gb/s"
        )
    return (
        f"{Path(s['trace']).name}: {plural(s['packets'], 'packet')}, mean frame "
        f"{s['mean_frame_bytes']:.1f} B, Gen{link.gen} x{link.lanes} carries "
        f"{s['capacity_gbps']:.2f} Gb/s per direction\n{note}"
        + format_table(
            ("direction", "mean Gb/s", f"peak Gb/s per {duration_token(s['window_ns'], ' ')}"),
            [
                ("up (device to host)", s["mean_up_gbps"], s["peak_up_gbps"]),
                ("down (host to device)", s["mean_down_gbps"], s["peak_down_gbps"]),
            ],
        )
        + f"\n{s['windows_over_capacity']} of {s['full_windows']} whole windows exceed the link"
        + tail
    )

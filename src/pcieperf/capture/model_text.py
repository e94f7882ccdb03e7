"""`capture model`'s text: the setup and calibration above a table of the rows, Gb/s with
their bounds (pcieperf.capture.model builds the rows)."""

from __future__ import annotations

from pathlib import Path

from pcieperf.capture.calibration import CALIBRATIONS
from pcieperf.results import Column, Table
from pcieperf.text import plural

COLUMNS = (
    Column("size", "size (B)"),
    Column("capture", "capture Gb/s [low-high]"),
    Column("capture_mpps", "capture Mpps"),
    Column("loss_pct", "loss %"),
    Column("fwd_no_capture", "fwd Gb/s alone"),
    Column("fwd", "fwd Gb/s [low-high]"),
    Column("penalty", "fwd +ns/pkt"),
    Column("limited_by", "limited by"),
)
OPTIONAL = ("fwd_no_capture", "capture_mpps", "penalty", "fwd")
"""The columns a narrow terminal leaves out, least wanted first."""


FOOTER = (
    "Gb/s count wire bits (frame + 20 B preamble, SFD and gap), as the study does: 64 B at "
    "line rate on {ports}x{eth} GbE is {gbps:g} Gb/s. [low-high]: the calibration's spread"
)
CONTIGUOUS = (
    "; and the share of fixed costs saved per buffer, 0 to 1 (runs cannot tell it: "
    "docs/capture.md#model)"
)


def _title(payload: dict) -> str:
    """The setup and the calibration, in two lines."""
    i, c = payload["inputs"], payload["calibration"]
    offer = "line rate" if i["offered_pps"] is None else f"{i['offered_pps'] / 1e6:.3f} Mpps"
    return (
        f"capture model, design {i['design']}: {i['format']} to {i['sink']}"
        + (f" at most {i['sink_gbps']:g} Gb/s" if i["sink_gbps"] else "")
        + f", copies per forwarded packet {i['copies_per_packet']:g} ({i['direction']} on "
        f"{i['capture_ports']} of {i['ports']} ports), "
        f"{plural(i['capture_cores'], 'capture core')}\n"
        f"forwarding: {i['profile']} on {i['ports']}x{i['eth_gbps']} GbE ({i['link']}), "
        f"{plural(i['fwd_lcores'], 'lcore')}, offered {offer}\n"
        f"costs: {_calibration_file(c['file'])} ({c['runs']} runs, {c['measured_on']}, "
        f"{c['dpdk_version']}); "
        f"forwarding cost from the {c['fwd_cost_from']}, writes from {c['writes_from']}"
        + _elsewhere(c)
        + f"\nverdict: {payload['verdict']['text']}"
    )


ANOTHER_MACHINE = (
    "\nthese costs were measured on another kind of machine ({}); this one is {}: its costs "
    "may differ several-fold (docs/capture.md#another-machine); measure its own in minutes "
    "with `pcieperf capture calibrate --here`"
)


CARRIED = (
    "\nthese costs were measured on another kind of machine ({}); this one is {}: {} of them "
    "scaled by this machine's probe over that one's, bounds widened (docs/capture.md#costs-that-"
    "travel)"
)
UNPROBED = (
    "; or scale them by the two machines' primitives: `pcieperf capture probe` here, with a "
    "calibration that records its machine's probe"
)


def _elsewhere(c: dict) -> str:
    """One line when the calibration comes from another kind of machine than this one: its
    costs scaled by the probes, or not (and how to)."""
    if c["measured_here"] is not False:
        return ""
    if c.get("scaled_by"):
        return CARRIED.format(c["machine"], c["this_machine"], len(c["scaled_by"]))
    return ANOTHER_MACHINE.format(c["machine"], c["this_machine"]) + UNPROBED


def _calibration_file(path: str) -> str:
    """A calibration file: a shipped one by its name (not its path among the site packages),
    the user's as given."""
    return f"shipped {Path(path).name}" if Path(path).parent == CALIBRATIONS else path


def _text_row(r: dict) -> dict[str, object]:
    """A row as the table shows it: Gb/s with bounds, Mpps, loss in per cent."""
    per_gbit = r["capture_gbps"] / r["capture_pps"] if r["capture_pps"] else 0.0
    return {
        "size": r["size"],
        "capture": f"{r['capture_gbps']:.2f} [{r['capture_gbps_low']:.2f}-"
        f"{r['capture_gbps_high']:.2f}]",
        "capture_mpps": r["capture_pps"] / 1e6,
        "loss_pct": 100 * r["loss"],
        "fwd_no_capture": r["fwd_pps_no_capture"] * per_gbit,
        "fwd": f"{r['fwd_gbps']:.2f} [{r['fwd_gbps_low']:.2f}-{r['fwd_gbps_high']:.2f}]",
        "penalty": r["fwd_penalty_ns_per_packet"],
        "limited_by": r["limited_by"],
    }


def model_table(payload: dict) -> Table:
    """The result of `capture model`: its JSON `payload` and the text of it."""
    i = payload["inputs"]
    footer = FOOTER.format(ports=i["ports"], eth=i["eth_gbps"], gbps=i["ports"] * i["eth_gbps"])
    contiguous = i["design"] == "contiguous"
    advice = "".join(f"\nadvice: {line}" for line in payload["advice"])
    return Table(
        payload,
        COLUMNS,
        title=_title(payload),
        footer=footer + (CONTIGUOUS if contiguous else "") + advice,
        text_rows=[_text_row(r) for r in payload["rows"]],
        optional=OPTIONAL,
    )

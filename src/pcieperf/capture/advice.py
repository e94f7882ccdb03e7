"""What a user acts on from `capture model`'s rows: a one-line verdict (the forwarded rate
whose copies the capture keeps up with, what the forwarding loses) and advice on the ring, the
snaplen and the sink, each computed by the model (`capture.evaluate`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from pcieperf.capture.calibration import CaptureCalibration
from pcieperf.capture.costs import wakeup_of, writer_of
from pcieperf.capture.evaluate import CaptureRows
from pcieperf.capture.path import MODEL_SINKS
from pcieperf.capture.setup import CaptureSetup
from pcieperf.errors import UsageError

Evaluate = Callable[[CaptureSetup], CaptureRows]
SAME = 5e-3  # rates within 0.5 % read as one (a verdict names no difference below it)
LOSS_TARGET = 1e-3  # the wake-up loss the ring advice aims below: 0.1 % of the copies
RING_MAX = 1 << 20  # the largest ring `capture run` makes (rte_ring sizes, lib/ring/rte_ring.h)
# Snaplens tried, largest first: whole 1 KiB headers down to 64 B (the Ethernet minimum frame,
# IEEE 802.3 clause 3.2.7 less the FCS: room for L2-L4 headers).
SNAPLENS = (1024, 512, 256, 128, 64)


def _at(label: str) -> str:
    """A row's size as words: bytes, or a mix by its name."""
    return f"{label} B" if label.isdecimal() else label


def _sizes(found: CaptureRows, which: np.ndarray) -> str:
    """The sizes of the rows `which` selects, in words."""
    chosen = [_at(label) for label, taken in zip(found.labels, which, strict=True) if taken]
    return ", ".join(chosen)


def keeps_pps(found: CaptureRows) -> np.ndarray:
    """Per row, the forwarded packets per second whose every copy the capture thread (or its
    sink) can write: its capacity over the copies per packet."""
    return found.consumer_pps / found.copies


def costs_from(calibration: dict) -> str:
    """Whose costs the rows are priced with, in words (from `capture model`'s provenance): the
    calibration's machine and which calibration it is (whether that is this machine's kind,
    `capture model`'s line on another machine says)."""
    machine = calibration["machine"] or "an unnamed machine"
    return f"the costs of {machine} ({calibration['chosen']})"


def verdict(found: CaptureRows, setup: CaptureSetup, calibration: dict) -> dict[str, object]:
    """The rows in one line: the rate the capture keeps up with at the hardest size, where it
    loses copies at the offered rate, and the most the forwarding loses; with its numbers."""
    keeps = keeps_pps(found)
    hard, easy = int(np.argmin(keeps)), int(np.argmax(keeps))
    v = found.values
    with np.errstate(divide="ignore", invalid="ignore"):
        fwd_loss = np.nan_to_num(1 - v["fwd_pps"] / v["fwd_pps_no_capture"])
    worst = int(np.argmax(fwd_loss))
    losing = v["loss"] > LOSS_TARGET
    at_rate = (
        f"at the offered rate it loses copies at {_sizes(found, losing)}"
        if losing.any()
        else "at the offered rate it keeps every copy"
    )
    spread = (
        f" ({keeps[easy] / 1e6:.3g} at {_at(found.labels[easy])})"
        if keeps[easy] > keeps[hard] * (1 + SAME)
        else ""
    )
    forwarding = (
        f"forwarding loses {100 * fwd_loss[worst]:.0f} % at {_at(found.labels[worst])}"
        if fwd_loss[worst] >= SAME
        else "forwarding keeps its rate"
    )
    penalty = float(np.max(v["fwd_penalty_ns_per_packet"]))
    one_size = spread or len(keeps) == 1
    where = f"at {_at(found.labels[hard])}{spread}" if one_size else "at every size"
    text = (
        f"{setup.tool.binary} keeps up to {keeps[hard] / 1e6:.3g} Mpps {where} on "
        f"{costs_from(calibration)}; {at_rate}; "
        f"{forwarding} (its CPU: up to +{penalty:.0f} ns per packet)"
    )
    return {
        "text": text,
        "tool": setup.tool.binary,
        "keeps_pps": float(keeps[hard]),
        "keeps_pps_at": found.labels[hard],
        "keeps_pps_largest": float(keeps[easy]),
        "keeps_pps_largest_at": found.labels[easy],
        "loss_at_size": [label for label, lost in zip(found.labels, losing, strict=True) if lost],
        "fwd_loss": float(fwd_loss[worst]),
        "fwd_loss_at": found.labels[worst],
        "costs_from": costs_from(calibration),
    }


def advice(
    found: CaptureRows, setup: CaptureSetup, cal: CaptureCalibration, evaluate: Evaluate
) -> list[str]:
    """One-line findings a user acts on: the ring that brings the wake-up loss below 0.1 %,
    the snaplen that lets a consumer- or sink-limited row keep every copy, the other sink."""
    return [
        *_ring(found, setup, cal),
        *_snaplen(found, setup, evaluate),
        *_sink(found, setup, evaluate),
    ]


def _ring(found: CaptureRows, setup: CaptureSetup, cal: CaptureCalibration) -> list[str]:
    """The ring size (--ring-size, a power of two) whose hold time at the fastest copies
    brings the wake-up loss below LOSS_TARGET, where it is above it now."""
    wakeup = wakeup_of(cal, writer_of(cal, setup, setup.sink))
    awake = ~found.saturated & np.isfinite(found.ring_holds_s)
    if not awake.any() or wakeup.loss_at_zero <= LOSS_TARGET:
        return []
    row = int(np.argmin(np.where(awake, found.ring_holds_s, np.inf)))
    hold, lost = float(found.ring_holds_s[row]), float(wakeup.loss(found.ring_holds_s[row]))
    if lost <= LOSS_TARGET:
        return []
    if not math.isfinite(wakeup.scale_s):
        return [
            f"no ring size brings the wake-up loss ({100 * lost:.2f} % at "
            f"{_at(found.labels[row])}) below {100 * LOSS_TARGET:g} %: the calibration's runs "
            "lost as much whatever their ring held"
        ]
    needed_s = wakeup.scale_s * math.log(wakeup.loss_at_zero / LOSS_TARGET)
    ring = 1 << math.ceil(math.log2(setup.ring_size * needed_s / hold))
    if ring > RING_MAX:
        return [
            f"a ring of {RING_MAX} copies still loses more than {100 * LOSS_TARGET:g} % on "
            f"waking at {_at(found.labels[row])} (it would need {needed_s * 1e3:.3g} ms of copies)"
        ]
    return [
        f"ring size {ring} (now {setup.ring_size}) holds {needed_s * 1e3:.3g} ms of copies at "
        f"{_at(found.labels[row])}: the wake-up loss falls from {100 * lost:.2f} % to below "
        f"{100 * LOSS_TARGET:g} %"
    ]


def _snaplen(found: CaptureRows, setup: CaptureSetup, evaluate: Evaluate) -> list[str]:
    """The largest snaplen that lets the rows the consumer (or its sink) limits keep every
    copy: those the smallest snaplen lifts; the others are limited per record, not per byte."""
    limited = found.saturated
    if not limited.any():
        return []
    fewer = "fewer copies do (--direction, --capture-ports)"
    if not setup.tool.snaplen:
        return [
            f"{setup.tool.binary} writes whole packets: no snaplen lifts "
            f"{_sizes(found, limited)}; {fewer}"
        ]
    tried = [
        s
        for s in SNAPLENS
        if s < np.max(found.frame_bytes[limited]) and (not setup.snaplen or s < setup.snaplen)
    ]
    lifted = {s: limited & ~evaluate(replace(setup, snaplen=s)).saturated for s in tried}
    best = lifted[tried[-1]] if tried else limited & False
    if not best.any():
        return [
            f"no snaplen lifts {_sizes(found, limited)}: the cost per record, not per byte, "
            f"limits them; {fewer}"
        ]
    snaplen = next(s for s in tried if (lifted[s] == best).all())
    rest = limited & ~best
    return [
        f"snaplen {snaplen} B lets the capture keep every copy at {_sizes(found, best)}"
        + (f"; at {_sizes(found, rest)} the cost per record limits it" if rest.any() else "")
    ]


def _sink(found: CaptureRows, setup: CaptureSetup, evaluate: Evaluate) -> list[str]:
    """The other sink the calibration prices, at the hardest size: what it would keep up with."""
    if setup.sink_gbps is not None:
        return []
    now = keeps_pps(found)
    here = int(np.argmin(now))
    lines = []
    for other in (s for s in MODEL_SINKS if s != setup.sink):
        try:
            elsewhere = evaluate(replace(setup, sink=other))
        except UsageError:  # the calibration has no such sink, or not for this writer
            continue
        keeps = keeps_pps(elsewhere)[here]
        lines.append(
            f"with --sink {other} it would keep up to {keeps / 1e6:.3g} Mpps at "
            f"{_at(found.labels[here])} ({setup.sink}: {now[here] / 1e6:.3g})"
        )
    return lines

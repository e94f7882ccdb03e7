"""Parsing of the quantities users type: rates with SI suffixes, size lists, batch histograms."""

from __future__ import annotations

import math
import re

from pcieperf.errors import UsageError

_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
MAX_RATE = 1e12
"""Rates above this are typos, not packet rates: 400 GbE at its smallest frames (84 wire bytes,
IEEE 802.3 clause 4.4.2 minimum frame plus preamble and gap) carries 0.6e9 packets/s."""
_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmg]?)\s*(pps|p/s)?\s*$", re.I)


def parse_rate(text: str, what: str = "packet rate") -> float:
    """Parse `10e6`, `10M`, `14.88Mpps` or `500k` into a number per second (>= 0)."""
    match = _RATE.match(str(text))
    if not match:
        raise UsageError(
            f"{what} {text!r} is not understood; write e.g. 10e6, 10M, 14.88Mpps or 500k"
        )
    value = float(match.group(1)) * _SI[match.group(2).lower()]
    if not math.isfinite(value):
        raise UsageError(f"{what} {text!r} is not a finite number")
    if value > MAX_RATE:
        raise UsageError(
            f"{what} {text!r} is above 1e12 per second; no link carries that (400 GbE: 0.6e9)"
        )
    return value


MAX_LIST_VALUE = 2**31
"""Sizes and windows beyond 2 GiB are typos: PCIe lengths are at most 4 KiB per TLP (PCIe Base
Specification 5.0, §2.2.2 Length field), pcie-bench windows at most 64 MiB."""

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ns|us|ms|s)?\s*$", re.I)
_NS_PER_UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, None: 1e9}


def parse_duration_ns(text: str, what: str = "duration") -> int:
    """Parse `1s`, `100ms`, `10us`, `500ns` or `0.5` (seconds) into whole nanoseconds (> 0)."""
    match = _DURATION.match(str(text))
    value = (
        float(match.group(1)) * _NS_PER_UNIT[match.group(2) and match.group(2).lower()]
        if match
        else 0
    )
    if not (match and math.isfinite(value) and value >= 1):
        raise UsageError(
            f"{what} {text!r} is not understood; write a positive time like 1s, 100ms, 10us, 500ns"
        )
    return round(value)


def parse_int_list(text: str, what: str) -> list[int]:
    """Parse a comma-separated list of positive whole numbers such as `64,128,1500` (sizes,
    windows: none is zero or negative)."""
    values = []
    for token in str(text).split(","):
        try:
            value = int(token.strip())
        except ValueError:
            raise UsageError(
                f"{what} {token.strip()!r} in {text!r} is not a whole number; "
                "write a comma-separated list like 64,128,1500"
            ) from None
        if value < 1:
            raise UsageError(f"{what} {value} is not allowed; give whole numbers >= 1")
        if value > MAX_LIST_VALUE:
            raise UsageError(f"{what} {value} is too large; the limit is 2**31 (2 GiB)")
        values.append(value)
    return values


def parse_batch_histogram(text: str) -> dict[int, float]:
    """Parse an Rx batch histogram `batch:calls,batch:calls` (e.g. `0:1000,4:5000,8:200`)."""
    hist: dict[int, float] = {}
    for entry in str(text).split(","):
        batch_text, sep, calls_text = entry.partition(":")
        try:
            if not sep:
                raise ValueError
            batch, calls = int(batch_text), float(calls_text)
            if batch < 0 or calls < 0 or not math.isfinite(calls):
                raise ValueError
        except ValueError:
            raise UsageError(
                f"batch histogram entry {entry.strip()!r} in {text!r} is malformed; use "
                "batch:calls pairs with batch >= 0 and calls >= 0, e.g. 0:1000,4:5000,8:200"
            ) from None
        if batch in hist:
            raise UsageError(f"batch size {batch} appears twice in the histogram {text!r}")
        hist[batch] = calls
    return hist

"""The quantities users type and read: rates with SI suffixes, durations, size lists and batch
histograms parsed; rates, durations and times printed for people (one place for every
command's scaled units)."""

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
    """Parse `10e6`, `10M`, `14.88Mpps` or `500k` into a number per second (> 0: every
    command's one check of a rate it is given)."""
    match = _RATE.match(str(text))
    if str(text).strip().startswith("-") or (match and float(match.group(1)) == 0):
        raise UsageError(f"{what} {text!r} is not allowed; give a rate above 0, e.g. 10M")
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
MAX_DURATION_NS = 10**18  # 31.7 years; the core counts time in 64-bit ns (up to 9.2e18)


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
    if value > MAX_DURATION_NS:
        raise UsageError(
            f"{what} {text!r} is not allowed; the longest is {MAX_DURATION_NS / 1e9:g} s"
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


MAX_CPU = (1 << 16) - 1  # Linux's NR_CPUS is at most 8192 (arch Kconfigs): a higher one is a typo


def parse_cpu_list(text: str, what: str = "CPU list") -> list[int]:
    """Parse a CPU list as Linux's cpulist files and DPDK's `-l` write it: `0-3,8,10-11`."""
    cpus: set[int] = set()
    for token in str(text).split(","):
        low, sep, high = token.strip().partition("-")
        try:
            first, last = int(low), int(high if sep else low)
        except ValueError:
            raise UsageError(
                f"{what} {text!r} is not understood; write CPUs and ranges like 0-3,8"
            ) from None
        if not 0 <= first <= last <= MAX_CPU:
            raise UsageError(f"{what} {token.strip()!r} is not allowed; use CPUs 0 to {MAX_CPU}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def whole_number(text: str, prefix: str = "", units: tuple[str, ...] = ()) -> int | None:
    """A whole number as people write it: 3, 3.0, with a `prefix` (x16) or one of `units`
    (25G, 25GbE), case aside; None where `text` is none (2.5, inf, a word)."""
    token = text.strip().lower().removeprefix(prefix)
    token = next((token[: -len(u)] for u in units if token.endswith(u)), token)
    if token.lstrip("+-").isdigit():
        return int(token)
    try:
        number = float(token)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


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


# --- printing for people ----------------------------------------------------------------------

ZERO = 1e-12
"""Below this a model's or a fit's float is rounding noise (a bounded fit's 3.3e-36 ns), shown
as 0: no quantity pcieperf prints is that small in its unit (ns, Gb/s, per packet)."""


def decimal(value: float, places: int = 2) -> str:
    """A table's number: `places` decimals, thousands separated (1,234.50); noise (`ZERO`) as
    0.00; a value that is not 0 but would show as 0.00, with two significant digits (0.0042,
    and below a millionth 3.1e-07); NaN as "-"."""
    if math.isnan(value):
        return "-"
    if abs(value) < ZERO:
        return f"{0:.{places}f}"
    if abs(value) >= 0.5 * 10**-places or math.isinf(value):
        return f"{value:,.{places}f}"
    return significant(value, 2)


def significant(value: float, digits: int = 4) -> str:
    """`value` with `digits` significant digits, without an exponent from a millionth to a
    billion (7.330, 147.9, 0.0001234, 12,350,000), noise (`ZERO`) as 0: a fitted parameter."""
    if not math.isfinite(value) or abs(value) < ZERO:
        return "0" if math.isfinite(value) else str(value)
    exponent = int(f"{value:.{digits - 1}e}".partition("e")[2])
    if not -6 <= exponent < 9:
        return f"{value:.{digits - 1}e}"
    return f"{value:,.{max(digits - 1 - exponent, 0)}f}"


_PREFIXES = ("", "k", "M", "G", "T")  # SI: 10^3 steps (docs/units.md: k = 10³, M = 10⁶, G = 10⁹)


def scaled(value: float, unit: str, digits: int = 3) -> str:
    """`value` in base units (pps, b/s, B) with an SI prefix and `digits` significant digits:
    12.3 pps, 4.56 kpps, 1.00 Mpps, 480 Mb/s; below 1, in the base unit (0.500 pps, and from
    below 0.001 in powers of ten: 8.67e-10 pps), so a slow capture never reads 0.000."""
    if value == 0:
        return f"0 {unit}"
    rounded = f"{abs(value):.{digits - 1}e}"  # rounded once, so 999.6 becomes 1.00 k
    exponent = int(rounded.partition("e")[2])
    if exponent < -3:
        return f"{value:.{digits - 1}e} {unit}"
    step = min(max(exponent // 3, 0), len(_PREFIXES) - 1)
    decimals = max(digits - 1 - (exponent - 3 * step), 0)
    sign = "-" if value < 0 else ""
    return f"{sign}{float(rounded) / 1000**step:.{decimals}f} {_PREFIXES[step]}{unit}"


_SUBSECOND = (("µs", 10**3), ("ms", 10**6), ("s", 10**9))
_NS_PER = {"min": 60 * 10**9, "h": 3600 * 10**9, "d": 86_400 * 10**9}


def duration_text(ns: int) -> str:
    """A duration for people: ns below 1 µs, µs, ms or s with 3 decimals below a minute
    (4.999 ms), then whole units: 2 min 05 s, 2 h 03 min 10 s, and from a day on days and
    hours (14 d 2 h), each form rounded to its last unit."""
    if ns < 1000:
        return f"{ns} ns"
    for unit, size in _SUBSECOND:
        text = f"{ns / size:.3f}"
        if float(text) < (60 if unit == "s" else 1000):
            return f"{text} {unit}"
    if ns + _NS_PER["h"] // 2 >= _NS_PER["d"]:
        days, hours = divmod((ns + _NS_PER["h"] // 2) // _NS_PER["h"], 24)
        return f"{days} d {hours} h"
    minutes, seconds = divmod((ns + 10**9 // 2) // 10**9, 60)
    hours, minutes = divmod(minutes, 60)
    return (
        f"{hours} h {minutes:02d} min {seconds:02d} s"
        if hours
        else f"{minutes} min {seconds:02d} s"
    )


def duration_token(ns: int, sep: str = "") -> str:
    """A whole number of ns in the largest unit that holds it exactly, as --window and
    --windows take it: 1ms, 100us, 1s, 1500us (`sep` between number and unit: "1 ms")."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns and ns % size == 0:
            return f"{ns // size}{sep}{unit}"
    return f"{ns}{sep}ns"


def utc_text(ts_ns: int, digits: int = 9) -> str:
    """A time in ns since the epoch as ISO 8601 UTC with `digits` (0-9) decimals of a second,
    truncated as capinfos truncates a time to the file's precision (Wireshark's capinfos.c,
    `time_string`: nanoseconds divided down): 2023-11-14T22:13:20.123456Z."""
    import datetime  # only where a time is printed: start-up (issue 15)

    seconds, ns = divmod(ts_ns, 10**9)
    when = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    fraction = f".{ns:09d}"[: digits + 1] if digits > 0 else ""
    return f"{when:%Y-%m-%dT%H:%M:%S}{fraction}Z"

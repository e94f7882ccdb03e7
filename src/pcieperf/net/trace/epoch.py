"""Whether a capture's dates are plausible, and whether implausible ones look like the offset
DPDK 22.11's dumpcap adds to its pcapng times (2^64 / tsc_hz seconds, dating a capture in the
2200s: docs/trace.md, "Can this capture be trusted?")."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from time import time_ns

from pcieperf.errors import UsageError

NS_PER_S = 1_000_000_000
# A century either side of the present (the "more than a century away"): 100 years of
# 365.2425 days (the Gregorian mean year) of 86 400 s.
PLAUSIBLE_NS = 3_155_695_200 * NS_PER_S
# TSC rates an x86 server's dumpcap may have run on: invariant TSCs tick at the nominal core
# clock, 1-6 GHz on the CPUs DPDK supports; the implied rate is rounded to 10 MHz, the step
# of nominal clocks, so the suggested shift is that of a round rate.
TSC_HZ_RANGE = (1e9, 6e9)
TSC_ROUND_HZ = 10_000_000
TWO_64 = 1 << 64
# A shift must fit the ns time it moves (i64 ns: ±292 years).
MAX_SHIFT_NS = (1 << 63) - 1


def plausible(ts_ns: int, now_ns: int) -> bool:
    """Whether a time lies within a century of `now_ns`."""
    return abs(ts_ns - now_ns) <= PLAUSIBLE_NS


def dpdk_tsc_hz(ts_ns: int, now_ns: int) -> int | None:
    """The TSC rate (Hz, rounded to 10 MHz) whose DPDK 22.11 offset, 2^64 / tsc_hz seconds,
    dates a packet taken lately at `ts_ns`; None where no rate in 1-6 GHz does."""
    ahead_s = (ts_ns - now_ns) / NS_PER_S
    if ahead_s <= 0:
        return None
    hz = TWO_64 / ahead_s
    if not TSC_HZ_RANGE[0] <= hz <= TSC_HZ_RANGE[1]:
        return None
    return round(hz / TSC_ROUND_HZ) * TSC_ROUND_HZ


def dpdk_shift_s(tsc_hz: int) -> Decimal:
    """The shift, in seconds, that takes back DPDK 22.11's offset at `tsc_hz` (ns precision)."""
    return -(Decimal(TWO_64 * NS_PER_S) / tsc_hz).quantize(Decimal(1)) / NS_PER_S


def epoch_check(first_ns: int | None, last_ns: int | None, now_ns: int | None = None) -> dict:
    """`implausible_epoch` (the earliest or latest packet more than a century from now) and,
    where the dates look like DPDK 22.11's offset, the TSC rate that explains them and the
    `--shift-time` (seconds) that takes it back; None otherwise. The latest packet is the one
    judged: in a file whose times wrapped past 2^64 ns the earliest is a wrapped one."""
    now = time_ns() if now_ns is None else now_ns
    if first_ns is None or last_ns is None:
        return {"implausible_epoch": False, "dpdk_tsc_hz": None, "shift_time_s": None}
    implausible = not (plausible(first_ns, now) and plausible(last_ns, now))
    tsc_hz = dpdk_tsc_hz(last_ns, now) if implausible else None
    return {
        "implausible_epoch": implausible,
        "dpdk_tsc_hz": tsc_hz,
        "shift_time_s": float(dpdk_shift_s(tsc_hz)) if tsc_hz else None,
    }


def epoch_warning(path: str, found: dict) -> str | None:
    """The one-line warning for a file whose dates are implausible, saying how to shift them."""
    if not found["implausible_epoch"]:
        return None
    if found["dpdk_tsc_hz"] is None:
        return (
            f"{path}: packets are dated more than a century from now; "
            "`pcieperf trace convert --shift-time SECONDS` moves them"
        )
    shift = dpdk_shift_s(found["dpdk_tsc_hz"])
    # A span of half the offset or more: the times jump by multiples of it (two-long.pcapng).
    jumps = (found["last_ts_ns"] - found["first_ts_ns"]) * 2 >= -shift * NS_PER_S
    relative = (
        "its times also jump by multiples of that offset mid-file, so no one shift makes them "
        "whole; relative times hold within each stretch"
        if jumps
        else "relative times are right"
    )
    return (
        f"{path}: packets are dated more than a century from now, as DPDK 22.11's dumpcap "
        f"dates pcapng (2^64 / tsc_hz seconds ahead; here tsc_hz ≈ "
        f"{found['dpdk_tsc_hz'] / 1e9:.2f} GHz if captured lately); {relative}. "
        f"Shift them back with `pcieperf trace convert IN -o OUT --shift-time={shift}` "
        "(with the capturing machine's exact TSC rate, which EAL logs, for the exact date)"
    )


def parse_shift_ns(seconds: str | float | int) -> int:
    """A time shift given in seconds ("-7094901566.811366006", -1.5, 60) as whole ns; one line
    naming the value when it is not a number or moves times by more than i64 ns."""
    try:
        value = Decimal(str(seconds).strip())
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or abs(value * NS_PER_S) > MAX_SHIFT_NS:
        raise UsageError(
            f"shift {seconds!r} is not allowed; give seconds, e.g. -7094901566.811366006, "
            "within ±292 years"
        )
    return int((value * NS_PER_S).to_integral_value())

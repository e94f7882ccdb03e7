"""pcm-iio output printed the way pcm-iio prints it, for the importer tests: its table
(intel/pcm src/pcm-iio-pmu.cpp PcmIioDisplayBuilder::buildDisplayBuffer with a_title, a_data,
a_header_footer/build_line and prepare_data of src/utils.cpp), its -csv form
(PcmIioCsvBuilder::buildDisplayBuffer, build_csv_row) and unit_format (src/utils.h). The rules
are pcm's; the code is this project's."""

from __future__ import annotations

from dataclasses import dataclass, field

# hname columns in order of first appearance in the opCode tables (src/opCode-6-85.txt for
# Skylake-SP, src/opCode-6-143.txt for Sapphire Rapids), and their vnames (parts).
SKX_COLUMNS = (
    "IB write (bytes)",
    "IB read (bytes)",
    "OB read (bytes)",
    "OB write (bytes)",
    "IOTLB Hit",
    "IOTLB Miss",
    "VT-d CTXT Miss",
    "VT-d L1 Miss",
    "VT-d L2 Miss",
    "VT-d L3 Miss",
    "VT-d Mem Read",
)
SKX_PARTS = ("Part0 (1st x16/x8/x4)", "Part1 (2nd x4)", "Part2 (2nd x8/3rd x4)", "Part3 (4th x4)")
SPR_COLUMNS = (
    "IB write",
    "IB read",
    "OB read",
    "OB write",
    "IOTLB Lookup",
    "IOTLB Miss",
    "Ctxt Cache Hit",
    "256T Cache Hit",
    "512G Cache Hit",
    "1G Cache Hit",
    "2M Cache Hit",
    "IOMMU Mem Access",
)
SPR_PARTS = tuple(f"Part{i}" for i in range(8))
BYTE_COLUMNS = 4  # the IB/OB columns each part has; the rest (vname Total) only Part0's row
# What pcm-iio prints before its first table: the banner (pcm-iio.cpp mainThrows) on stdout and
# print_cpu_details (src/utils.cpp) on stderr, as a terminal shows both.
BANNER = (
    "\n Intel(r) Performance Counter Monitor 202302\n\n This utility measures IIO information\n\n"
    '\nDetected Intel(R) Xeon(R) Platinum 8180 CPU @ 2.50GHz "Intel(r) microarchitecture '
    'codename Skylake-SP" stepping 4 microcode level 0x2000065\n'
)
# unit_format's branches: up to which value, the divisor, the suffix (past the last: 10^12, T).
_DIVISORS = (
    (9_999, 1, " "),
    (9_999_999, 10**3, "K"),
    (9_999_999_999, 10**6, "M"),
    (9_999_999_999_999, 10**9, "G"),
)


@dataclass
class Stack:
    """One IIO stack of one interval: its name as src/pcm-iio-topology.cpp spells it (trailing
    pad included), per part the values of its columns, and the device rows under it."""

    name: str
    values: list[list[int]]
    devices: list[str] = field(default_factory=list)


def divisor(n: int) -> int:
    """What unit_format divides `n` by before printing it (integer division: cut, not rounded)."""
    return next((d for limit, d, _ in _DIVISORS if n <= limit), 10**12)


def unit_format(n: int) -> str:
    """pcm's unit_format: `%4d` of n, or of n // 10^3, 10^6, 10^9, 10^12, then a space and
    K, M, G, T (a space for none)."""
    suffix = next((s for limit, _, s in _DIVISORS if n <= limit), "T")
    return f"{n // divisor(n):4d} {suffix}"


def table(intervals: list[dict[int, list[Stack]]], columns: tuple[str, ...], parts: tuple) -> str:
    """The terminal output of the intervals: per socket a `SocketN` line, per stack a table."""
    lines = []
    for interval in intervals:
        for socket, stacks in interval.items():
            lines.append(f"Socket{socket}")
            for stack in stacks:
                lines += _stack_table(stack, columns, parts)
    return BANNER + "\n".join(lines) + "\n"


def _stack_table(stack: Stack, columns: tuple[str, ...], parts: tuple) -> list[str]:
    """One stack's table: outer rule, title, rule, part rows, rule, device rows, outer rule."""
    headers = [stack.name, *columns]
    outer = " " + "".join("_" * len(h) + " " for h in headers)
    rule = "|" + "".join("_" * len(h) + "|" for h in headers)
    rows = []
    for part, values in zip(parts, stack.values, strict=True):
        cells = []
        for value, column in zip(values, columns, strict=False):
            text = unit_format(value)
            assert len(text) <= len(column), "a_data throws length_error"
            cells.append(text.ljust(len(column)) + "|")
        pad = " " * abs(len(stack.name) - (len(part) + 1))
        rows.append(f"| {part}{pad}|" + "".join(cells))
    title = "|" + "".join(h + "|" for h in headers)
    return [outer, title, rule, *rows, rule, *stack.devices, outer]


def csv(
    intervals: list[dict[int, list[Stack]]],
    columns: tuple[str, ...],
    parts: tuple,
    *,
    stamps: list[tuple[str, str]] | None = None,
    part_header: bool = True,
    human: bool = False,
    delimiter: str = ",",
) -> str:
    """`pcm-iio -csv`: a header before each interval's rows; `stamps` (date, time per
    interval) from release 202509 on, none before; no `Part` name in the header before 202207;
    `-human-readable` prints unit_format values, the stack name untrimmed and the part name
    padded to the longest."""
    lines = []
    width = max(map(len, parts))
    for k, interval in enumerate(intervals):
        head = ["Socket", "Name", *(["Part"] if part_header else []), *columns]
        lines.append(delimiter.join(["Date", "Time", *head] if stamps else head))
        for socket, stacks in interval.items():
            for stack in stacks:
                name = stack.name if human else stack.name.rstrip(" ")
                for part, values in zip(parts, stack.values, strict=True):
                    shown = [unit_format(v) if human else str(v) for v in values]
                    row = [f"Socket{socket}", name, part.ljust(width) if human else part, *shown]
                    lines.append(delimiter.join([*stamps[k], *row] if stamps else row))
    return "\n".join(lines) + "\n"


def idle(columns: tuple[str, ...], parts: tuple) -> list[list[int]]:
    """A stack's values when nothing moves: zeros, every column in Part0, the IB/OB ones after."""
    return [[0] * (len(columns) if i == 0 else BYTE_COLUMNS) for i in range(len(parts))]

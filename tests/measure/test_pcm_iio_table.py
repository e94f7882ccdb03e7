"""pcm-iio as users have it: its terminal table and every -csv variant of the same counters give
the same samples (tests/helpers/pcm_print.py prints them by pcm's own rules, cited there);
values printed with a K/M/G/T suffix within unit_format's cut (src/utils.h)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.errors import CounterFileError
from pcieperf.measure import counters
from pcieperf.measure.counters.samples import Samples
from tests.helpers import TESTS_DATA
from tests.helpers import pcm_print as pcm
from tests.helpers.cli import run_cli

DATA = TESTS_DATA / "counters"
BYTE_METRICS = ["inbound_write", "inbound_read", "outbound_read", "outbound_write"]
# One busy interval touching every unit_format branch (src/utils.h): as is up to 9999, then
# K, M, G, T (cut by integer division), and zeros.
BUSY_SKX = [
    [1_495_123_456, 1_189_999_999, 143_999, 1_225_000, 19_000_001, 192, 9_999, 10_000, 0, 0, 553],
    [12_345_678_901_234, 9_999_999_999, 10_000_000_000, 9_999_999],
    [0, 0, 0, 0],
    [7, 70, 700, 7000],
]
BUSY_SPR = [
    [2_000_000_001, 1_201_000_000, 0, 1_000_999, 20_000_000, 11_999, 20_000_000, 0, 0, 0, 99, 23],
    *([i * 1000 + 1, 0, 0, i] for i in range(1, 8)),
]
# Device rows under a stack (build_pci_header, src/pcm-iio-pmu.cpp), 4 spaces a level: before
# release 202212 `bb:dd.f`; since, the domain, the parts and the devices behind a bridge; from
# 202212 to 202502 "\b\b " erased the last ", " (fixed by b9028f94).
OLD_DEVICES = [
    "    |17:00.0|Gen3 x8 |8086:1572 Intel Corporation Ethernet Controller X710 for 10GbE SFP+",
    "    |17:00.1|Gen3 x8 |8086:1572 Intel Corporation Ethernet Controller X710 for 10GbE SFP+",
]
NEW_DEVICES = [
    "    |0000:16:01.0|Gen4 x16|8086:352A Intel Corporation unknown device; Part: 0, 1, \b\b ",
    "        |0000:17:00.0|Gen4 x16|8086:1592 Intel Corporation Ethernet Controller; Part: 0",
    "    |0000:18:00.0|Gen1 x1 |8086:4940 Intel Corporation 4xxx Series QAT; Part: 4",
]
SKX_STACKS = ("IIO Stack 0 - CBDMA/DMI      ", "IIO Stack 2 - PCIe1          ")  # topology.cpp
SPR_STACKS = ("IIO Stack 1 - DMI   ", "IIO Stack 2 - PCIe0 ")
GENERATIONS = {
    "skx-old-devices": (pcm.SKX_COLUMNS, pcm.SKX_PARTS, SKX_STACKS, BUSY_SKX, OLD_DEVICES),
    "skx-no-devices": (pcm.SKX_COLUMNS, pcm.SKX_PARTS, SKX_STACKS, BUSY_SKX, []),
    "spr-new-devices": (pcm.SPR_COLUMNS, pcm.SPR_PARTS, SPR_STACKS, BUSY_SPR, NEW_DEVICES),
}


def interval(kind: str, scale: int = 1) -> dict[int, list[pcm.Stack]]:
    """Two sockets, each an idle stack and a busy one (its values times `scale`)."""
    columns, parts, (quiet, busy), values, devices = GENERATIONS[kind]
    scaled = [[v * scale for v in row] for row in values]
    return {
        socket: [
            pcm.Stack(quiet, pcm.idle(columns, parts)),
            pcm.Stack(busy, scaled, devices),
        ]
        for socket in (0, 1)
    }


def parsed(tmp_path, text: str, fmt: str | None = "pcm-iio", **options) -> Samples:
    path = tmp_path / "pcm.txt"
    path.write_text(text)
    return counters.parse(path, fmt, **options)


FIELDS = ("t_s", "socket", "stack", "part", "metric", "value", "unit")  # all but the wall time


def rows(samples: Samples) -> list[tuple]:
    """Every sample but its wall time (the table prints none)."""
    return list(zip(*(getattr(samples, name) for name in FIELDS), strict=True))


def within_print(table_value: float, csv_value: float) -> bool:
    """unit_format prints n // divisor: the true value lies in [printed, printed + divisor)."""
    return table_value <= csv_value < table_value + pcm.divisor(int(csv_value))


@pytest.mark.parametrize("kind", list(GENERATIONS))
def test_one_interval_in_every_form_gives_the_same_samples(tmp_path, kind):
    columns, parts = GENERATIONS[kind][:2]
    one = [interval(kind)]
    dated = parsed(tmp_path, pcm.csv(one, columns, parts, stamps=[("2026-11-21", "23:08:10.123")]))
    # -csv before 202509 (no Date,Time) and before 202207 (no Part name in the header): exact.
    for text in (
        pcm.csv(one, columns, parts),
        pcm.csv(one, columns, parts, part_header=False),
        pcm.csv(one, columns, parts, delimiter=";"),
    ):
        assert rows(parsed(tmp_path, text, None)) == rows(dated)  # detected too
    # The table and -human-readable: the same keys, each value as unit_format cut it.
    for text in (pcm.table(one, columns, parts), pcm.csv(one, columns, parts, human=True)):
        printed = parsed(tmp_path, text)
        assert [r[:5] + r[6:] for r in rows(printed)] == [r[:5] + r[6:] for r in rows(dated)]
        assert all(map(within_print, printed.value, dated.value))
        assert printed.notes[0].startswith("values printed with a K/M/G/T suffix")
    assert dated.notes == []  # the plain CSV is exact
    # Two sockets x (idle + busy stack) x every part's row.
    assert len(dated) == 2 * 2 * (len(columns) + (len(parts) - 1) * pcm.BYTE_COLUMNS)


def test_printed_values_are_pcm_unit_format_cut_not_rounded(tmp_path):
    one = [interval("skx-no-devices")]
    got = {
        (r[1], r[2], r[3], r[4]): r[5]
        for r in rows(parsed(tmp_path, pcm.table(one, pcm.SKX_COLUMNS, pcm.SKX_PARTS)))
    }
    busy, part0 = "IIO Stack 2 - PCIe1", "Part0 (1st x16/x8/x4)"
    # src/utils.h unit_format: 1495123456 -> "1495 M", 1189999999 -> "1189 M" (not 1190),
    # 143999 -> " 143 K", 9999 stays as is, 10000 -> "  10 K", 12345678901234 -> "  12 T".
    assert got[(1, busy, part0, "inbound_write")] == 1_495_000_000
    assert got[(1, busy, part0, "inbound_read")] == 1_189_000_000
    assert got[(1, busy, part0, "outbound_read")] == 143_000
    assert got[(1, busy, part0, "vt_d_ctxt_miss")] == 9_999
    assert got[(1, busy, part0, "vt_d_l1_miss")] == 10_000
    assert got[(0, busy, "Part1 (2nd x4)", "inbound_write")] == 12e12
    assert got[(0, busy, "Part1 (2nd x4)", "inbound_read")] == 9_999e6  # 9999999999: "9999 M"
    assert got[(0, busy, "Part1 (2nd x4)", "outbound_read")] == 10e9  # 10^10: "  10 G"
    assert got[(0, busy, "Part3 (4th x4)", "outbound_write")] == 7000


def test_the_shipped_table_is_the_shipped_csv_as_printed(tmp_path, capsys):
    # pcm-iio-skx-table.txt is pcm-iio-skx.csv's two intervals as the table (its README).
    table = counters.parse(DATA / "pcm-iio-skx-table.txt", None, interval_s=1.0)
    csv = counters.parse(DATA / "pcm-iio-skx.csv", None)
    assert table.source == csv.source == "pcm-iio"
    assert [r[1:5] + r[6:] for r in rows(table)] == [r[1:5] + r[6:] for r in rows(csv)]
    assert all(map(within_print, table.value, csv.value))
    # 19100000 IOTLB hits/s in the second interval print as "  19 M"; the CSV's 1.001 s between
    # the blocks is 1 s in the table (--interval 1).
    differ = [(a, b) for a, b in zip(rows(table), rows(csv), strict=True) if a[5] != b[5]]
    assert [(a[0], a[4], a[5], b[5]) for a, b in differ] == [(1.0, "iotlb_hit", 19e6, 19.1e6)]
    assert sorted(set(table.t_s)) == [0.0, 1.0]
    # Detected from its title row; the import names the precision it keeps.
    db = str(tmp_path / "s.duckdb")
    code, out, err = run_cli(
        capsys, "counters", "import", str(DATA / "pcm-iio-skx-table.txt"), "--db", db, "--json"
    )
    assert code == 0, err
    reply = json.loads(out)
    assert (reply["source"], reply["samples"]) == ("pcm-iio", 46)
    assert reply["notes"][0].startswith("values printed with a K/M/G/T suffix")
    assert "3 s apart" in reply["notes"][1]  # no --interval: pcm-iio's default delay


@pytest.mark.parametrize(("interval_s", "times"), [(None, [0.0, 3.0, 6.0]), (0.5, [0, 0.5, 1])])
def test_many_intervals_are_placed_the_interval_apart(tmp_path, interval_s, times):
    # Neither the table nor -csv before 202509 prints a time; pcm-iio's default delay is 3 s
    # (PCM_DELAY_DEFAULT, src/pcm-iio-pmu.h). IB write of the busy stack's Part0 is 2000000001
    # B/s times 1, 2, 3, on both sockets: "   2 G", "   4 G", "   6 G" in the table.
    three = [interval("spr-new-devices", scale) for scale in (1, 2, 3)]
    for text, expected in (
        (pcm.table(three, pcm.SPR_COLUMNS, pcm.SPR_PARTS), [2e9, 2e9, 4e9, 4e9, 6e9, 6e9]),
        (
            pcm.csv(three, pcm.SPR_COLUMNS, pcm.SPR_PARTS),
            [2_000_000_001 * k for k in (1, 1, 2, 2, 3, 3)],
        ),
    ):
        s = parsed(tmp_path, text, interval_s=interval_s)
        assert sorted(set(s.t_s)) == times
        keys = zip(s.metric, s.part, s.stack, strict=True)
        wanted = ("inbound_write", "Part0", "IIO Stack 2 - PCIe0")
        assert [v for v, key in zip(s.value, keys, strict=True) if key == wanted] == expected
        assert any("3 s apart" in n for n in s.notes) == (interval_s is None)


def test_releases_before_2019_names_and_4_byte_outbound_counts(tmp_path):
    # opCode.txt of release 201710: "Inbound write/read", "Outbound read/write", outbound
    # multiplier 1 (4-byte words until f305e698, intel/pcm#157); 201811..201902: "IB/OB ...",
    # "TLB Miss" (= today's IOTLB Miss) and "VT-d Lookup" (= today's VT-d Mem Read).
    old = ("Inbound write", "Inbound read", "Outbound read", "Outbound write")
    y2018 = ("IB write", "IB read", "OB read", "OB write", "TLB Miss", "VT-d L3 Miss")
    y2018 += ("VT-d CTXT Miss", "VT-d Lookup")
    values = [[4000, 3000, 25, 12_345, 6, 7, 8, 9], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    for columns, metrics in (
        (old, BYTE_METRICS),
        (
            y2018,
            [*BYTE_METRICS, "iotlb_miss", "vt_d_l3_miss", "vt_d_ctxt_miss", "vt_d_mem_read"],
        ),
    ):
        stack = pcm.Stack("IIO Stack 1 - PCIe0          ", [r[: len(columns)] for r in values])
        s = parsed(tmp_path, pcm.table([{0: [stack]}], columns, pcm.SKX_PARTS), None)
        part0 = {m: v for m, v, p in zip(s.metric, s.value, s.part, strict=True) if p == s.part[0]}
        assert list(part0) == metrics
        # Outbound words x 4: 25 -> 100 B/s, "  12 K" words -> 48000 B/s; inbound as printed.
        assert [part0[m] for m in metrics[:4]] == [4000, 3000, 100, 48_000]
        assert "4-byte words" in " ".join(s.notes)
    # "OB read" of Ice Lake and later (no "TLB Miss" beside it) is bytes already.
    stack = pcm.Stack("IIO Stack 1 - PCIe0 ", pcm.idle(pcm.SPR_COLUMNS, pcm.SPR_PARTS))
    stack.values[0][2] = 25
    s = parsed(tmp_path, pcm.table([{0: [stack]}], pcm.SPR_COLUMNS, pcm.SPR_PARTS), None)
    assert s.value[s.metric.index("outbound_read")] == 25
    assert not any("4-byte" in n for n in s.notes)


def test_a_pasted_table_alone_has_no_socket(tmp_path):
    # A bug report's paste: one stack's table, no Socket line, no banner (intel/pcm#389 shape).
    text = pcm.table([{0: [pcm.Stack(SKX_STACKS[1], BUSY_SKX)]}], pcm.SKX_COLUMNS, pcm.SKX_PARTS)
    text = text[text.index(" ___") :]
    s = parsed(tmp_path, text, None)
    assert set(s.socket) == {None}
    assert s.value[0] == 1_495_000_000
    assert "socket is unknown" in s.notes[-1]


def busy_table() -> str:
    return pcm.table([interval("skx-old-devices")], pcm.SKX_COLUMNS, pcm.SKX_PARTS)


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def with_line(text: str, number: int, line: str | None) -> str:
    """The text cut after line `number`, that line replaced by `line` (None: left out too)."""
    lines = text.splitlines()
    return "\n".join(lines[: number - 1] + ([line] if line is not None else []))


def test_bad_tables_name_the_line(tmp_path):
    text = busy_table()
    lines = text.splitlines()
    part1, part3 = line_of(text, "| Part1"), line_of(text, "| Part3")
    title, busy = line_of(text, "|IIO Stack 0"), line_of(text, "1495 M")
    cases = [
        # Cut inside a row: a_data closes every cell with "|".
        (with_line(text, part3, lines[part3 - 1][:40]), part3, "truncated row: it does not end"),
        # Cut between rows, the paste ending there.
        (
            with_line(text, part3 + 1, None),
            part3,
            "truncated table: 'IIO Stack 0 - CBDMA/DMI' ends without its |___| rule",
        ),
        # Cut after the title and its rule.
        (
            with_line(text, title + 2, None),
            title + 1,
            "truncated table: 'IIO Stack 0 - CBDMA/DMI' has no counter rows",
        ),
        (with_line(text, title, lines[title - 1][:60]), title, "truncated title row"),
        # A garbage value.
        (
            text.replace("1495 M", "14X5 M", 1),
            busy,
            "IB write (bytes) value '14X5 M' is not a number",
        ),
        # pcm's 2^64-1 "unavailable" reading as unit_format prints it: "18446744 T".
        (
            text.replace("1495 M          ", "18446744 T      ", 1),
            busy,
            "IB write (bytes) value '18446744 T' is not a counter reading",
        ),
        # More values than the title has columns.
        (
            with_line(text, part1, lines[part1 - 1] + "   1  |" * 8),
            part1,
            "12 values but the title has 11 columns",
        ),
        # A row before any title.
        ("| Part0 |   1  |\n" + text, 1, "a counter row outside a pcm-iio table"),
    ]
    path = tmp_path / "pcm.txt"
    for bad, number, message in cases:
        path.write_text(bad)
        with pytest.raises(CounterFileError) as err:
            counters.parse(path, "pcm-iio")
        assert str(err.value).startswith(f"{path}: line {number}: {message}")


def test_an_unknown_column_fails_unless_lenient(tmp_path):
    # A user's own opCode file can name any event; the talk's table shows "TLB1 miss".
    columns = (*pcm.SKX_COLUMNS[:4], "TLB1 miss")
    stack = pcm.Stack(SKX_STACKS[1], [[1000, 2000, 0, 0, 5]] + [[0] * 4] * 3)
    text = pcm.table([{0: [stack]}], columns, pcm.SKX_PARTS)
    with pytest.raises(CounterFileError, match=r"line [0-9]+: unknown pcm-iio column 'TLB1 miss'"):
        parsed(tmp_path, text)
    s = parsed(tmp_path, text, lenient=True)
    assert s.skipped_columns == ["TLB1 miss"]
    assert s.value[:4] == [1000, 2000, 0, 0]
    assert "tlb1_miss" not in s.metric


def test_cli_format_and_detection_take_the_table(tmp_path, capsys):
    path = tmp_path / "pcm.txt"
    path.write_text(busy_table())
    db = str(tmp_path / "s.duckdb")
    for options in ([], ["--counters-format", "pcm-iio", "--force"]):
        code, out, err = run_cli(capsys, "counters", "import", str(path), *options, "--db", db)
        assert code == 0, err
        assert "note: values printed with a K/M/G/T suffix" in out


# unit_format prints n // divisor in "%4d" (src/utils.h); up to 2^53 every value is exact as
# a float and prints as at most "9007 T", within the narrowest column.
values = st.integers(min_value=0, max_value=2**53)


@settings(max_examples=60, deadline=None)
@given(
    part0=st.lists(values, min_size=11, max_size=11),
    others=st.lists(st.lists(values, min_size=4, max_size=4), min_size=3, max_size=3),
)
def test_random_values_round_trip_within_the_printing_precision(tmp_path_factory, part0, others):
    stack = pcm.Stack(SKX_STACKS[1], [part0, *others])
    one = [{0: [stack]}]
    path = tmp_path_factory.mktemp("p") / "pcm.txt"
    path.write_text(pcm.table(one, pcm.SKX_COLUMNS, pcm.SKX_PARTS))
    printed = counters.parse(path, None).value
    path.write_text(pcm.csv(one, pcm.SKX_COLUMNS, pcm.SKX_PARTS))
    true = [*part0, *(v for row in others for v in row)]
    assert counters.parse(path, None).value == true  # the CSV is exact
    for shown, value in zip(printed, true, strict=True):
        assert within_print(shown, value)
        assert shown % pcm.divisor(value) == 0  # whole units of its suffix

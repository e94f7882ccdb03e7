"""Text that reads whole (issues 27 and 44): every command's default text output, rendered at
60, 80 and 120 columns, keeps each table row on one line (columns left out, named in one line,
long text cut with an ellipsis) and no line is wider than the terminal; `--wide` prints it all.

Every line of the README's "What it answers" and every --help example runs once, in a clone,
in this process; each result's text is then rendered at each width ($COLUMNS) and set against
its `--wide` rendering: a row of the wide text is one line of the narrow one (its cells a
subsequence of the wide row's, a cut cell a prefix/suffix of its own); a label-value line may
go on below in its value's column; prose may wrap between words."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pcieperf import text
from pcieperf.cli import _output, main
from pcieperf.cli.examples import ordered, readme_lines
from pcieperf.results import Column, Table
from pcieperf.text import ELLIPSIS, LEFT_OUT, format_table, pairs
from tests.helpers import ROOT, SHARED, TESTS_DATA
from tests.helpers.scripts import golden_json

WIDTHS = (60, 80, 120)
PCM = str(TESTS_DATA / "counters" / "pcm-iio-skx.csv")
# Lines beyond the docs' that the issue names: an empty store's runs, a platform's sources,
# the forwarding cost that pushed a column onto a line of its own, a trace's demand.
EXTRA = (
    "pcieperf capture runs",
    "pcieperf platforms skylake-sp",
    "pcieperf capture model --fwd-ns 60",
    "pcieperf nic --trace imix.pcap",
    "pcieperf trace demand imix.pcap",
    "pcieperf iommu advise --packets 20000",
    "pcieperf explain --counters tests/data/counters/pcm-iio-skx.csv --pps 7M --frame 64",
    "pcieperf profiles testpmd-fwd",
    "pcieperf latency --sizes 64,1500 --breakdown",
    "pcieperf iommu fit --counters tests/data/counters/pcm-iio-skx.csv --pps 7M --rxd 1024",
)
CELL_GAP = re.compile(r"\s{2,}")


def suites() -> dict[str, list[str]]:
    """The README's lines with EXTRA, and the --help examples (as text: without --json), each
    suite run in order in a clone of its own (later lines read what earlier ones write),
    without what needs DPDK, root or a stored run, or writes the figure report."""
    readme = readme_lines((ROOT / "README.md").read_text())
    examples = [line.replace(" --json", "") for _, line in ordered()]
    return {
        name: [line for line in golden_json.runnable(lines) if "pcieperf report" not in line]
        for name, lines in (("readme", [*readme, *EXTRA]), ("examples", examples))
    }


def lines_to_run() -> list[str]:
    """Every line of the suites once."""
    return list(dict.fromkeys(line for lines in suites().values() for line in lines))


def argv_of(line: str, work: Path) -> list[str]:
    """A pasted line's arguments as the shell gives them (globs expanded), comment removed."""
    command = line.split("  #", 1)[0].strip().removeprefix("pcieperf ")
    done = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {command}"], cwd=work, capture_output=True, check=True
    )
    return done.stdout.decode().split("\0")[:-1]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Each line's text renderer (`human`, as `_output._emit` gets it) after running it."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (set PCIEPERF_SHARED_DATA): the README's lines need it")
    found: dict[str, object] = {}

    def keep(line: str):
        return lambda args, payload, human, csv=None: found.setdefault(line, human)

    for name, lines in suites().items():
        work = golden_json.clone(tmp_path_factory.mktemp(name))
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(work)
            patch.setenv("PCIEPERF_DB", str(work / "store.duckdb"))
            for line in lines:
                patch.setattr(_output, "_emit", keep(line))
                assert main(argv_of(line, work)) == 0, line
                assert line in found, f"{line}: printed outside the CLI's one output function"
    return found


def render(human, columns: int | None) -> str:
    """What the CLI prints at `columns` ($COLUMNS; None: --wide)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(columns or 1000))
        text.configure(wide=columns is None)
        try:
            return text.fit_lines(human())
        finally:
            text.configure(wide=False)


def cells(line: str) -> list[str]:
    return CELL_GAP.split(line.strip())


def same_cell(narrow: str, wide: str) -> bool:
    """Whether `narrow` is `wide`, or `wide` cut with an ellipsis."""
    if ELLIPSIS not in narrow or narrow == wide:
        return narrow == wide
    head, _, tail = narrow.partition(ELLIPSIS)
    return len(narrow) <= len(wide) and wide.startswith(head) and wide.endswith(tail)


def is_subrow(narrow: list[str], wide: list[str]) -> bool:
    """Whether the cells of a narrow row are the wide row's in order, some left out."""
    k = 0
    for cell in narrow:
        while k < len(wide) and not same_cell(cell, wide[k]):
            k += 1
        if k == len(wide):
            return False
        k += 1
    return True


def same_words(narrow: list[str], wide: list[str]) -> bool:
    """Whether `narrow` is `wide` word by word, a word cut with an ellipsis counting."""
    return len(narrow) == len(wide) and all(map(same_cell, narrow, wide))


def follow(todo: list[str], k: int, got: str, column: int, line: str) -> tuple[str, int]:
    """`got` with the lines after it that go on from `column` on (a wrapped value or prose),
    while it is shorter than the wide `line`."""
    while (
        k < len(todo)
        and len(got.split()) < len(line.split())
        and todo[k][:column].isspace()
        and todo[k][column : column + 1].strip()
    ):
        got, k = f"{got} {todo[k].strip()}", k + 1
    return got, k


def broken_rows(wide: str, narrow: str, columns: int) -> list[str]:
    """The wide text's lines that the narrow one does not hold whole (see the module's
    docstring), and any narrow line wider than `columns`."""
    lines = narrow.splitlines()
    problems = [f"wider than {columns}: {line!r}" for line in lines if len(line) > columns]
    todo = [line for line in lines if not line.startswith(LEFT_OUT)]
    k = 0
    for line in wide.splitlines():
        if k >= len(todo):
            return [*problems, f"missing: {line!r}"]
        got, k, parts = todo[k], k + 1, cells(line)
        shown = cells(got)
        if len(parts) == 2 and len(shown) == 2 and shown[0] == parts[0]:  # a label and value
            got, k = follow(todo, k, got, len(got) - len(shown[1]), line)
            value = " ".join(got.split()[len(parts[0].split()) :])
            if not same_cell(value, " ".join(parts[1].split())):
                problems.append(f"value broken: {line!r} shows as {got!r}")
        elif len(parts) > 1:  # a table row
            if not is_subrow(shown, parts):
                problems.append(f"row broken: {line!r} shows as {got!r}")
        else:  # prose
            indent = len(got) - len(got.lstrip())
            got, k = follow(todo, k, got, indent + 2, line)
            if not same_words(got.split(), line.split()):
                problems.append(f"text broken: {line!r} shows as {got!r}")
    return problems + [f"extra: {line!r}" for line in todo[k:]]


@pytest.mark.slow
@pytest.mark.parametrize("line", lines_to_run())
def test_every_row_reads_whole_at_60_80_and_120_columns(rendered, line):
    wide = render(rendered[line], None)
    for columns in WIDTHS:
        assert broken_rows(wide, render(rendered[line], columns), columns) == [], columns


def test_a_wrapped_row_is_found():
    wide = "term                        metric        B/pkt\n"
    wide += "NIC fetches Rx descriptors  inbound_read  32.00"
    narrow = "term    metric   data B/pkt\nNIC fetches  inbound_read  32.00\nRx descriptors"
    assert broken_rows(wide, narrow, 80) != []


def test_a_table_leaves_out_its_least_important_columns_and_says_which():
    rows = [("a long description of the first thing", 12.5, 3.0), ("short", 1234567.0, 4.0)]
    table = format_table(("what", "Gb/s", "Mpps"), rows, 30, drop=[1]).splitlines()
    assert max(map(len, table)) <= 30
    assert table[0].startswith("what ")  # text left-aligned
    assert table[1].endswith("3.00")  # numbers right-aligned, never cut
    assert table[1].startswith("a long description of t…")  # text cut, not wrapped
    assert len(table) == 4  # a header, two rows, the line naming what was left out
    assert table[-1] == f"{LEFT_OUT} Gb/s"


def test_a_path_keeps_its_file_name_and_wide_prints_everything():
    path = "/home/someone/a/long/folder/of/captures/two-lcores-256.pcapng"
    row = format_table(("file", "packets"), [(path, 256)], 40).splitlines()[1]
    assert row.startswith(f"/home/so{ELLIPSIS}/two-lcores-256.pcapng")
    assert row.endswith("256")
    assert path in format_table(("file", "packets"), [(path, 256)], None)


def test_a_value_goes_on_below_in_its_column():
    rings = "Tx ring full: page walks hold the Tx DMA back"
    block = pairs([("rings", rings), ("IOTLB", "2")], 2, 30)
    assert block.splitlines() == [
        "  rings  Tx ring full: page",
        "         walks hold the Tx DMA",
        "         back",
        "  IOTLB  2",
    ]


def test_an_empty_table_says_what_makes_rows():
    table = Table([], (Column("id", "id"),), empty="no runs yet; run `pcieperf capture run`")
    assert table.to_text() == "no runs yet; run `pcieperf capture run`"

"""No figure of pcieperf's own speed or memory in README.md or docs/*.md that benchmarks/run_all.py
does not regenerate (issue 15, last acceptance line): a line that quotes one must point to
benchmarks/results.md instead. The patterns are the forms such figures took in these files (a
benchmark's "median [range]", rates of rows, points or parts per second, seconds per chunk, time
per row, packet or file, "N times faster", "MiB peak"); the model's own outputs (Mpps, Gb/s, ns,
µs of latency, ratios of rates) and Dask's documented cost per task use none of them. A bare time
("0.27 s") is not matched: it cannot be told from a model's or an option's value."""

import re

import pytest

from tests.helpers import ROOT

START, END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
POINTER = "benchmarks/results.md"
NUMBER = r"\d[\d,.]*\s*"
TIMES, DASH = "\u00d7", "\u2013"  # the multiplication sign and the en dash the docs use
SPEED = re.compile(
    "|".join(
        [
            NUMBER + r"(?:ms|s|µs) \[\d",  # a benchmark's median [min-max]
            NUMBER + r"(?:[kMG] )?(?:evaluations|rows|points|values|parts|records|files)/s\b",
            r"\bs/chunk\b",
            NUMBER + r"(?:ms|µs|s) (?:a|per) (?:row|part|packet|file|chunk|point)\b",
            NUMBER + f"(?:{TIMES}|x)" + r" (?:faster|slower)\b",
            NUMBER + r"MiB peak\b",
            r"\bpeak RSS (?:of )?" + NUMBER,
        ]
    )
)


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a document outside the runner's generated benchmark table."""
    lines, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        inside = (inside or START in line) and END not in line
        if not inside and END not in line:
            lines.append((number, line))
    return lines


def unsourced_figures(text: str) -> list[str]:
    """`line: text` of every speed or memory figure that does not point to the runner's table."""
    return [
        f"{number}: {line.strip()}"
        for number, line in prose_lines(text)
        if SPEED.search(line) and POINTER not in line
    ]


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_no_speed_figure_the_runner_does_not_regenerate(path):
    assert unsourced_figures(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "line",
    [
        # the forms the issue 15 audit removed from docs/trace.md and docs/scale.md
        "| `trace stats F --json` | 0.219 s [0.150-0.242], 17.0 MiB | `capinfos -c -d` 0.732 s |",
        f"output 0.3{DASH}1.4 M rows/s and about 330 one-row parts/s.",
        '"at once" and "s/chunk" are run C\'s:',
        f"105 ms for 1 M packets, i.e. 0.05{DASH}0.13 µs a packet.",
        f"trace merge is 5.1{TIMES} faster than mergecap",
        "| writer | 210 ms, 98.9 MiB peak |",
        "with a peak RSS of 187 MB",
    ],
)
def test_the_figures_removed_by_the_audit_are_caught(line):
    assert unsourced_figures(line) == [f"1: {line}"]


@pytest.mark.parametrize(
    "line",
    [
        # model outputs and measured PCIe data: not figures of pcieperf's speed
        f"64 B forwarding: 2.01 page walks per packet, 0.23 {TIMES} the hugepage rate",
        "walks at 59.5 M/s against 12 / 321 ns = 37.4 M/s",
        # Dask's documented scheduler cost, an external figure
        f"the scheduler: Dask documents 200 µs{DASH}1 ms per task",
        "the latency sweep's p99.9 is ~2 ms against a 1.2 µs median (min 507 ns)",
        "| 32 | +224 % (tx-full) | 1.51 / 3.02 | 1.1 us: +49 % | 3 | 1.28 |",
        # a pointer to the runner's table is the allowed way to cite a figure
        "0.219 s [0.150-0.242]: benchmarks/results.md, row `stats: 6000000 packets`",
    ],
)
def test_model_outputs_and_pointers_pass(line):
    assert unsourced_figures(line) == []


def test_the_generated_table_is_skipped():
    # Hand-built: line 3 is inside the markers, line 5 after them.
    text = f"intro\n{START}\n| x | 1 s [1-2] |\n{END}\nafter 2 s [1-3]\n"
    assert unsourced_figures(text) == ["5: after 2 s [1-3]"]

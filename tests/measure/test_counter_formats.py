"""The table of counter formats (`measure.counters.formats`, issue 30 item 7): every shipped
example is recognised as the format it is, by its row alone, and a format is added by writing
an importer and adding a row, as CONTRIBUTING.md says (a throwaway one here)."""

from collections.abc import Iterable

import pytest

from pcieperf.errors import CounterFileError, UsageError
from pcieperf.measure import counters
from pcieperf.measure.counters import formats
from pcieperf.measure.counters.samples import BYTES_PER_S, Samples, Sink, _fail, _number
from tests.helpers import TESTS_DATA
from tests.helpers.cli import run_cli

DATA = TESTS_DATA / "counters"
# tests/data/counters/README.md says which tool wrote each file.
WRITTEN_BY = {
    "pcm-iio-skx.csv": "pcm-iio -csv",
    "pcm-iio-spr-human.csv": "pcm-iio -csv",
    "pcm-iio-skx-table.txt": "pcm-iio (its default table)",
    "perf-iostat-interval.csv": "perf iostat -x,",
    "perf-stat-free-running-icx.csv": "perf stat -x on IIO events",
    "perf-stat-iio-skx.csv": "perf stat -x on IIO events",
    "vtune-io-summary.csv": "vtune -report summary -format csv",
}


@pytest.mark.parametrize("name", sorted(WRITTEN_BY))
def test_each_example_is_recognised_by_its_own_row_only(name):
    head = (DATA / name).read_text()[: 1 << 20]
    assert formats.detect(head, name).written_by == WRITTEN_BY[name]
    # One row recognises it: the order of the table never decides between two formats.
    assert [f.written_by for f in formats.FORMATS if f.recognises(head)] == [WRITTEN_BY[name]]


def test_the_cli_choices_are_the_table_s_names():
    assert formats.names() == ("pcm-iio", "perf-iostat", "vtune", "perf-stat")
    assert set(formats.names()) == {f.name for f in formats.FORMATS}


DEMO_HEADER = "demo_t_s,demo_metric,demo_bytes_per_s"


def parse_demo(
    lines: Iterable[str], file: str, *, lenient: bool = False, sink: Sink | None = None
) -> Samples:
    """A throwaway importer, written as CONTRIBUTING.md says: rows `t_s,metric,B/s`."""
    out = Samples("demo", file, sink=sink)
    for number, line in enumerate(lines, start=1):
        if number == 1 or not line.strip():
            continue
        cells = line.strip().split(",")
        if len(cells) != 3:
            raise _fail(file, number, f"truncated row: {len(cells)} fields, expected 3")
        t_s, metric, value = cells
        rate = _number(value, file, number, metric)
        out.add(_number(t_s, file, number, "t_s"), None, None, "", "", metric, rate, BYTES_PER_S)
    return out


DEMO = formats.CounterFormat(
    "demo",
    "a demo tool",
    lambda head: formats.first_line(head) == DEMO_HEADER,
    parse_demo,
    frozenset(),
)


@pytest.fixture
def demo_format(monkeypatch):
    monkeypatch.setattr(formats, "FORMATS", [*formats.FORMATS, DEMO])


def test_a_format_added_by_its_row_is_detected_and_read(demo_format, tmp_path):
    path = tmp_path / "demo.csv"
    path.write_text(f"{DEMO_HEADER}\n1.0,inbound_write,2e9\n2.0,inbound_write,3e9\n")
    found = counters.parse(path, None)
    assert (found.source, found.t_s, found.value) == ("demo", [1.0, 2.0], [2e9, 3e9])
    assert counters.parse(path, "demo").value == [2e9, 3e9]  # named, as --counters-format does
    path.write_text(f"{DEMO_HEADER}\n1.0,inbound_write\n")
    with pytest.raises(CounterFileError, match="line 2: truncated row"):
        counters.parse(path, None)


def test_a_head_no_row_recognises_names_every_format(tmp_path, capsys):
    path = tmp_path / "unknown.csv"
    path.write_text("a,b,c\n1,2,3\n")
    code, _, err = run_cli(capsys, "counters", "import", str(path), "--db", str(tmp_path / "s.db"))
    assert code == 2
    assert err.strip().endswith("pass --counters-format (pcm-iio, perf-iostat, vtune, perf-stat)")
    with pytest.raises(UsageError, match="counter format 'nope'"):
        counters.parse(path, "nope")

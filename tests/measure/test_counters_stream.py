"""`counters import` streams its file (issue 28): lines are read a block at a time and samples
handed to the store a chunk at a time, so memory stays bounded whatever the file's size, the
samples are those of reading the file whole, and the import stays all or nothing."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.cli import main
from pcieperf.measure import counters
from pcieperf.measure.counters import samples as samples_module
from pcieperf.measure.counters import text as text_module
from pcieperf.measure.counters.samples import Samples
from pcieperf.measure.store import Store
from tests.helpers.counters import PCM_SAMPLE, repeated
from tests.helpers.limits import run_limited

COLUMNS = ("t_s", "wall", "socket", "stack", "part", "metric", "value", "unit")

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from Linux /proc"
)


def shown(db: Path) -> list[dict]:
    """`counters show 1 --json`: per socket, stack, part and metric, samples, mean, min, max."""
    done = run_limited(["counters", "show", "1", "--db", str(db), "--json"])
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)


def test_a_large_import_stays_bounded_and_equals_the_small_one_repeated(tmp_path):
    # 22 000 copies of the 46-sample file (24 MB, 1 M samples). Read whole, as before the
    # streaming, 21 MB peaked at 452 MB resident and 1.30 GB of address space, ~340 MB over a
    # small import's; streamed, a 21 MB and a 200 MB file both peak ~40 MB over it.
    copies = 22_000
    small_db, large_db = tmp_path / "small.duckdb", tmp_path / "large.duckdb"
    small = run_limited(["counters", "import", str(PCM_SAMPLE), "--db", str(small_db), "--json"])
    assert small.code == 0, small.stderr
    large_file = repeated(tmp_path / "large.csv", copies)
    limit = small.address_kib + 128 * 1024  # the hard limit: 128 MiB over the small import
    large = run_limited(
        ["counters", "import", str(large_file), "--db", str(large_db), "--json"], limit
    )
    assert large.code == 0, large.stderr
    assert large.rss_kib < small.rss_kib + 96 * 1024
    assert json.loads(large.stdout)["samples"] == copies * json.loads(small.stdout)["samples"]
    # Each (stack, part, metric) holds the small file's values `copies` times over.
    expected = [row | {"samples": row["samples"] * copies} for row in shown(small_db)]
    got = shown(large_db)
    assert [
        {k: pytest.approx(v) if isinstance(v, float) else v for k, v in row.items()}
        for row in expected
    ] == got


def columns(samples: Samples) -> tuple:
    """Copies of the columns (a sink's are emptied once it returns)."""
    return tuple(list(getattr(samples, name)) for name in COLUMNS)


@settings(max_examples=30, deadline=None)
@given(block=st.integers(1, 400), chunk=st.integers(1, 50), crlf=st.booleans())
def test_blocks_and_chunks_of_any_size_give_the_whole_files_samples(
    tmp_path_factory, block, chunk, crlf
):
    # Lines cut by a block's end (a \r\n too) and samples cut into chunks change nothing. (The
    # format is named: it is detected from the first block, here shorter than a line.)
    folder = tmp_path_factory.mktemp("stream")
    text = PCM_SAMPLE.read_text()
    path = folder / "pcm.csv"
    path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode())
    whole = counters.parse(PCM_SAMPLE, None)
    handed: list[tuple] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "BLOCK_BYTES", block)
        patch.setattr(samples_module, "CHUNK_SAMPLES", chunk)
        streamed = counters.parse(path, "pcm-iio", sink=lambda c: handed.append(columns(c)))
        read = counters.parse(path, "pcm-iio")
    assert len(streamed) == len(whole) == 46
    assert columns(read) == columns(whole)
    joined = tuple([v for c in handed for v in c[k]] for k in range(len(COLUMNS)))
    assert joined == columns(whole)
    assert all(len(c[0]) <= chunk for c in handed)
    assert streamed.metrics() == sorted(set(whole.metric))


@pytest.mark.slow
def test_explain_and_iommu_fit_of_a_large_file_stay_bounded(tmp_path):
    # Issue 46 F9: explain --counters and iommu fit --counters read the whole file into
    # samples (2.2 GB for 200 MB). They go through the store as an import does, and read the
    # stack's sums alone: 22 000 copies (24 MB, 1 M samples) stay within a small file's peaks.
    large_file = repeated(tmp_path / "large.csv", 22_000)
    for command in (
        ["explain", "--pps", "10M", "--frame", "64", "--json"],
        ["iommu", "fit", "--pps", "7M", "--packets", "20000", "--json"],
    ):
        small = run_limited([*command, "--counters", str(PCM_SAMPLE)])
        assert small.code == 0, small.stderr
        limit = small.address_kib + 128 * 1024  # the hard limit: 128 MiB over the small run
        large = run_limited([*command, "--counters", str(large_file)], limit)
        assert large.code == 0, large.stderr
        assert large.rss_kib < small.rss_kib + 96 * 1024, command


def test_a_failed_import_leaves_nothing_and_a_killed_ones_rows_are_dropped(tmp_path):
    db = tmp_path / "s.duckdb"
    assert main(["counters", "import", str(PCM_SAMPLE), "--db", str(db), "-q"]) == 0
    broken = repeated(tmp_path / "broken.csv", 3000)  # 138 000 samples, several chunks
    with broken.open("a") as fh:
        fh.write("2026-11-21,23:08:10.123,Socket0,IIO Stack 2 - PCIe1,Part1,x\n")
    assert main(["counters", "import", str(broken), "--db", str(db), "-q"]) == 2
    count = "SELECT (SELECT count(*) FROM counter_samples), (SELECT count(*) FROM counter_staging)"
    with Store(db) as store:
        assert store.con.execute(count).fetchall() == [(46, 0)]
        # What an import killed mid-way leaves: staged rows no transaction moved.
        store.con.execute("INSERT INTO counter_staging (value) VALUES (1.0)")
    # --force replaces import 1 by a new import 1, as before the staging.
    argv = ["counters", "import", str(PCM_SAMPLE), "--db", str(db), "--force", "--json"]
    done = run_limited(argv)
    assert (done.code, json.loads(done.stdout)["import_id"]) == (0, 1), done.stderr
    with Store(db) as store:
        assert store.con.execute(count).fetchall() == [(46, 0)]

"""Counter importers: exact values and units from hand-written files in each tool's documented
format (tests/data/counters/README.md says where each detail comes from), quirks, bad files,
and all-or-nothing imports into the store."""

import itertools
import json
from pathlib import Path

import pytest

from pcieperf.cli import main
from pcieperf.errors import CounterFileError, PcieperfWarning, UsageError
from pcieperf.measure import counters
from pcieperf.measure.counters.samples import Samples
from pcieperf.measure.store import Store
from tests.helpers import TESTS_DATA
from tests.helpers.cli import run_cli

PCM_FILE = TESTS_DATA / "counters" / "pcm-iio-skx.csv"  # a pcm-iio sample

DATA = TESTS_DATA / "counters"


def by_key(samples: Samples) -> dict:
    return {
        (t, st, part, m): (v, u)
        for t, st, part, m, v, u in zip(
            samples.t_s,
            samples.stack,
            samples.part,
            samples.metric,
            samples.value,
            samples.unit,
            strict=True,
        )
    }


def test_pcm_iio_skylake_repeated_headers_and_ragged_rows():
    s = counters.parse(DATA / "pcm-iio-skx.csv", "pcm-iio")
    got = by_key(s)
    stack, part0 = "IIO Stack 2 - PCIe1", "Part0 (1st x16/x8/x4)"
    # Values are per second and already bytes (pcm multiplies the 4-byte events by 4).
    assert got[(0.0, stack, part0, "inbound_write")] == (1_495_000_000, "B/s")
    assert got[(0.0, stack, part0, "inbound_read")] == (1_189_000_000, "B/s")
    assert got[(0.0, stack, part0, "iotlb_miss")] == (192, "1/s")
    # The second block starts 1.001 s later (23:08:10.123 -> 23:08:11.124).
    assert got[(1.001, stack, part0, "outbound_write")] == (1_230_000, "B/s")
    # Ragged Part1 rows: four byte metrics, no IOTLB columns.
    part1 = {m for (t, _, p, m) in got if p == "Part1 (2nd x4)" and t == 0.0}
    assert part1 == {"inbound_write", "inbound_read", "outbound_read", "outbound_write"}
    # 2 samples x (Part0: 4 bytes + 7 IOMMU, Part1..3: 4 bytes) = 2 x 23.
    assert len(s) == 46
    assert set(s.socket) == {0}


def test_pcm_iio_sapphire_rapids_human_readable_root_port_semicolons():
    s = counters.parse(DATA / "pcm-iio-spr-human.csv", "pcm-iio")
    got = by_key(s)
    stack = "IIO Stack 2 - PCIe0 [16:02.0]"  # trailing pad spaces trimmed, Root Port kept
    assert got[(0.0, stack, "Part0", "inbound_write")] == (1495e6, "B/s")  # "1495 M"
    assert got[(1.0, stack, "Part0", "inbound_write")] == (2e9, "B/s")  # "   2 G"
    assert got[(0.0, stack, "Part0", "iotlb_miss")] == (12e3, "1/s")  # "  12 K"
    assert got[(0.0, stack, "Part0", "iotlb_lookup")] == (19e6, "1/s")
    assert got[(0.0, stack, "Part0", "256t_cache_hit")] == (0, "1/s")


def test_perf_iostat_mib_per_interval_become_bytes_per_second():
    s = counters.parse(DATA / "perf-iostat-interval.csv", "perf-iostat")
    got = by_key(s)
    # 1134 MiB in the first interval of 1.000212350 s.
    assert got[(1.000212350, "0000:17", "", "inbound_read")][0] == pytest.approx(
        1134 * 2**20 / 1.000212350
    )
    # The second interval is 2.000513790 - 1.000212350 s long.
    assert got[(2.000513790, "0000:17", "", "inbound_write")][0] == pytest.approx(
        1432 * 2**20 / (2.000513790 - 1.000212350)
    )
    assert len(s) == 16


def test_perf_stat_free_running_mib_per_interval_per_socket():
    s = counters.parse(DATA / "perf-stat-free-running-icx.csv", "perf-stat")
    got = {
        (t, sk, st, p, m): v
        for t, sk, st, p, m, v in zip(
            s.t_s, s.socket, s.stack, s.part, s.metric, s.value, strict=True
        )
    }
    stack = "uncore_iio_free_running_2"
    # 1534.25 MiB (perf already applied .scale = 4 B / 2^20) over the first 1.000212350 s.
    assert got[(1.000212350, 0, stack, "port0", "device_to_host")] == pytest.approx(
        1534.25 * 2**20 / 1.000212350
    )
    # bw_out, second interval: 1220.00 MiB over 2.000401822 - 1.000212350 s.
    assert got[(2.000401822, 0, stack, "port0", "host_to_device")] == pytest.approx(
        1220.0 * 2**20 / (2.000401822 - 1.000212350)
    )
    assert got[(2.000401822, 1, stack, "port0", "device_to_host")] == 0.0
    assert len(s) == 8
    assert set(s.unit) == {"B/s"}


def test_perf_stat_aliases_and_raw_events_totals_over_interval():
    s = counters.parse(DATA / "perf-stat-iio-skx.csv", "perf-stat", interval_s=10.0, lenient=True)
    got = by_key(s)
    # UNC_IIO_DATA_REQ_OF_CPU.MEM_READ is the device reading memory: 11.96e9 B (ScaleUnit
    # 4Bytes already applied, unit "Bytes") over the 10 s run.
    assert got[(10.0, "uncore_iio_1", "part0", "inbound_read")] == (1.196e9, "B/s")
    assert got[(10.0, "uncore_iio_1", "part0", "inbound_write")] == (1.495e9, "B/s")
    # The raw form has no ScaleUnit: 3125000 counts of 4 bytes; ch_mask=0x2 is part 1.
    assert got[(10.0, "uncore_iio_1", "part1", "outbound_write")] == (3125000 * 4 / 10, "B/s")
    # <not counted> is skipped under --lenient and named.
    assert s.skipped_columns == ["UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART1 [uncore_iio_1]"]
    assert len(s) == 5


def test_perf_stat_per_die_node_and_cpu_keep_each_counter_apart(tmp_path):
    path = tmp_path / "p.csv"
    event = "uncore_iio_free_running_2/bw_in_port0/"
    lines = []
    for t in ("1.0", "2.0"):
        for aggregation, mib in (("S0-D0", 1), ("S0-D1", 2), ("N1", 3), ("CPU36", 4)):
            lines.append(f"{t};{aggregation};1;{mib};MiB;{event};1;100.00;;")
    path.write_text("\n".join(lines) + "\n")
    s = counters.parse(path, "perf-stat")
    got = {(t, sk, st): v for t, sk, st, v in zip(s.t_s, s.socket, s.stack, s.value, strict=True)}
    stack = "uncore_iio_free_running_2"
    # Each aggregation is its own counter over 1 s intervals; dies keep their socket.
    assert got[(2.0, 0, f"{stack} [S0-D1]")] == 2 * 2**20
    assert got[(2.0, None, f"{stack} [N1]")] == 3 * 2**20
    assert got[(1.0, None, f"{stack} [CPU36]")] == 4 * 2**20
    assert len(s) == 8


def test_perf_stat_raw_umask_spellings_and_skipped_only_files(tmp_path):
    path = tmp_path / "p.csv"
    # uncore-io.json spells umasks 0x04; perf keeps the user's spelling in the name.
    path.write_text("8;;uncore_iio_0/event=0x83,umask=0x04/;1;100.00;;\n")
    assert counters.parse(path, "perf-stat", interval_s=2).value == [8 * 4 / 2]
    path.write_text("<not supported>;Bytes;UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0;0;0.00;;\n")
    with pytest.raises(CounterFileError, match="line 1: no IIO samples"):
        counters.parse(path, "perf-stat", interval_s=2, lenient=True)


@pytest.mark.parametrize("interval", [-1.0, float("nan"), float("inf"), 0.0])
def test_interval_must_be_positive_and_finite(interval):
    with pytest.raises(UsageError, match="`interval_s`"):
        counters.parse(DATA / "perf-iostat-interval.csv", None, interval_s=interval)


def test_vtune_summary_quoted_names_and_embedded_table():
    s = counters.parse(DATA / "vtune-io-summary.csv", "vtune")
    # MB/sec taken as 10^6 B/s; the averages cover the 20.012 s elapsed time.
    assert by_key(s) == {
        (20.012, "", "", "inbound_read"): (1196.2e6, "B/s"),
        (20.012, "", "", "inbound_write"): (1495.0e6, "B/s"),
        (20.012, "", "", "outbound_read"): (0.0, "B/s"),
        (20.012, "", "", "outbound_write"): (12.5e6, "B/s"),
    }


def test_vtune_unquoted_names_and_tab_delimiter(tmp_path):
    path = tmp_path / "v.csv"
    # -csv-delimiter tab: detected from the header.
    path.write_text(
        "Hierarchy Level\tMetric Name\tMetric Value\n1\tInbound PCIe Write, GB/sec\t1.5\n"
    )
    assert counters.parse(path, "vtune").value == [1.5e9]
    # Unquoted: the name's own comma splits it; the cells are joined back.
    path.write_text("Hierarchy Level,Metric Name,Metric Value\n1,Outbound PCIe Read, MB/sec,3\n")
    assert counters.parse(path, "vtune").value == [3e6]


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("pcm-iio", "hello,world\n1,2\n", "line 1: not a pcm-iio CSV"),
        (
            "pcm-iio",
            (DATA / "pcm-iio-skx.csv").read_text()[:-40],
            "line 10: truncated row: no counter values",  # the last of 10 lines, cut short
        ),
        (
            "pcm-iio",
            "Date,Time,Socket,Name,Part,IB write,Mystery\n",
            "line 1: unknown pcm-iio column 'Mystery'",
        ),
        (
            "pcm-iio",
            "Date,Time,Socket,Name,Part,IB write\n"
            "2026-11-21,23:08:10.123,Socket0,S,Part0,73786976294838206460\n",
            "line 2: IB write value '73786976294838206460' is not a counter reading",
        ),
        ("perf-iostat", "port,Inbound Read(MB),Bogus(MB)\n", "line 1: unknown perf iostat column"),
        (
            "perf-iostat",
            "port,Inbound Read(MB)\n0000:17,5\n",
            "line 2: perf iostat without -I reports totals; pass --interval SECONDS",
        ),
        ("perf-stat", "hello world\n", "line 1: not a perf stat -x line"),
        (
            "perf-stat",
            "1.0;5;MiB;uncore_iio_free_running_0/ioclk/;1;100.00;;\n",
            "line 1: unknown perf stat event 'uncore_iio_free_running_0/ioclk/'",
        ),
        (
            "perf-stat",
            "<not counted>;Bytes;UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0;0;0.00;;\n",
            "line 1: event 'UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0' is <not counted>",
        ),
        (
            "perf-stat",
            "1.0;2;MiB;uncore_iio_free_running_0/bw_in_port0/;1;100.00;;\n"
            "1.0;2;MiB;uncore_iio_free_running_0/bw_in_port0/;1;100.00;;\n",
            "line 2: time 1.0 does not advance",
        ),
        (
            "perf-stat",
            "5;Bytes;UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0;1;100.00;;\n",
            "line 1: perf without -I reports totals; pass --interval SECONDS",
        ),
        (
            "perf-stat",
            "1.0;S0;1;nan;MiB;uncore_iio_free_running_0/bw_in_port0/;1;100.00;;\n",
            "line 1: uncore_iio_free_running_0/bw_in_port0/ value 'nan' is not a counter reading",
        ),
        ("vtune", "Function,CPU Time\n", "line 1: not a VTune CSV report"),
        (
            "vtune",
            "Hierarchy Level,Metric Name,Metric Value\n0,Elapsed Time,3\n",
            "line 2: no PCIe bandwidth metric",
        ),
        (
            "vtune",
            'Hierarchy Level,Metric Name,Metric Value\n1,"Inbound PCIe Read, MB/sec"\n',
            "line 2: truncated row",
        ),
        (
            "vtune",
            "Hierarchy Level,Metric Name,Metric Value,Extra\n",
            "line 1: unknown VTune column 'Extra'",
        ),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, fmt, text, message):
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(CounterFileError) as err:
        counters.parse(path, fmt)
    assert str(err.value).startswith(f"{path}: {message}")


def test_lenient_skips_unknown_columns(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(
        "Date,Time,Socket,Name,Part,IB write,Mystery\n"
        "2026-11-21,23:08:10.123,Socket0,S,Part0,400,7\n"
    )
    s = counters.parse(path, "pcm-iio", lenient=True)
    assert (s.metric, s.value, s.skipped_columns) == (["inbound_write"], [400.0], ["Mystery"])


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("pcm-iio-skx.csv", []),
        ("pcm-iio-spr-human.csv", []),
        ("pcm-iio-skx-table.txt", []),
        ("perf-iostat-interval.csv", []),
        ("perf-stat-free-running-icx.csv", []),
        ("perf-stat-iio-skx.csv", ["--interval", "10", "--lenient"]),
        ("vtune-io-summary.csv", []),
    ],
)
def test_every_test_file_is_detected_and_round_trips_exactly(tmp_path, capsys, name, options):
    db = str(tmp_path / "s.duckdb")
    # No --format: the tool is detected from the file.
    assert main(["counters", "import", str(DATA / name), *options, "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    parsed = counters.parse(
        DATA / name, None, interval_s=10.0 if options else None, lenient=bool(options)
    )
    assert out["source"] == parsed.source
    stored = _stored_rows(db, out["import_id"])
    assert stored == list(
        zip(
            parsed.t_s,
            parsed.socket,
            parsed.stack,
            parsed.part,
            parsed.metric,
            parsed.value,
            parsed.unit,
            strict=True,
        )
    )
    assert {row[-1] for row in stored} <= {"B/s", "1/s"}


def _stored_rows(db: str | Path, import_id: int) -> list[tuple]:
    """The samples the store holds for an import, in file order: time, socket, stack, part,
    metric, value, unit."""
    query = (
        "SELECT t_s, socket, stack, part, metric, value, unit FROM counter_samples "
        "WHERE import_id = ? ORDER BY rowid"
    )
    with Store(Path(db)) as store:
        return store.con.execute(query, [import_id]).fetchall()


def test_store_round_trip_is_exact_and_imports_are_all_or_nothing(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    source = DATA / "pcm-iio-skx.csv"
    assert (
        main(["counters", "import", str(source), "--format", "pcm-iio", "--db", str(db), "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 46
    parsed = counters.parse(source, "pcm-iio")
    rows = [row[2:] for row in _stored_rows(db, out["import_id"])]
    assert rows == list(
        zip(parsed.stack, parsed.part, parsed.metric, parsed.value, parsed.unit, strict=True)
    )
    # The same file again needs --force; a broken file changes nothing.
    assert main(["counters", "import", str(source), "--format", "pcm-iio", "--db", str(db)]) == 2
    assert "already imported; pass --force" in capsys.readouterr().err
    broken = tmp_path / "broken.csv"
    broken.write_text(source.read_text()[:-40])
    assert main(["counters", "import", str(broken), "--format", "pcm-iio", "--db", str(db)]) == 2
    with Store(db) as store:
        assert [i["samples"] for i in store.counter_imports()] == [46]


def test_a_bom_is_read_as_excel_writes_it(tmp_path):
    # Issue 28 item 10: a pcm-iio CSV saved by Excel or PowerShell starts with a UTF-8 BOM.
    plain = TESTS_DATA / "counters" / "pcm-iio-skx.csv"
    marked = tmp_path / "bom.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    with_bom, without = counters.parse(marked, None), counters.parse(plain, None)
    assert (with_bom.source, with_bom.metric, with_bom.value) == (
        without.source,
        without.metric,
        without.value,
    )
    assert len(without.value) > 0


def test_an_endless_counter_file_is_refused(tmp_path):
    # /dev/zero as a counter CSV: read as a stream, its first "line" grows past the longest
    # line taken (text.MAX_LINE_CHARS), then refused in one line, not read into memory.
    path = tmp_path / "zero.csv"
    path.symlink_to("/dev/zero")
    with pytest.raises(UsageError, match=r"zero\.csv: line 1 is longer than 1,048,576"):
        counters.parse(path, "pcm-iio")


def test_counters_show_sums_up_an_import_and_rm_removes_it(tmp_path, capsys):
    # The shipped pcm-iio sample: one IIO stack's byte and IOTLB counters, per interval.
    import pcieperf as pp
    from tests.helpers.cli import run_cli

    db = tmp_path / "s.duckdb"
    assert main(["counters", "import", str(PCM_FILE), "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    code, out, err = run_cli(capsys, "counters", "show", "1", "--db", str(db), "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown == pp.counter_show(1, db=db).to_json()  # the CLI is the API
    samples = counters.parse(PCM_FILE, None)
    assert sum(row["samples"] for row in shown) == len(samples.value)
    keys = list(zip(samples.socket, samples.stack, samples.part, samples.metric, strict=True))
    for row in shown:
        key = (row["socket"], row["stack"], row["part"], row["metric"])
        values = [v for k, v in zip(keys, samples.value, strict=True) if k == key]
        assert row["min"] <= row["mean"] <= row["max"]
        assert row["mean"] == pytest.approx(sum(values) / len(values))
    code, out, err = run_cli(capsys, "counters", "rm", "1", "--db", str(db), "--json")
    assert (code, json.loads(out)) == (0, {"removed": 1}), err
    assert pp.counter_imports(db=db).to_json() == []
    code, _, err = run_cli(capsys, "counters", "show", "1", "--db", str(db))
    assert code == 2
    assert err.startswith("pcieperf: error: no counter import 1 in")


def test_explain_and_report_take_an_imported_counter_set(tmp_path, capsys):
    # `explain --import N` explains the samples the store holds for import N exactly as
    # `explain --counters FILE` explains the file they came from (the store keeps every value:
    # test_store_round_trip_is_exact...); report takes the same option.
    db, source = str(tmp_path / "s.duckdb"), DATA / "pcm-iio-skx.csv"
    assert main(["counters", "import", str(source), "--db", db, "-q"]) == 0
    setup = ["--pps", "10M", "--frame", "64", "--json"]
    answers = []
    for given in (["--counters", str(source)], ["--import", "1", "--db", db]):
        capsys.readouterr()
        assert main(["explain", *given, *setup]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0].pop("file") == str(source)
    assert answers[1].pop("file") == str(source.resolve())
    assert answers[0] == answers[1]
    assert main(["explain", "--import", "2", "--db", db, *setup]) == 2
    assert "no counter import 2" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):  # argparse: one of the two
        main(["explain", "--import", "1", "--counters", str(source), *setup])
    assert "not allowed with argument" in capsys.readouterr().err
    out = tmp_path / "report"
    assert main(["report", "-o", str(out), "--import", "1", "--db", db, *setup[:4], "-q"]) == 0
    assert "Measured counters" in (out / "index.html").read_text()


def _two_socket_file(path: Path) -> Path:
    """Four seconds of pcm-iio -csv from two sockets with two busy stacks each (IB write and
    read on Part0 and Part1; the column names of tests/data/counters/pcm-iio-skx.csv)."""
    header = "Date,Time,Socket,Name,Part,IB write (bytes),IB read (bytes),OB read (bytes)"
    lines = [header + ",OB write (bytes)"]
    for t, socket, stack, part in itertools.product(range(4), (0, 1), (2, 3), (0, 1)):
        name = f"Socket{socket},IIO Stack {stack} - PCIe0,Part{part}"
        lines.append(f"2026-11-21,23:08:1{t}.000,{name},{750_000_000 + t},600000000,0,600000")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_store_lists_an_imports_stacks_and_which_carry_traffic(tmp_path):
    # What `explain --import` picks its stack from (`Store.counter_stacks`): each (socket,
    # stack) once, and with `traffic` those with a non-zero B/s sample. Here socket 1's stack 3
    # moves nothing: its four byte counters are 0 in every sample.
    source = _two_socket_file(tmp_path / "two.csv")
    lines = source.read_text().splitlines()
    idle = [
        ",".join(line.split(",")[:5] + ["0"] * 4) for line in lines if "Socket1,IIO Stack 3" in line
    ]
    busy = [line for line in lines[1:] if "Socket1,IIO Stack 3" not in line]
    source.write_text("\n".join([lines[0], *busy, *idle]) + "\n")
    db = tmp_path / "s.duckdb"
    assert main(["counters", "import", str(source), "--db", str(db), "-q"]) == 0
    stacks = [(0, "IIO Stack 2 - PCIe0"), (0, "IIO Stack 3 - PCIe0"), (1, "IIO Stack 2 - PCIe0")]
    with Store(db) as store:
        file, every = store.counter_stacks(1)
        assert file == str(source.resolve())
        assert sorted(every) == [*stacks, (1, "IIO Stack 3 - PCIe0")]
        assert sorted(store.counter_stacks(1, traffic=True)[1]) == stacks
        with pytest.raises(UsageError, match="no counter import 2 in"):
            store.counter_stacks(2)


def test_explain_of_an_import_reads_only_the_stack_it_explains(tmp_path, capsys, monkeypatch):
    # A file goes through the store as an import does (issue 46): the stack chosen by one
    # rule (the same answer for an exact --stack, the same errors for an ambiguous one and for
    # none with several busy), from the store's summary, then that stack's sums alone read.
    source, db = _two_socket_file(tmp_path / "two.csv"), str(tmp_path / "s.duckdb")
    assert main(["counters", "import", str(source), "--db", db, "-q"]) == 0
    capsys.readouterr()
    read = []
    stack_counters = Store.stack_counters

    def spy(self, import_id, stack, file=None):
        read.append(stack)
        return stack_counters(self, import_id, stack, file)

    monkeypatch.setattr(Store, "stack_counters", spy)
    setup = ["--pps", "10M", "--frame", "64", "--json"]
    for stack in (["--stack", "socket 1: IIO Stack 3"], ["--stack", "Stack 3"], []):
        answers = [
            run_cli(capsys, "explain", *given, *setup, *stack)
            for given in (["--counters", str(source.resolve())], ["--import", "1", "--db", db])
        ]
        assert answers[0] == answers[1]
    code, _, err = answers[0]
    assert code == 2
    assert "two.csv has traffic on 4 stacks" in err
    assert read == [(1, "IIO Stack 3 - PCIe0")] * 2  # the file (imported for the run), the import


def test_repeated_rows_are_skipped_and_said_once(tmp_path, capsys):
    # Issue 46: the pcm-iio sample written twice (46 samples, then the same 46 again) was
    # imported as 92, and explained with every sample counted twice. The repeats (a counter at
    # a time already read, or a time before the latest) are skipped, in one warning line.
    twice = tmp_path / "twice.csv"
    twice.write_text(PCM_FILE.read_text() * 2)
    db = str(tmp_path / "s.duckdb")
    code, out, err = run_cli(capsys, "counters", "import", str(twice), "--db", db, "--json")
    assert code == 0, err
    assert json.loads(out)["samples"] == 46
    assert err == (
        f"pcieperf: warning: {twice}: 46 samples repeat the file's earlier ones (a counter at a "
        "time already read, or a time before the latest: rows written twice, or files joined); "
        "they are skipped\n"
    )
    once = run_cli(capsys, "explain", "--counters", str(PCM_FILE), "--pps", "10M", "--frame", "64")
    again = run_cli(capsys, "explain", "--counters", str(twice), "--pps", "10M", "--frame", "64")
    assert again[1] == once[1].replace(str(PCM_FILE), str(twice))
    # A row repeated within its own sample (Part1: 4 counters) is one too.
    lines = PCM_FILE.read_text().splitlines()
    (tmp_path / "row.csv").write_text("\n".join([*lines[:3], lines[2], *lines[3:]]) + "\n")
    with pytest.warns(PcieperfWarning, match="row.csv: 4 samples repeat"):
        assert len(counters.parse(tmp_path / "row.csv", None)) == 46

"""The public API (`import pcieperf as pp`) is what the CLI runs (issue 16): for every command,
the API function's JSON is the CLI's `--json` output, and its results render as DataFrames."""

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcieperf as pp
from helpers import run_cli
from pcieperf.results import json_default

CAPTURES = Path(__file__).parent / "data" / "trace_stats" / "inputs"  # made by its make.py
COUNTERS = Path(__file__).parent / "data" / "counters"
NEEDS_DASK = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="trace demand runs on Dask: the dask extra (pip install 'pcieperf[dask]')",
)

# (CLI arguments, API function, its keyword arguments): the same question asked both ways.
SAME_QUESTION = [
    (["link"], pp.link, {}),
    (["link", "--gen", "6", "--lanes", "16"], pp.link, {"gen": 6, "lanes": 16}),
    (
        ["link", "--gen", "4", "--addr32", "--ecrc"],
        pp.link,
        {"gen": 4, "addr32": True, "ecrc": True},
    ),
    (["dma"], pp.dma, {}),
    (
        ["dma", "--op", "read", "--sizes", "64,1500", "--mrrs", "256", "--tlps"],
        pp.dma,
        {"op": "read", "sizes": [64, 1500], "mrrs": 256, "tlps": True},
    ),
    (
        [
            "trace",
            "stats",
            str(CAPTURES / "constant_64.pcap.gz"),
            str(CAPTURES / "onoff_imix.pcapng.gz"),
            "--windows",
            "100us,1ms",
            "--eth",
            "10",
        ],
        pp.capture_stats,
        {
            "files": [CAPTURES / "constant_64.pcap.gz", CAPTURES / "onoff_imix.pcapng.gz"],
            "windows": "100us,1ms",
            "eth": 10,
        },
    ),
    pytest.param(
        [
            "trace",
            "demand",
            str(CAPTURES / "onoff_64.pcap.gz"),
            "--gen",
            "4",
            "--lanes",
            "4",
            "--window",
            "100us",
            "--paths",
            "rx",
            "--profile",
            "simple",
        ],
        pp.capture_demand,
        {
            "files": str(CAPTURES / "onoff_64.pcap.gz"),
            "gen": 4,
            "lanes": 4,
            "window": "100us",
            "paths": "rx",
            "profile": "simple",
        },
        marks=NEEDS_DASK,
    ),
    pytest.param(
        [
            "trace",
            "stats",
            str(CAPTURES / "constant_64.pcap.gz"),
            str(CAPTURES / "onoff_64.pcap.gz"),
            "--archive",
            "--skip-bad",
        ],
        pp.capture_stats,
        {
            "files": [CAPTURES / "constant_64.pcap.gz", CAPTURES / "onoff_64.pcap.gz"],
            "archive": True,
            "skip_bad": True,
        },
        marks=NEEDS_DASK,
    ),
    (
        ["dpdk", "runs", "--db", "/nonexistent/pcieperf.duckdb"],
        pp.dpdk_runs,
        {"db": "/nonexistent/pcieperf.duckdb"},
    ),
]


@pytest.mark.parametrize(("argv", "function", "kwargs"), SAME_QUESTION)
def test_the_api_answers_as_the_cli_does(capsys, argv, function, kwargs):
    code, out, _ = run_cli(capsys, *argv, "--json")
    assert code == 0
    assert json.loads(json.dumps(function(**kwargs).to_json())) == json.loads(out)


def test_results_are_dataframes_with_units_in_their_columns():
    # pp.dma: one row per size; a Gen3 64 B write, hand-computed: one TLP of 64 B data + a
    # 4 DW header (64-bit address) + a 4 B STP token carrying the sequence number + a 4 B LCRC
    # (PCIe 3.0 §4.2.2.3.1, §3.6.2) = 88 wire bytes up.
    frame = pp.dma(sizes=[64, 1500]).to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["size"]) == [64, 1500]
    assert frame.loc[0, "tlps_up"] == 1
    assert frame.loc[0, "bytes_up"] == 88
    assert {"effective_gbps", "bytes_up", "bytes_down"} <= set(frame.columns)
    assert "<table" in pp.dma(sizes=[64])._repr_html_()  # Jupyter shows the table


def test_an_object_result_is_one_row():
    # pp.link's JSON is one object: one row, nested values flattened, as `--format csv` has it.
    frame = pp.link(gen=5, lanes=4).to_frame()
    assert len(frame) == 1
    assert frame.loc[0, "gen"] == 5
    # Gen5 x4: 4 lanes x 32 GT/s x 128/130 (128b/130b encoding, PCIe 5.0 §4.2.2.1).
    assert frame.loc[0, "encoded_gbps"] == pytest.approx(4 * 32 * 128 / 130)


def test_bad_keywords_are_usage_errors():
    with pytest.raises(pp.UsageError, match="gen"):
        pp.link(gen=7)
    with pytest.raises(TypeError):
        pp.link(generation=3)  # a misspelt option is Python's own error, naming it


# The commands that write files: the CLI first, then the API to the same output (`force`).
WRITERS = [
    (
        [
            "trace",
            "synth",
            "-o",
            "s.pcapng",
            "--sizes",
            "imix",
            "--pps",
            "2M",
            "--duration",
            "1ms",
            "--arrival",
            "poisson",
            "--seed",
            "5",
        ],
        pp.synth_capture,
        {"output": "s.pcapng", "sizes": "imix", "pps": "2M", "duration": "1ms"}
        | {"arrival": "poisson", "seed": 5},
    ),
    (
        [
            "trace",
            "merge",
            str(CAPTURES / "constant_64.pcap.gz"),
            str(CAPTURES / "onoff_64.pcap.gz"),
            "-o",
            "m.pcap",
            "--skip-bad",
        ],
        pp.merge_captures,
        {
            "files": [str(CAPTURES / "constant_64.pcap.gz"), str(CAPTURES / "onoff_64.pcap.gz")],
            "output": "m.pcap",
            "skip_bad": True,
        },
    ),
    (
        ["trace", "convert", str(CAPTURES / "onoff_imix.pcapng.gz"), "-o", "c.pcap"],
        pp.convert_capture,
        {"file": str(CAPTURES / "onoff_imix.pcapng.gz"), "output": "c.pcap"},
    ),
    (
        [
            "counters",
            "import",
            str(COUNTERS / "perf-stat-iio-skx.csv"),
            "--db",
            "c.duckdb",
            "--counters-format",
            "perf-stat",
            "--interval",
            "2",
            "--lenient",
        ],
        pp.import_counters,
        {"file": str(COUNTERS / "perf-stat-iio-skx.csv"), "db": "b.duckdb"}
        | {"format": "perf-stat", "interval": 2.0, "lenient": True},
    ),
    (["counters", "ls", "--db", "a.duckdb"], pp.counter_imports, {"db": "a.duckdb"}),
]


@pytest.mark.parametrize(("argv", "function", "kwargs"), WRITERS)
def test_the_api_writes_as_the_cli_does(capsys, tmp_path, monkeypatch, argv, function, kwargs):
    monkeypatch.chdir(tmp_path)
    run_cli(capsys, "counters", "import", str(COUNTERS / "pcm-iio-skx.csv"), "--db", "a.duckdb")
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    force = {"force": True} if "output" in kwargs else {}
    answer = function(**kwargs, **force).to_json()
    assert json.loads(json.dumps(answer, default=json_default)) == json.loads(out)


def test_read_capture_is_one_row_per_packet():
    # constant_64.pcap: `trace synth --sizes 64 --pps 1M --duration 5ms` (make.py): 5000 frames
    # of 64 B incl. FCS, so 60 B captured and on the wire without it, 1 us apart from the
    # synthetic start 2026-01-01T00:00:00Z (1 767 225 600 s).
    frame = pp.read_capture(CAPTURES / "constant_64.pcap.gz")
    assert len(frame) == 5000
    assert set(frame["caplen"]) == set(frame["len"]) == {60}
    assert frame["ts_ns"].iloc[0] == 1_767_225_600 * 10**9
    assert frame["ts_ns"].diff().iloc[1:].eq(1000).all()
    assert frame.attrs["interfaces"][0]["linktype"] == 1  # LINKTYPE_ETHERNET


def test_capture_stats_frame():
    # 5000 frames of 64 B (make.py) in the RMON 64-octet bucket; wire bytes 5000 x 60.
    frame = pp.capture_stats(CAPTURES / "constant_64.pcap.gz").to_frame()
    assert frame.loc[0, "packets"] == 5000
    assert frame.loc[0, "size_histogram.64"] == 5000
    assert frame.loc[0, "bytes_wire"] == 300_000


@NEEDS_DASK
def test_capture_demand_frame():
    # onoff_64.pcap: 5 Mpps for 1 ms (make.py) = 5000 packets in 1 ms, so ten 100 us windows.
    frame = pp.capture_demand(CAPTURES / "onoff_64.pcap.gz", window="100us").to_frame()
    assert frame.loc[0, "packets"] == 5000
    assert frame.loc[0, "windows"] == 10


def test_capture_writers_frames(tmp_path):
    # synth: 2 Mpps for 1 ms = 2000 packets (hand-computed); merge: 5000 + 5000 packets of
    # the two inputs (make.py: 1 Mpps x 5 ms and 5 Mpps x 1 ms); convert keeps every packet.
    synth = pp.synth_capture(tmp_path / "s.pcap", pps="2M", duration="1ms").to_frame()
    assert synth.loc[0, "packets"] == 2000
    inputs = [CAPTURES / "constant_64.pcap.gz", CAPTURES / "onoff_64.pcap.gz"]
    merged = pp.merge_captures(inputs, tmp_path / "m.pcapng").to_frame()
    assert merged.loc[0, "packets"] == 10_000
    converted = pp.convert_capture(tmp_path / "m.pcapng", tmp_path / "c.pcap").to_frame()
    assert converted.loc[0, "packets"] == 10_000


def test_read_counters_is_tidy():
    # pcm-iio-skx.csv, its first data row: Socket0, IIO Stack 2 Part0, "IB write (bytes)"
    # 1495000000 (pcm-iio prints bytes per second already scaled).
    frame = pp.read_counters(COUNTERS / "pcm-iio-skx.csv")
    assert list(frame.columns) == [
        "t_s",
        "source",
        "socket",
        "stack",
        "part",
        "metric",
        "value",
        "unit",
    ]
    first = frame[frame["metric"] == "inbound_write"].iloc[0]
    assert (first["t_s"], first["socket"], first["value"], first["unit"]) == (
        0.0,
        0,
        1.495e9,
        "B/s",
    )
    assert set(frame["source"]) == {"pcm-iio"}


def test_the_store_reads_as_frames(tmp_path):
    # The 46 samples of pcm-iio-skx.csv (as `counters import` reports them) come back as rows.
    db = tmp_path / "s.duckdb"
    assert pp.store.open(db).counters().empty  # a missing store reads as empty
    imported = pp.import_counters(COUNTERS / "pcm-iio-skx.csv", db=db).to_frame()
    assert imported.loc[0, "samples"] == 46
    store = pp.store.open(db)
    counters = store.counters()
    assert len(counters) == 46
    assert (
        counters["value"].tolist()
        == pp.read_counters(COUNTERS / "pcm-iio-skx.csv")["value"].tolist()
    )
    assert pp.counter_imports(db=db).to_frame().loc[0, "samples"] == 46
    assert store.runs().empty
    assert store.systems().empty
    assert pp.dpdk_runs(db=db).to_json() == []
    with pytest.raises(pp.UsageError, match="kind"):
        store.pciebench(kind="nope")


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.sampled_from(["64", "imix", "64:7,594:4,1518:1", "1518"]),
    kpps=st.integers(1, 2000),
    arrival=st.sampled_from(["constant", "poisson", "onoff"]),
    seed=st.integers(0, 2**16),
)
def test_the_packet_frame_and_the_statistics_agree(tmp_path, sizes, kpps, arrival, seed):
    # pp.read_capture's rows and pp.capture_stats' counts come from two Rust paths (columns
    # vs streamed sums): for any synthetic capture they count the same packets and bytes.
    path = tmp_path / "s.pcap"
    pp.synth_capture(
        path, sizes=sizes, pps=kpps * 1e3, duration="1ms", arrival=arrival, seed=seed, force=True
    )
    frame = pp.read_capture(path)
    (stats,) = pp.capture_stats(path).to_json()
    assert len(frame) == stats["packets"] == round(kpps * 1e3 * 1e-3)
    assert int(frame["len"].sum()) == stats["bytes_wire"]
    assert int(frame["caplen"].sum()) == stats["bytes_captured"]
    assert int(frame["ts_ns"].max() - frame["ts_ns"].min()) == round(stats["duration_s"] * 1e9)


def test_bad_capture_and_counter_keywords_are_usage_errors(tmp_path):
    # One line naming the bad value and what is allowed, as the CLI prints it (exit 2).
    capture = CAPTURES / "constant_64.pcap.gz"
    with pytest.raises(pp.UsageError, match="'1 parsec'"):
        pp.capture_stats(capture, windows="1 parsec")
    with pytest.raises(pp.UsageError, match="'bursty' is not allowed; choose one of constant"):
        pp.synth_capture(tmp_path / "s.pcap", arrival="bursty")
    with pytest.raises(pp.UsageError, match="'sideways' is not allowed; choose one of rx, tx"):
        pp.capture_demand(capture, paths="sideways")
    with pytest.raises(pp.UsageError, match="'nope' is not allowed"):
        pp.read_counters(COUNTERS / "pcm-iio-skx.csv", format="nope")

"""The public API (`import pcieperf as pp`) is what the CLI runs (issue 16): for every command,
the API function's JSON is the CLI's `--json` output, and its results render as DataFrames."""

import importlib.util
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.results import json_default
from tests.helpers import PCIE_BENCH, TESTS_DATA
from tests.helpers.cli import ALL, run_cli
from tests.helpers.hosts import write_host_toml

CAPTURES = TESTS_DATA / "trace_stats" / "inputs"  # made by its make.py
COUNTERS = TESTS_DATA / "counters"
NEEDS_DASK = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="trace demand runs on Dask: the dask extra (pip install 'pcieperf[dask]')",
)

PCM = str(COUNTERS / "pcm-iio-skx.csv")  # a pcm-iio sample
CAPTURE = str(TESTS_DATA / "dpdk2211" / "one-lcore-640.pcap")  # written by dpdk-dumpcap 22.11
HOST_DIR = PCIE_BENCH / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
needs_shared = pytest.mark.skipif(
    not HOST_DIR.is_dir(), reason=f"the shared pcie-bench data ({PCIE_BENCH}) is absent"
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
    (["devices", "--rxd", "512"], pp.devices, {"rxd": 512}),  # this machine's, read twice
    (
        ["dma", "--op", "read", "--sizes", "64,1500", "--mrrs", "256", "--tlps"],
        pp.dma,
        {"op": "read", "sizes": [64, 1500], "mrrs": 256, "tlps": True},
    ),
    # the IOMMU commands, short runs (20 000 packets) of non-default setups
    (
        ["iommu", "sim", "--page", "2m", "--rxd", "512", "--frame", "imix", "--packets", "20000"],
        pp.iommu.sim,
        {"page": "2m", "rxd": 512, "frame": "imix", "packets": 20000},
    ),
    (
        ["iommu", "gain", "--sizes", "64,256", "--to-rxd", "256", "--packets", "20000"],
        pp.iommu.gain,
        {"sizes": ["64", "256"], "to_rxd": 256, "packets": 20000},
    ),
    (
        ["iommu", "advise", "--rxd", "256", "--platform", "skylake-sp", "--packets", "20000"],
        pp.iommu.advise,
        {"rxd": 256, "platform": "skylake-sp", "packets": 20000},
    ),
    (
        ["iommu", "fit", "--counters", PCM, "--pps", "7M", "--rxd", "512", "--packets", "20000"],
        pp.iommu.fit,
        {"counters": PCM, "pps": "7M", "rxd": 512, "packets": 20000},
    ),
    (["platforms"], pp.platforms, {}),
    (["platforms", "skylake-sp"], pp.platforms, {"name": "skylake-sp"}),
    (["bench", "tests"], pp.bench.tests, {}),
    pytest.param(
        ["validate", "--measured", str(HOST_DIR), "--predicted", str(HOST_DIR), "--worst", "3"],
        pp.bench.validate,
        {"measured": HOST_DIR, "predicted": HOST_DIR, "worst": 3},
        marks=needs_shared,
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
    # --- link-side models (nic, profiles, latency, dpdk-fwd, explain) ---
    (["nic", "--sizes", "64"], pp.nic, {"sizes": [64]}),
    (
        [
            *["nic", "--profile", "simple", "--sizes", "64,imix", "--eth", "100", "--breakdown"],
            *["--pps", "1M", "--gen", "4", "--vlan", "--paths", "rx"],
        ],
        pp.nic,
        {"profile": "simple", "sizes": [64, "imix"], "eth": 100, "breakdown": True}
        | {"pps": 1e6, "gen": 4, "vlan": True, "paths": ["rx"]},
    ),
    (["nic", "--mix", "64:7,1518:1"], pp.nic, {"mix": ["64:7,1518:1"]}),
    (["profiles"], pp.profiles, {}),
    (["capture", "model"], pp.capture_model, {}),
    (
        [
            *["capture", "model", "--design", "contiguous", "--sizes", "64,imix", "--sink"],
            *["tmpfs", "--fwd-lcores", "1", "--pps", "10M", "--buffer-share", "0.2", "--gen", "4"],
        ],
        pp.capture_model,
        {"design": "contiguous", "sizes": "64,imix", "sink": "tmpfs", "fwd_lcores": 1}
        | {"pps": "10M", "buffer_share": 0.2, "gen": 4},
    ),
    (["profiles", "testpmd-fwd"], pp.profile, {"name": "testpmd-fwd"}),
    (["latency"], pp.latency, {}),
    (
        [
            *["latency", "--profile", "dpdk", "--sizes", "64,1500", "--pps", "1M", "--tags", "64"],
            *["--read-ns", "800", "--write-ns", "300", "--set", "poll_ns=100", "--breakdown"],
        ],
        pp.latency,
        {"profile": "dpdk", "sizes": [64, 1500], "pps": "1M", "tags": 64, "read_ns": 800}
        | {"write_ns": 300, "set": {"poll_ns": 100}, "breakdown": True},
    ),
    (["dpdk-fwd"], pp.dpdk_forwarding, {}),
    (
        [
            *["dpdk-fwd", "--pps", "14.88Mpps", "--frame", "64", "--batch-hist", "0:1000,4:5000"],
            *["--rx-desc", "16", "--tx-wb-full-line", "--lanes", "16"],
        ],
        pp.dpdk_forwarding,
        {"pps": "14.88Mpps", "frame": 64, "batch_hist": {0: 1000, 4: 5000}, "rx_desc": 16}
        | {"tx_wb_full_line": True, "lanes": 16},
    ),
    (
        ["dpdk", "fwd", "--mix", "imix", "--eth", "100", "--batch", "8"],
        pp.dpdk_forwarding,
        {"mix": "imix", "eth": 100, "batch": 8},
    ),
    (
        ["nic", "--trace", CAPTURE, "--window", "100us", "--profile", "dpdk", "--gen", "4"],
        pp.nic_trace,
        {"trace": CAPTURE, "window": "100us", "profile": "dpdk", "gen": 4},
    ),
    (
        ["dpdk-fwd", "--trace", CAPTURE, "--poll", "2us", "--rx-desc", "16"],
        pp.dpdk_fwd_trace,
        {"trace": CAPTURE, "poll": "2us", "rx_desc": 16},
    ),
    (
        ["explain", "--counters", PCM, "--pps", "10M", "--frame", "68"],
        pp.explain,
        {"counters": PCM, "pps": 10e6, "frame": 68},
    ),
    (
        [
            *["explain", "--counters", PCM, "--pps", "2M", "--frame", "64", "--page", "4k"],
            *["--rxd", "512", "--batch", "16", "--stack", "PCIe1"],
        ],
        pp.explain,
        {"counters": PCM, "pps": "2M", "frame": 64, "page": "4k", "rxd": 512, "batch": 16}
        | {"stack": "PCIe1"},
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


# --- pp.iommu, pp.platforms, pp.bench, pp.data_* (apiB) -------------------------------------


def test_iommu_sim_is_one_row_at_line_rate_of_its_frames():
    frame = pp.iommu.sim(page="2m", packets=20000).to_frame()
    assert len(frame) == 1
    # 40 GbE carries 64 B frames + 8 B preamble + 12 B gap = 84 B each: 40e9 / (84 x 8) pps
    # (IEEE 802.3 clause 4.4.2), hand-computed.
    assert frame.loc[0, "line_mpps"] == pytest.approx(40e3 / (84 * 8))
    # 2 MiB pages: 8192 mbufs of 2 368 B (64 B header + 128 B mbuf + 128 B headroom + 2 KiB,
    # DPDK's defaults) are 10 pages with the rings, far under e5-v4's 96 IOTLB entries.
    assert frame.loc[0, "iotlb_misses_per_pkt"] == 0.0


def test_iommu_gain_has_a_row_per_size_and_units_in_its_headers():
    result = pp.iommu.gain(page="2m", sizes=["64", "256"], packets=20000)
    frame = result.to_frame()
    assert list(frame["size"]) == ["64", "256"]
    # 2 MiB pages hold the whole pool in the IOTLB at either ring size (see above): no misses.
    assert list(frame["misses_per_pkt_from"]) == [0.0, 0.0]
    header = result.to_text().splitlines()[0]
    assert "from (Mpps)" in header
    assert "gain (%)" in header
    assert "mpps_from" not in header


def test_iommu_advise_sweeps_the_single_changes():
    frame = pp.iommu.advise(page="2m", packets=20000).to_frame()
    knobs = list(frame["options_knob"])  # `knob` is the recommendation's
    # From rxd/txd 1024 with 2 MiB pages, hand-counted: rings 512, 256, 128, 64 (halving to
    # RING_MIN, ixgbe's 64); pool 4096 only (the rings and caches need 2 464 mbufs: 1024 + 1024
    # + a burst of 32 + a 256-mbuf cache's peak of 384); pages 1g only; no pacing (no delay
    # helps where nothing is lost).
    assert knobs.count("rings") == 4
    assert knobs.count("pool") == 1
    assert knobs.count("page") == 1


def test_iommu_fit_reads_its_counters():
    frame = pp.iommu.fit(counters=PCM, pps=7e6, packets=20000).to_frame()
    # The file's IIO stack counts 190 IOTLB misses/s (tests/data/counters/pcm-iio-skx.csv):
    # per forwarded packet at 7 Mpps that is 190 / 7e6, hand-computed.
    assert frame.loc[0, "misses_per_s"] == 190.0
    assert frame.loc[0, "misses_per_pkt"] == pytest.approx(190 / 7e6)


def test_platforms_show_their_evidence():
    frame = pp.platforms().to_frame()
    assert "e5-v4" in set(frame["name"])
    one = pp.platforms("e5-v4").to_frame()
    # e5-v4's IOTLB is the shipped pcie-bench calibration's reference host: 96 entries
    # (src/pcieperf/pciebench/calibrations/nfp6000.toml [reference_host] iotlb_entries).
    assert one.loc[0, "params_iommu_iotlb_entries_value"] == 96


def test_bench_tests_lists_the_suite():
    tests = pp.bench.tests().to_frame()
    # pcie-bench's tests (Neugebauer et al., SIGCOMM 2018, §4): BW_DMA_RD is a bandwidth one
    assert tests.loc[tests["name"] == "BW_DMA_RD", "kind"].item() == "bw"


def test_bench_sim_rows_are_size_times_rate(capsys, tmp_path):
    host = tmp_path / "host.toml"
    write_host_toml(host)
    result = pp.bench.sim(
        host=host, device="nfp6000", sizes=[64, 256], windows=[8192], transactions=2000
    )
    argv = ["bench", "sim", "--host", str(host), "--device", "nfp6000", "--sizes", "64,256"]
    code, out, _ = run_cli(capsys, *argv, "--transactions", "2000", "--json")
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(result.to_json()))  # the CLI asks the API
    frame = result.to_frame()
    assert list(frame["size"]) == [64, 256]
    # bandwidth is transactions per second x bytes x 8 (pcie-bench's definition, paper §4).
    assert list(frame["bw_gbps"]) == pytest.approx(
        list(frame["trans_per_s"] * frame["size"] * 8e-9)
    )


@pytest.mark.parametrize(
    ("keyword", "words"), [("pattern", "access pattern 'Zig'"), ("cache", "cache state 'Lukewarm'")]
)
def test_bench_sim_refuses_what_pcie_bench_has_no_name_for(tmp_path, keyword, words):
    # pcie-bench's PAT is Seq or Rand and Cache one of its states (bench.PATTERNS, CACHE_STATES):
    # anything else was simulated as sequential before (the CLI's choices alone refused it).
    host = tmp_path / "host.toml"
    write_host_toml(host)
    value = words.split("'")[1]
    with pytest.raises(pp.UsageError, match=f"{words} is not allowed"):
        pp.bench.sim(host=host, device="nfp6000", **{keyword: value})


def same_answer(capsys, argv, result):
    """The CLI's --json for `argv` equals the API `result`'s JSON."""
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(result.to_json()))


@needs_shared
def test_bench_load_matches_the_store(capsys, tmp_path):
    db = tmp_path / "s.duckdb"
    imported = pp.data_import([HOST_DIR], db=db).to_frame()
    same_answer(
        capsys,
        ["data", "import", str(HOST_DIR), "--db", str(db), "--force"],
        pp.data_import([HOST_DIR], db=db, force=True),
    )
    same_answer(capsys, ["data", "ls", "--db", str(db)], pp.data_ls(db=db))
    argv = ["data", "show", "dell-t630", "--test", "LAT_RD", "--file", "lat_dma_sizes.csv"]
    api = pp.data_show("dell-t630", test="LAT_RD", file="lat_dma_sizes.csv", db=db)
    same_answer(capsys, [*argv, "--db", str(db)], api)
    assert imported.loc[0, "system"] == HOST_DIR.name
    loaded = pp.bench.load(HOST_DIR)
    assert loaded.name == HOST_DIR.name
    shown = pp.data_show("dell-t630", test="BW_RD", db=db).to_frame()
    # the store holds what the files hold: 668 BW_DMA_RD rows (counted in the shared data)
    assert len(shown) == (loaded.bw["test"] == "BW_DMA_RD").sum() == 668
    systems = pp.data_ls(db=db).to_frame()
    assert list(systems["system"]) == [HOST_DIR.name]
    assert systems.loc[0, "bw_rows"] == len(loaded.bw)
    plot = tmp_path / "window.png"
    argv = ["data", "plot", "--view", "window", "--size", "128", "-o", str(plot), "--db", str(db)]
    api = pp.data_plot(view="window", size=128, output=plot, force=True, db=db)
    same_answer(capsys, [*argv, "--force"], api)
    assert plot.read_bytes().startswith(b"\x89PNG")  # a PNG file (its 8-byte signature)


@needs_shared
def test_validate_a_host_against_itself_is_exact():
    frame = pp.bench.validate(measured=HOST_DIR, predicted=HOST_DIR).to_frame()
    # every point predicted as measured: 0 % error (hand-computed)
    assert frame.loc[0, "mape_pct"] == 0.0


@needs_shared
@pytest.mark.parametrize(("old", "new"), [("--calibrate", "--host"), ("--profile", None)])
def test_bench_predict_old_spellings_still_work(capsys, tmp_path, old, new):
    # Issue 16 item 3: --calibrate DIR is --host DIR, --profile FILE is --calibration FILE; the
    # old spellings answer the same with one deprecation line.
    from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION

    value = str(HOST_DIR) if new else str(DEFAULT_CALIBRATION)
    host = [] if new else ["--host", str(HOST_DIR)]
    argv = ["bench", "predict", *host, old, value, "--transactions", "2000", "--json"]
    code, out, err = run_cli(capsys, *argv, "--out", str(tmp_path / "old"))
    assert code == 0
    assert err.count(f"pcieperf: warning: {old} is now") == 1
    api = pp.bench.predict(host=HOST_DIR, out=tmp_path / "new", transactions=2000).to_json()
    assert json.loads(out)["host"] == api["host"]
    assert json.loads(out)["provenance"] == api["provenance"]


@needs_shared
def test_bench_calibrate_answers_as_the_cli(capsys, tmp_path):
    out = tmp_path / "cal.toml"
    argv = ["bench", "calibrate", str(HOST_DIR), "-o", str(out), "--name", "d", "--force"]
    code, cli_out, _ = run_cli(capsys, *argv, "--json")
    assert code == 0
    result = pp.bench.calibrate([HOST_DIR], output=out, name="d", force=True)
    assert json.loads(cli_out) == json.loads(json.dumps(result.to_json()))
    frame = result.to_frame()
    # one steady host fitted, none left out; its points are the size, window and offset sweeps
    # from 64 B (1367, counted in the shared data's bw files)
    assert frame.loc[0, "points"] == 1367
    assert frame.loc[0, "device_name"] == "d"


def test_iommu_pkt_is_the_frame_with_a_deprecation_line(capsys):
    argv = ["iommu", "sim", "--pkt", "128", "--packets", "20000", "--json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0
    assert err.startswith("pcieperf: warning: --pkt is --frame in the iommu commands")
    assert json.loads(out)["mix"] == pp.iommu.sim(frame=128, packets=20000).to_json()["mix"]


def test_one_port_setup_with_one_set_of_defaults():
    # Issue 16's acceptance: the DPDK port is one type (dpdk.port.PortSetup); the forwarding
    # estimate's and explain's port fields take its defaults, and so do the CLI's options.
    from pcieperf.cli import build_parser
    from pcieperf.dpdk import forwarding
    from pcieperf.dpdk.port import PortSetup
    from pcieperf.measure import explain

    port = PortSetup()
    assert explain.IommuSetup is PortSetup
    assert forwarding.ForwardingConfig().port() == port
    assert forwarding.ForwardingConfig.from_port(port) == forwarding.ForwardingConfig()
    parser = build_parser()
    for argv in (["iommu", "sim"], ["dpdk-fwd"]):
        args = parser.parse_args(argv)
        assert (args.rx_desc, args.tx_desc, args.rs_thresh) == (
            port.rx_desc_bytes,
            port.tx_desc_bytes,
            port.rs_thresh,
        )


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
    assert frame.loc[0, "size_histogram_64"] == 5000
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


def test_nic_rows_are_frames_with_their_line_rate():
    # 64 B frames on 40 GbE: each takes 64 + 20 B on the wire (preamble + SFD 8 B, IFG 12 B;
    # IEEE 802.3-2022 §3.1.1, §4.4.2), so 40e9 / (84 * 8) = 59.52 Mpps (hand-computed).
    frame = pp.nic(sizes=[64, "imix"], eth=40).to_frame()
    assert list(frame["size"]) == ["64", "imix"]  # a size or a mix's name: text (docs/units.md)
    assert frame.loc[0, "line_rate_pps"] == pytest.approx(40e9 / (84 * 8))
    # imix: 7 x 64 + 4 x 594 + 1 x 1518 B over 12 frames (the simple IMIX) = 361.83 B.
    assert frame.loc[1, "mean_frame_bytes"] == pytest.approx((7 * 64 + 4 * 594 + 1518) / 12)


def test_nic_is_callable_after_its_package_is_imported():
    # `pcieperf.nic` is both the package and pp.nic: importing the package must not hide the
    # function (importing a subpackage sets the attribute on its parent).
    import pcieperf.nic.nic  # noqa: F401

    assert pp.nic(sizes="64").to_json()[0]["size"] == 64


def test_profiles_list_the_built_in_ones():
    # The six built-in profiles the README names.
    names = set(pp.profiles().to_frame()["name"])
    assert names == {"simple", "kernel", "dpdk", "testpmd-fwd", "mlx5-dpdk", "bypass"}


def test_a_profile_is_one_row_per_operation():
    # testpmd-fwd's Rx path: the NIC fetches Rx descriptors, writes the packet and writes back
    # its descriptor (DPDK ixgbe Rx path; the profile's TOML lists them in this order).
    frame = pp.profile("testpmd-fwd").to_frame()
    rx = frame[frame["path"] == "rx"]
    assert list(rx["initiator"])[:3] == ["dma_read", "dma_write", "dma_write"]
    assert (frame["name"] == "testpmd-fwd").all()


def test_latency_serialises_the_frame_at_the_line_rate():
    # A 1500 B frame plus its 8 B preamble and SFD at 40 Gb/s: 1508 * 8 / 40 = 301.6 ns
    # (hand-computed, IEEE 802.3-2022 §3.1.1).
    row = pp.latency(sizes=[1500], eth=40, breakdown=True).to_json()[0]
    wire = [t["ns"] for t in row["terms"] if t["kind"] == "wire"]
    assert wire == [pytest.approx(301.6)]


def test_forwarding_counts_frames_and_dma_bytes():
    # --frame 68 is 64 B DMA'd (the 4 B FCS is stripped, IEEE 802.3-2022 §3.2.9); the packet's
    # write is one TLP: 64 B data + 16 B header (4 DW, 64-bit address) + 4 B STP + 4 B LCRC =
    # 88 wire bytes up (PCIe 3.0 §2.2, §4.2.2.3.1; hand-computed).
    frame = pp.dpdk_forwarding(frame=68).to_frame()
    assert len(frame) == 1  # one estimate; each term's numbers are columns named after it
    assert (frame.loc[0, "pkt"], frame.loc[0, "frame_bytes"]) == (64, 68)
    assert frame.loc[0, "terms_nic_writes_the_packet_data_bytes_per_pkt"] == 64
    assert frame.loc[0, "terms_nic_writes_the_packet_wire_up_bytes_per_pkt"] == 88
    assert pp.dpdk_forwarding(pkt=64).to_json() == pp.dpdk_forwarding(frame=68).to_json()
    with pytest.raises(pp.UsageError, match="give one"):
        pp.dpdk_forwarding(frame=68, pkt=64)


def test_explain_predicts_the_packet_write_per_packet():
    # inbound writes at 64 B DMA'd: the packet (64 B) + its 32 B Rx descriptor write-back +
    # the Tx write-back of a 16 B descriptor every rs_thresh = 32 packets (0.5 B): 96.5 B/pkt
    # (hand-computed from the testpmd-fwd profile's defaults).
    frame = pp.explain(counters=PCM, pps="10M", frame=68).to_frame()
    write = frame[frame["metric"] == "inbound_write"].iloc[0]
    assert write["predicted_per_pkt"] == pytest.approx(96.5)
    assert frame.loc[0, "frame_bytes"] == 68


def test_pkt_is_deprecated_with_one_line_saying_its_frame(capsys):
    # --pkt 64 counts bytes DMA'd: a 64 + 4 B FCS = 68 B frame; the answer is --frame 68's.
    code, out, err = run_cli(capsys, "dpdk-fwd", "--pkt", "64", "--json")
    assert code == 0
    assert err == "pcieperf: warning: --pkt 64 is a 68-byte frame; use --frame 68\n"
    assert json.loads(out) == pp.dpdk_forwarding(frame=68).to_json()
    code, _, err = run_cli(capsys, "dpdk-fwd", "--pkt", "64", "--frame", "68")
    assert code == 2
    assert "argument --frame: not allowed with argument --pkt" in err


@given(frame=st.integers(min_value=64, max_value=9216), batch=st.floats(1, 64))
def test_a_frame_is_its_dma_bytes_plus_the_fcs(frame, batch):
    # Any frame from the 64 B minimum to a 9216 B jumbo (IEEE 802.3-2022 §4.4.2; the usual
    # switch maximum) is priced as its bytes DMA'd, the frame less its 4 B FCS (§3.2.9); at
    # 100 kpps, which Gen3 x8 carries at every size (9216 B: 7.4 Gb/s of 62.2).
    by_frame = pp.dpdk_forwarding(pps=1e5, frame=frame, batch=batch).to_json()
    assert by_frame == pp.dpdk_forwarding(pps=1e5, pkt=frame - 4, batch=batch).to_json()
    assert by_frame["frame_bytes"] == frame == by_frame["pkt"] + 4


# Commands whose CLI-vs-API comparison lives in another test (the reason beside each).
ASKED_ELSEWHERE = {
    ("bench", "calibrate"): "test_bench_calibrate_answers_as_the_cli (writes a calibration)",
    ("capture", "calibrate"): "tests/capture/test_calibration.py (writes a calibration)",
    ("capture", "probe"): "tests/capture/test_probe.py (times this machine, keeps the probe)",
    ("bench", "predict"): "test_bench_predict_old_spellings_still_work (writes pcie-bench files)",
    ("bench", "sim"): "test_bench_sim_rows_are_size_times_rate (needs a host file)",
    ("bench", "host"): "tests/pciebench/test_predict.py (needs the shared pcie-bench data)",
    ("counters", "show"): "tests/measure/test_counters.py (a store of its own)",
    ("counters", "rm"): "tests/measure/test_counters.py (a store of its own)",
    ("dpdk", "run"): "tests/dpdk/test_testpmd.py (runs the fake dpdk-testpmd)",
    ("capture", "run"): "tests/capture/test_capture_run.py (real testpmd and dumpcap, as root)",
    ("capture", "runs"): "tests/capture/test_capture_run.py (after a real run)",
    ("capture", "show"): "tests/capture/test_capture_run.py (after a real run)",
    ("report",): "tests/report/test_report.py (reuses one written report)",
    ("data", "import"): "test_bench_load_matches_the_store (needs the shared pcie-bench data)",
    ("data", "ls"): "test_bench_load_matches_the_store",
    ("data", "show"): "test_bench_load_matches_the_store",
    ("data", "plot"): "test_bench_load_matches_the_store",
    ("sweep",): "tests/test_sweep_api.py (pp.sweep of a mapping spec against the CLI's file)",
}


def test_every_command_is_asked_both_ways():
    # Issue 16's acceptance: every CLI command has a test that calls the API function behind
    # it and compares with the CLI's --json output (one code path).
    leaves = {words for words, parser in ALL if parser._subparsers is None}
    cases = [getattr(case, "values", case) for case in (*SAME_QUESTION, *WRITERS)]
    asked = {tuple(argv[:2]) for argv, *_ in cases} | {tuple(argv[:1]) for argv, *_ in cases}
    covered = leaves & asked
    assert sorted(leaves - covered - set(ASKED_ELSEWHERE)) == []


@pytest.mark.parametrize("frame", [0, 4, 63, 9217, 65540])
def test_a_bad_frame_is_named_as_given(frame):
    # The one frame rule of every command (issue 44): 64 B, 802.3's smallest frame incl. its
    # FCS (§4.4.2), to 9216 B, the usual jumbo maximum; the error names the frame given.
    with pytest.raises(pp.UsageError, match=f"frame size {frame} is not allowed; use 64 to 9216"):
        pp.dpdk_forwarding(pps=1e6, frame=frame)

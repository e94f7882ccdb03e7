"""The CLI contracts: JSON keys of every subcommand, one-line errors with exit code 2."""

import json
import subprocess
import sys

import pytest

from tests.helpers import TESTS_DATA
from tests.helpers.cli import run_cli as run

CAPTURE = TESTS_DATA / "dpdk2211" / "one-lcore-640.pcapng"
SWEEP_SPEC = TESTS_DATA / "sweep-dma.toml"
PCM_SKX = str(TESTS_DATA / "counters" / "pcm-iio-skx.csv")  # a pcm-iio sample


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_link_json_keys(capsys):
    out = run_json(capsys, "link", "--gen", "3", "--lanes", "8", "--mps", "256")
    assert out["raw_gbps"] == 64.0
    assert out["encoded_gbps"] == pytest.approx(63.015, abs=1e-3)
    assert out["tlp_gbps"] == pytest.approx(62.22, abs=0.01)


def test_dma_json_rows(capsys):
    rows = run_json(
        capsys, "dma", "--gen", "3", "--lanes", "8", "--op", "read", "--sizes", "64,128,1500"
    )
    assert [r["size"] for r in rows] == [64, 128, 1500]
    assert {"size", "effective_gbps", "tlps_up", "tlps_down", "bytes_up", "bytes_down"} <= set(
        rows[0]
    )
    assert rows[2]["tlps_up"] == 3
    assert rows[2]["tlps_down"] == 24
    assert rows[2]["bytes_down"] == 1500 + 24 * 20


def test_dma_lists_tlps(capsys):
    rows = run_json(capsys, "dma", "--op", "write", "--sizes", "300", "--offset", "200", "--tlps")
    assert [t["data_bytes"] for t in rows[0]["tlps"]] == [56, 244]


def test_nic_json_rows(capsys):
    rows = run_json(
        capsys,
        "nic",
        "--profile",
        "dpdk",
        "--gen",
        "3",
        "--lanes",
        "8",
        "--eth",
        "40",
        "--sizes",
        "64,256,1518,imix",
    )
    assert [r["size"] for r in rows] == [64, 256, 1518, "imix"]
    for key in (
        "max_pps",
        "achievable_gbps",
        "line_rate_gbps",
        "bottleneck",
        "pcie_up_gbps",
        "pcie_down_gbps",
    ):
        assert key in rows[0]
    # 64 B: the 82599's 32 read tags on the assumed host (560 ns reads) bind below the link
    # (48.2 Mpps, as `latency --profile dpdk` finds), and are named (issue 27).
    assert rows[0]["bottleneck"] == "read_requests"
    assert rows[0]["limited_by"] == ["read_requests"]
    assert rows[2]["bottleneck"] == "ethernet"
    assert rows[2]["line_rate_gbps"] == pytest.approx(40 * 1518 / 1538)


def test_nic_breakdown_sums_to_total(capsys):
    rows = run_json(capsys, "nic", "--profile", "simple", "--sizes", "64", "--breakdown")
    assert sum(o["up_bytes_per_pkt"] for o in rows[0]["operations"]) == pytest.approx(
        rows[0]["up_bytes_per_pkt"]
    )


def test_dpdk_fwd_json(capsys):
    out = run_json(
        capsys,
        "dpdk-fwd",
        "--pps",
        "10e6",
        "--pkt",
        "64",
        "--rx-desc",
        "32",
        "--tx-desc",
        "16",
        "--rs-thresh",
        "32",
        "--rx-free-thresh",
        "32",
        "--batch",
        "32",
    )
    assert out["inbound_read_gbps"] == pytest.approx(8.96)
    assert out["inbound_write_gbps"] == pytest.approx(7.72)
    assert out["outbound_write_gbps"] == pytest.approx(0.02)
    assert out["outbound_read_gbps"] == 0
    assert {t["metric"] for t in out["terms"]} == {
        "inbound_read",
        "inbound_write",
        "outbound_write",
    }


@pytest.mark.parametrize("rate", ["10e6", "10M", "10Mpps", "10000k"])
def test_rate_spellings(capsys, rate):
    out = run_json(capsys, "dpdk-fwd", "--pps", rate)
    assert out["pps"] == pytest.approx(10e6)


def test_batch_histogram(capsys):
    out = run_json(capsys, "dpdk-fwd", "--batch-hist", "0:1000,4:5000,8:200")
    assert out["mean_batch"] == pytest.approx(21600 / 5200)


def test_profiles_listing(capsys):
    names = {p["name"] for p in run_json(capsys, "profiles")}
    assert {"simple", "kernel", "dpdk", "testpmd-fwd"} <= names


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["link", "--gen", "9"], "generation 9"),
        (["link", "--lanes", "3"], "lane width 3"),
        (["link", "--mps", "100"], "MPS 100"),
        (["dma", "--sizes", "-1"], "size -1"),
        (["dma", "--sizes", "64,x"], "'x'"),
        (["nic", "--profile", "nope", "--sizes", "64"], "unknown profile 'nope'"),
        (["nic", "--sizes", "63"], "frame size 63"),
        (["dpdk-fwd", "--batch-hist", "4:5000,8"], "'8'"),
        (["dpdk-fwd", "--pps", "fast"], "'fast'"),
        (["dpdk-fwd", "--rx-desc", "24"], "Rx descriptor size 24"),
        (["link", "--gen", "three"], "'three' is not a whole number"),
        (["iommu", "sim", "--rxd", "1000"], "rxd 1000 is not allowed; use a power of two"),
        (["iommu", "sim", "--rxd", "8192"], "from 64 to 4096"),
        (["iommu", "sim", "--page", "3k"], "page size '3k' is not allowed"),
        (["iommu", "sim", "--pool", "1000"], "pool 1000 is smaller than the rings"),
        (["iommu", "gain", "--to-rxd", "100"], "rxd 100 is not allowed"),
        (["iommu", "sim", "--iotlb", "0"], "IOTLB entries 0 is not allowed"),
        (["iommu", "sim", "--frame", "32"], "frame size 32"),
        (["iommu", "sim", "--platform", "nehalem"], "platform 'nehalem' is not allowed"),
        (["iommu", "sim", "--poll-delay", "-1"], "poll delay -1.0 us is not allowed"),
        (["iommu", "sim", "--iova", "io"], "invalid choice: 'io'"),
        (["iommu", "fit", "--counters", "none.csv", "--pps", "1M"], "cannot read none.csv"),
        (["iommu", "fit", "--counters", PCM_SKX, "--pps", "0"], "packet rate '0' is not allowed"),
        (["frobnicate"], "invalid choice"),
        # issue 28: values that once ended in an internal error or silently wrong output
        (["dma", "--sizes", "64,0"], "transfer size 0 is not allowed; give whole numbers >= 1"),
        (["trace", "synth", "--seed=-1", "-o", "x.pcap"], "-1 is not allowed; use 0 to"),
        (["trace", "synth", "--flows", "10" * 9, "-o", "x.pcap"], "use 1 to 4294967295"),
        (["validate", "--worst=-1", "--measured", "m", "--predicted", "p"], "use 0 to"),
        (["iommu", "sim", "--platform", "missing.toml"], "cannot read missing.toml"),
        (["trace", "stats", str(CAPTURE), "--windows="], "rate windows '' are not allowed"),
        (["dma", "--sizes", "1000000000", "--tlps"], "--tlps would list 3,906,250 TLPs"),
        (["data", "plot", "--size", "0", "-o", "p.png"], "0 is not allowed; use 1 to"),
        (["sweep", str(SWEEP_SPEC), "-o", "x.csv"], "must end in .parquet"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_profile_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "x"\nsource = "y"\nspeed = 1\n[[rx]]\nwhat="a"\ninitiator="dma_read"\n'
        "size=1\nevery=1\n"
    )
    code, _, err = run(capsys, "nic", "--profile", str(path), "--sizes", "64")
    assert code == 2
    assert "unknown key 'speed'" in err
    assert err.count("\n") == 1


def test_report_writes_files_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "rep"
    code, _, err = run(capsys, "report", "-o", str(out), "--json")
    assert code == 0, err
    names = {p.name for p in out.iterdir()}
    for slug in ("fig1_nic_models", "dma_effective", "dpdk_forwarding", "iommu_rings"):
        assert {f"{slug}.png", f"{slug}.svg", f"{slug}.csv"} <= names
    html = (out / "index.html").read_text()
    assert "<img src='data:image/png;base64," in html  # self-contained: figures embedded
    assert "Simple NIC: line rate from 590 B frames" in html  # Figure 1's facts (Gen3 x8, 40G)
    code, _, err = run(capsys, "report", "-o", str(out))
    assert code == 2
    assert "--force" in err  # and with it, it replaces: tests/report/test_report.py


def test_console_script_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "link", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout)["tlp_gbps"] > 0


def test_nic_bandwidth_needed_at_a_rate(capsys):
    rows = run_json(capsys, "nic", "--profile", "simple", "--sizes", "64", "--pps", "10M")
    assert rows[0]["needed_up_gbps"] == pytest.approx(10e6 * rows[0]["up_bytes_per_pkt"] * 8 / 1e9)
    assert rows[0]["fits_pcie"] is True
    assert rows[0]["fits_line"] is True


def test_iommu_sim_json_keys(capsys):
    # The keys issue 4 names, plus the ones added beside them.
    out = run_json(
        capsys,
        "iommu",
        "sim",
        "--page",
        "4k",
        "--rxd",
        "1024",
        "--txd",
        "1024",
        "--pkt",
        "64",
        "--packets",
        "50000",
    )
    for key in (
        "iotlb_misses_per_pkt",
        "working_set_pages",
        "mpps_no_iommu",
        "mpps_iommu",
        "throughput_ratio",
    ):
        assert key in out
    assert out["throughput_ratio"] == pytest.approx(out["mpps_iommu"] / out["mpps_no_iommu"])
    assert out["iotlb_entries"] == 96
    # Added with the platform profiles: the platform, IOVA mode, load state, per-forwarded
    # misses (e5-v4 at 64 B fills its Tx ring: docs/iommu.md). The Rx write and the Tx read
    # both miss; testpmd-fwd's 256 read requests exceed the 64 posted credits: no drops.
    assert (out["platform"], out["iova"], out["state"]) == ("e5-v4", "va", "tx-full")
    assert out["iotlb_misses_per_fwd_pkt"] == pytest.approx(2.0, abs=0.05)
    assert out["drops_per_fwd_pkt"] == 0.0
    # Added with the NIC-profile device.
    assert (out["profile"], out["limited_by"]) == ("testpmd-fwd", ["iommu_walks"])


def test_iommu_advise_offers_the_best_poll_delay_on_skylake_sp(tmp_path, capsys):
    # The talk's platform: the poll delay at which the lcore takes what a full Rx ring
    # forwards is 1.1 us (32 / (1.1 us + 60 ns + 32 * 18 ns) = 18.4 Mpps, just below the 18.6 a
    # full ring forwards; tests/iommu/test_iommu.py has the arithmetic). It gains only where the
    # lcores drop at a full Tx ring: with the XL710's read requests at the low end of their
    # assumed range (32 < 64 posted credits), not with testpmd-fwd's 256.
    from importlib import resources

    text = (resources.files("pcieperf.nic") / "profiles" / "testpmd-fwd.toml").read_text()
    low = tmp_path / "xl710-32.toml"
    low.write_text(text.replace("read_requests = 256", "read_requests = 32", 1))
    argv = ["iommu", "advise", "--platform", "skylake-sp", "--packets", "50000"]
    for profile, gains in (("testpmd-fwd", False), (str(low), True)):
        out = run_json(capsys, *argv, "--profile", profile)
        paced = [o for o in out["options"] if o["knob"] == "pacing"]
        assert paced[0]["change"] == "Rx poll delay 1.1 us"
        assert (paced[0]["mpps_iommu"] > 1.3 * out["current"]["mpps_iommu"]) is gains


def test_iommu_gain_json_rows(capsys):
    rows = run_json(
        capsys,
        "iommu",
        "gain",
        "--page",
        "4k",
        "--from-rxd",
        "1024",
        "--to-rxd",
        "128",
        "--sizes",
        "64,imix",
        "--packets",
        "50000",
    )
    assert [r["size"] for r in rows] == ["64", "imix"]
    for r in rows:
        assert r["gain_pct"] == pytest.approx(100 * (r["mpps_to"] / r["mpps_from"] - 1))


def test_iommu_advise_recommends_and_plots(tmp_path, capsys):
    plot = tmp_path / "advice.png"
    out = run_json(capsys, "iommu", "advise", "--packets", "50000", "--plot", str(plot))
    assert out["recommendation"] != "no change"
    # The change restores the rate without an IOMMU (target_mpps: the link binds 64 B at 42.4
    # Mpps on the default NIC), which is not 40 GbE's line rate of 59.5 Mpps.
    assert out["restores_target"] is True
    assert out["result"]["mpps_iommu"] >= 0.99 * out["target_mpps"]
    assert out["restores_line_rate"] is False
    assert out["result"]["line_mpps"] == pytest.approx(40e9 / (8 * 84) / 1e6)
    assert out["reason"].endswith(".")
    assert "\n" not in out["reason"]
    assert {o["knob"] for o in out["options"]} == {"rings", "pool", "page", "pacing"}
    assert plot.stat().st_size > 1000
    code, _, err = run(capsys, "iommu", "advise", "--packets", "50000", "--plot", str(plot))
    assert code == 2
    assert "--force" in err


def test_the_command_exits_without_teardown_yet_loses_nothing():
    # `pcieperf` (cli.run) ends with os._exit after main: a large --json through a pipe still
    # arrives whole, exit codes are main's, and exit handlers (logging, Dask, tempfile) still run.
    sizes = ",".join(str(s) for s in range(64, 1519))
    big = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "nic", "--sizes", sizes, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert big.returncode == 0, big.stderr
    assert len(json.loads(big.stdout)) == 1518 - 64 + 1
    bad = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "nic", "--bogus"], capture_output=True, check=False
    )
    assert bad.returncode == 2
    handler = (
        "import atexit, sys; atexit.register(lambda: print('handled', file=sys.stderr)); "
        "sys.argv = ['pcieperf', 'link']; from pcieperf.cli import run; run()"
    )
    done = subprocess.run(
        [sys.executable, "-c", handler], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, "handled\n")

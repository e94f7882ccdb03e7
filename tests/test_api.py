"""The public API (`import pcieperf as pp`) is what the CLI runs (issue 16): for every command,
the API function's JSON is the CLI's `--json` output, and its results render as DataFrames."""

import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcieperf as pp
from helpers import run_cli

PCM = str(Path(__file__).parent / "data" / "counters" / "pcm-iio-skx.csv")  # a pcm-iio sample

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


def test_nic_rows_are_frames_with_their_line_rate():
    # 64 B frames on 40 GbE: each takes 64 + 20 B on the wire (preamble + SFD 8 B, IFG 12 B;
    # IEEE 802.3-2022 §3.1.1, §4.4.2), so 40e9 / (84 * 8) = 59.52 Mpps (hand-computed).
    frame = pp.nic(sizes=[64, "imix"], eth=40).to_frame()
    assert list(frame["size"]) == [64, "imix"]
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
    rx = frame[frame["operations.path"] == "rx"]
    assert list(rx["operations.initiator"])[:3] == ["dma_read", "dma_write", "dma_write"]
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
    assert (frame["pkt"] == 64).all()
    assert (frame["frame_bytes"] == 68).all()
    write = frame[frame["terms.term"] == "NIC writes the packet"].iloc[0]
    assert write["terms.data_bytes_per_pkt"] == 64
    assert write["terms.wire_up_bytes_per_pkt"] == 88
    assert pp.dpdk_forwarding(pkt=64).to_json() == pp.dpdk_forwarding(frame=68).to_json()
    with pytest.raises(pp.UsageError, match="give one"):
        pp.dpdk_forwarding(frame=68, pkt=64)


def test_explain_predicts_the_packet_write_per_packet():
    # inbound writes at 64 B DMA'd: the packet (64 B) + its 32 B Rx descriptor write-back +
    # the Tx write-back of a 16 B descriptor every rs_thresh = 32 packets (0.5 B): 96.5 B/pkt
    # (hand-computed from the testpmd-fwd profile's defaults).
    frame = pp.explain(counters=PCM, pps="10M", frame=68).to_frame()
    write = frame[frame["metrics.metric"] == "inbound_write"].iloc[0]
    assert write["metrics.predicted_per_pkt"] == pytest.approx(96.5)
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

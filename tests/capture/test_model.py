"""The capture path's model (issue 26 part 2): the fixed point by hand at the issue's first
measurements, its invariants for any costs (hypothesis), and the model end to end on a
calibration fitted to synthetic runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.capture.calibrate import capture_calibrate
from pcieperf.capture.costs import record_bytes
from pcieperf.capture.flow import limited_by, solve
from pcieperf.capture.setup import CaptureSetup
from pcieperf.errors import UsageError
from tests.capture.model_synthetic import synthetic_runs, wakeup_loss
from tests.helpers.cli import refused, run_cli

# The first measurements (a loaded 2-core VM, DPDK 22.11): forwarding 7.5 ns per packet,
# 28.5 + 0.019 x len ns per copy + 73 ns per copy delivered, dumpcap 107 + 0.028 x (len + 48)
# ns per record to /dev/null, 118 + 0.67 x (len + 48) to a tmpfs file. A 64 B frame is 60 B
# in the mbuf.
FWD, PROD, HANDOFF = 7.5, 28.5 + 0.019 * 60, 73.0
NULL, TMPFS = 107 + 0.028 * 108, 118 + 0.67 * 108


def one(fwd=FWD, prod=PROD, handoff=HANDOFF, cons=NULL, **kw):
    options = {"copies": 1.0, "lcores": 1.0, "cores": 1.0, "arrivals": np.inf} | kw
    return solve(np.array(fwd), np.array(prod), np.array(handoff), np.array(cons), **options)


def test_dev_null_keeps_up_with_one_forwarding_core_at_64_bytes():
    # By hand: C = 1e9 / 110.024 = 9.0889 Mpps; a = C x (7.5 + 29.64) / 1e9 = 0.33756,
    # b = C x 73 / 1e9 = 0.66349, a / (1 - b) = 1.0031 > 1: nothing lost, and forwarding pays
    # the hand-off on every copy: 1e9 / (7.5 + 29.64 + 73) = 9.0793 Mpps, all written.
    flow = one()
    assert float(flow.delivered) == 1.0
    assert float(flow.fwd_pps) == pytest.approx(1e9 / 110.14, rel=1e-12)
    assert float(flow.capture_pps) == float(flow.fwd_pps)


def test_tmpfs_loses_two_thirds_and_forwarding_speeds_up():
    # By hand: C = 1e9 / 190.36 = 5.2532 Mpps; a = C x 37.14e-9 = 0.19510, b = C x 73e-9 =
    # 0.38349, s = a / (1 - b) = 0.31646; F = 1e9 / (37.14 + 73 x 0.31646) = 16.600 Mpps;
    # written = s x F = C.
    flow = one(cons=TMPFS)
    assert float(flow.delivered) == pytest.approx(0.31646, abs=2e-5)
    assert float(flow.fwd_pps) == pytest.approx(16.600e6, rel=2e-4)
    assert float(flow.capture_pps) == pytest.approx(1e9 / TMPFS, rel=1e-12)


def test_a_consumer_that_keeps_up_loses_only_what_arrives_while_it_wakes():
    # dumpcap sleeps once its ring stays empty (app/dumpcap/main.c): the 1.5 % it loses then
    # is no limit of its CPU, and a saturated consumer (which never sleeps) loses no more.
    flow = one(wakeup_loss=0.015)
    assert float(flow.delivered) == pytest.approx(0.985)
    assert not flow.saturated
    assert limited_by(flow, flow.consumer_pps, np.inf, np.inf, np.inf) == "forwarding_cpu"
    busy = one(cons=TMPFS, wakeup_loss=0.015)
    assert float(busy.delivered) == pytest.approx(0.31646, abs=2e-5)
    assert busy.saturated
    assert limited_by(busy, busy.consumer_pps, np.inf, np.inf, np.inf) == "capture_cpu"


costs = st.floats(0.5, 2000)
shares = st.floats(0.05, 4)


@settings(max_examples=300, deadline=None)
@given(
    fwd=costs,
    prod=costs,
    handoff=st.floats(0, 2000),
    cons=costs,
    copies=st.sampled_from([0.5, 1.0, 2.0]),
    lcores=shares,
    cores=shares,
    arrivals=st.one_of(st.just(np.inf), st.floats(1e3, 1e9)),
)
def test_the_fixed_point_holds_for_any_costs(
    fwd, prod, handoff, cons, copies, lcores, cores, arrivals
):
    flow = one(fwd, prod, handoff, cons, copies=copies, lcores=lcores, cores=cores,
               arrivals=arrivals)  # fmt: skip
    s, f, w = float(flow.delivered), float(flow.fwd_pps), float(flow.capture_pps)
    capacity = cores * 1e9 / cons
    assert 0 < s <= 1
    # forwarding at the rate its lcores allow with the copies delivered, or at the arrivals
    assert f == pytest.approx(min(arrivals, lcores * 1e9 / (fwd + copies * (prod + handoff * s))))
    assert f <= float(flow.fwd_pps_no_capture) * (1 + 1e-12)
    # what is written is delivered, at most the consumer's capacity; a loss means it is full
    assert w == pytest.approx(s * copies * f)
    assert w <= capacity * (1 + 1e-9)
    if s < 1 - 1e-9:
        assert w == pytest.approx(capacity, rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(cons=costs, more=st.floats(1.0, 5.0), prod=costs, handoff=st.floats(0, 500))
def test_a_dearer_consumer_never_writes_more(cons, more, prod, handoff):
    cheap, dear = one(prod=prod, handoff=handoff, cons=cons), one(prod=prod, handoff=handoff,
                                                                cons=cons * more)  # fmt: skip
    assert float(dear.capture_pps) <= float(cheap.capture_pps) * (1 + 1e-12)
    assert float(dear.delivered) <= float(cheap.delivered) + 1e-12


def test_record_bytes_follow_the_formats():
    # pcap: 16 B header + data (pcap-savefile(5)); pcapng: 32 B of block, data padded to 4 B,
    # and the options (16 B here): a 60 B packet is 76 B in pcap, 108 B in pcapng (the issue's
    # len + 48), a 61 B one 77 and 112.
    cap = np.array([60.0, 61.0])
    assert record_bytes("pcap", cap, 16).tolist() == [76.0, 77.0]
    assert record_bytes("pcapng", cap, 16).tolist() == [108.0, 112.0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"design": "batch"}, "`design` 'batch' is not allowed"),
        ({"design": "per-packet", "format": "pcapng"}, "`file_format` pcap only"),
        ({"capture_ports": 3}, "`capture_ports` 3 is more than `ports` 2"),
        ({"snaplen": -1}, "`snaplen` -1 is not allowed"),
        ({"buffer_share": 1.5}, "`buffer_share` 1.5 is not allowed"),
        ({"fwd_lcores": 0}, "`fwd_lcores` 0 is not allowed"),
        ({"direction": "up"}, "`direction` 'up' is not allowed"),
        # issue 43: dumpcap and dpdk-pdump dequeue and write on one thread each
        ({"capture_cores": 2}, r"`capture_cores` 2 is more than the 1 capture thread\(s\) dpdk-"),
        ({"design": "per-packet", "snaplen": 96}, "writes whole packets: leave out `snaplen`"),
        ({"sink": "file"}, "`sink` 'file' is not allowed; choose one of null, tmpfs"),
    ],
)
def test_bad_setups_are_named(options, message):
    with pytest.raises(UsageError, match=message):
        CaptureSetup(**options)


def test_the_study_captures_one_copy_per_forwarded_packet():
    # The study captures Rx and Tx of port 0 (device_id 0000:04:00.0) of the two it forwards
    # between: each forwarded packet is copied once, at port 0's Rx or at its Tx.
    assert CaptureSetup().copies == 1.0
    assert CaptureSetup(capture_ports=2).copies == 2.0
    assert CaptureSetup(direction="rx").copies == 0.5


@pytest.fixture(scope="module")
def synthetic_calibration(tmp_path_factory):
    """A calibration fitted to noise-free synthetic runs (tests/capture/model_synthetic.py)."""
    out = tmp_path_factory.mktemp("capture") / "synthetic.toml"
    capture_calibrate(synthetic_runs(), output=out, measured_on="synthetic runs")
    return out


@pytest.fixture(scope="module")
def designs(synthetic_calibration):
    sizes = "64,128,256,512,1518,imix"
    return {
        d: pp.capture_model(design=d, sizes=sizes, calibration=synthetic_calibration).to_json()
        for d in ("per-packet", "batched", "contiguous")
    }


def test_rows_carry_the_contract_and_its_bounds(designs):
    rows = designs["batched"]["rows"]
    assert [r["size"] for r in rows] == [64, 128, 256, 512, 1518, "imix"]
    for row in rows:
        for key in ("capture_pps", "capture_gbps", "loss", "fwd_pps_no_capture", "fwd_pps"):
            assert row[f"{key}_low"] <= row[key] * (1 + 1e-12)
            assert row[key] <= row[f"{key}_high"] * (1 + 1e-12)
        assert row["limited_by"] in (
            "capture_cpu",
            "sink",
            "forwarding_cpu",
            "line",
            "pcie",
            "offered",
        )
    # 1518 B frames at line rate on 2x10 GbE: 2 x 812.74 kpps, 20 Gb/s counted on the wire
    # (1538 B with preamble, SFD and gap: 10e9 / (1538 x 8) per port), all captured but what
    # dumpcap loses on waking while its 2048 copies hold 1.26 ms of them (the synthetic runs'
    # rule: 0.2 x exp(-1.26 ms / 150 us) = 4.5e-5).
    big = rows[4]
    line = 2 * 10e9 / (1538 * 8)
    assert big["fwd_pps_no_capture"] == pytest.approx(line, rel=1e-12)
    assert big["ring_holds_s"] == pytest.approx(2048 / line, rel=1e-12)
    assert big["loss"] == pytest.approx(wakeup_loss(2048 / line), rel=1e-4)
    assert big["capture_gbps"] == pytest.approx(20.0 * (1 - big["loss"]), rel=1e-12)
    assert big["limited_by"] == "line"


def test_the_loss_waking_falls_with_the_time_the_ring_holds(synthetic_calibration):
    # Issue 43: a ring that holds milliseconds of copies loses nothing while its thread wakes.
    # 1518 B at line rate: 256 copies hold 157 us (7 % lost), 2048 hold 1.26 ms; at 100 kpps
    # 2048 copies hold 20 ms (nothing).
    def row(**given):
        found = pp.capture_model(sizes=1518, calibration=synthetic_calibration, **given)
        return found.to_json()["rows"][0]

    short, line, slow = row(ring_size=256), row(), row(pps="100k")
    assert slow["ring_holds_s"] == pytest.approx(2048 / 1e5)
    for found in (short, line, slow):
        assert found["loss"] == pytest.approx(wakeup_loss(found["ring_holds_s"]), rel=1e-4)
    assert short["loss"] > 0.05 > line["loss"] > 1e-5 > 1e-60 > slow["loss"]
    # everything offered is forwarded: the offer below line rate is the limit (issue 43)
    assert (line["limited_by"], slow["limited_by"]) == ("line", "offered")
    assert slow["fwd_pps"] == pytest.approx(1e5, rel=1e-12)


def test_designs_rank_as_the_study_found_at_64_bytes(designs):
    # Fewer write calls (batched) and fewer fixed costs per packet (contiguous) capture more;
    # contiguous costs the forwarding less per copy.
    at = {d: rows["rows"][0] for d, rows in designs.items()}
    assert at["per-packet"]["capture_pps"] < at["batched"]["capture_pps"]
    assert at["batched"]["capture_pps"] < at["contiguous"]["capture_pps"]
    assert at["contiguous"]["producer_ns_per_copy"] < at["batched"]["producer_ns_per_copy"]
    assert at["contiguous"]["records_per_buffer"] == 2048 // 108  # 18 pcapng records of 108 B


def test_a_slow_sink_limits(synthetic_calibration):
    # 1 Gb/s of records: 1e9 / 8 / 1564 B = 79.9 k 1518 B records per second (pcapng: 1514 B of
    # data padded to 1516, 32 B of block, 16 B of options), whatever the CPU could do.
    row = pp.capture_model(
        sizes=1518, sink="tmpfs", sink_gbps=1, calibration=synthetic_calibration
    ).to_json()["rows"][0]
    assert row["limited_by"] == "sink"
    assert row["capture_pps"] == pytest.approx(1e9 / 8 / 1564, rel=1e-12)


def test_per_packet_writes_without_pdump_runs_are_the_studys(tmp_path):
    # No dpdk-pdump run fitted: per-packet is libpcap's pcap_dump (dumpcap -P's writer costs)
    # with the study's two write calls per record, and the provenance says so.
    runs = synthetic_runs()
    out = tmp_path / "no-pdump.toml"
    capture_calibrate(runs[runs["tool"] == "dumpcap"], output=out, measured_on="synthetic")
    found = pp.capture_model(design="per-packet", sizes=64, calibration=out).to_json()
    assert "the study's 2 write calls per record" in found["calibration"]["writes_from"]
    row = found["rows"][0]
    # The pcap writer's 160 ns + 2 calls. Into /dev/null only stdio touches the bytes, one
    # write per 4 KiB, so the fit cannot part the per-byte cost (0.028 ns/B) from the per-call
    # one (900 ns): each call carries 4096 B of copying, 900 + 0.028 x 4096 ns (tests' true
    # costs) -- an upper bound for calls that write one small record each.
    per_call = 900 + 0.028 * 4096
    assert row["consumer_ns_per_record"] == pytest.approx(160 + 2 * per_call, rel=1e-6)
    with_pdump = pp.capture_model(
        design="per-packet", sizes=64, calibration=synthetic_cal(tmp_path)
    )
    assert "pdump runs" in with_pdump.to_json()["calibration"]["writes_from"]


def synthetic_cal(folder):
    out = folder / "all.toml"
    capture_calibrate(synthetic_runs(), output=out, measured_on="synthetic")
    return out


def test_the_forwarding_cost_can_come_from_a_stored_run(tmp_path):
    # A real run recorded on this machine (tests/data/capture): its forwarding lcore spent
    # 6.140 CPU ns per packet alone, and that is the model's forwarding cost with --from-run.
    from pcieperf.capture.stored import add_run
    from pcieperf.measure.store import Store
    from tests.helpers.dpdk import recorded_run_row

    row = recorded_run_row()
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        run_id = add_run(store, row)
    found = pp.capture_model(sizes=[64], from_run=run_id, db=db).to_json()
    assert found["calibration"]["fwd_cost_from"] == f"capture run {run_id} (fwd_cpu_ns_no_capture)"
    assert found["rows"][0]["fwd_ns_per_packet"] == pytest.approx(row["fwd_cpu_ns_no_capture"])
    with pytest.raises(UsageError, match="give `fwd_ns` or `from_run`, not both"):
        pp.capture_model(sizes=[64], from_run=run_id, fwd_ns=10, db=db)
    with pytest.raises(UsageError, match=f"no capture run {run_id + 1} in"):
        pp.capture_model(sizes=[64], from_run=run_id + 1, db=db)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cache-mib", "-1"], "--cache-mib -1.0 is not allowed"),
        (["--capture-ports", "3"], "--capture-ports 3 is more than --ports 2"),
        (["--sink-gbps", "0"], "--sink-gbps 0.0 is not allowed"),
        (["--fwd-ns", "-3"], "--fwd-ns -3.0 is not allowed"),
    ],
)
def test_the_cli_names_its_flags_in_the_models_checks(capsys, argv, message):
    # a value argparse accepts but the model refuses: one line in the CLI's words, exit 2
    assert refused(capsys, "capture", "model", *argv).startswith(f"pcieperf: error: {message}")


@pytest.mark.parametrize("setup", [{}, {"batch": 1, "rs_thresh": 1, "rx_free_thresh": 1}])
def test_the_pcie_ceiling_is_dpdk_fwds_with_its_settings(setup):
    # Issue 43: the model calls the shared forwarding model with dpdk-fwd's settings. With a
    # forwarding cost that never binds, one 100 GbE port of 64 B frames on Gen3 x8 forwards
    # what dpdk-fwd says the link carries: 42.4 Mpps with its defaults (batch 32), 35.0 with
    # a doorbell and a descriptor write-back per packet.
    link = {"gen": 3, "lanes": 8}
    fwd = pp.dpdk_forwarding(frame=64, eth=100, **link, **setup).to_json()
    row = pp.capture_model(
        sizes=64, eth=100, ports=1, capture_ports=1, fwd_ns=1e-3, **link, **setup
    ).to_json()["rows"][0]
    assert row["fwd_pps_no_capture"] == pytest.approx(fwd["max_pps"], rel=1e-12)
    assert fwd["limited_by"] == ["pcie_up"]
    assert fwd["max_pps"] == pytest.approx(42.44e6 if not setup else 35.03e6, rel=1e-3)


def test_the_forwarding_setup_is_checked_as_dpdk_fwd_checks_it(capsys):
    # one checker per parameter: the same line as `dpdk-fwd --rs-thresh 0`
    said = refused(capsys, "capture", "model", "--rs-thresh", "0")
    assert said == refused(capsys, "dpdk-fwd", "--rs-thresh", "0")


def test_every_sink_offered_is_priced_or_refused_before_any_work(capsys):
    # Issue 43: `--sink file` was offered and failed; a disk is a tmpfs file at the disk's
    # bandwidth. The shipped calibration has no dumpcap -P runs into tmpfs: one line says
    # which runs would price it.
    assert "invalid choice: 'file'" in refused(capsys, "capture", "model", "--sink", "file")
    for sink in ("null", "tmpfs"):
        code, _, err = run_cli(capsys, "capture", "model", "--sink", sink, "--sizes", "64")
        assert code == 0, err
    said = refused(capsys, "capture", "model", "--file-format", "pcap", "--sink", "tmpfs")
    assert "has no runs of dumpcap writing pcap into tmpfs (it has pcapng, pdump there)" in said
    assert "`pcieperf capture run --tool dumpcap --capture-format pcap --sink tmpfs`" in said

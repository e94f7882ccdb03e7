"""The VTune recipe's forwarding estimate, term by term."""

import pytest

from pcieperf.dpdk import forwarding
from pcieperf.errors import UsageError
from pcieperf.nic.pricing import price_operations
from pcieperf.pcie.link import Link
from tests.helpers.cli import refused

RECIPE = forwarding.ForwardingConfig(
    pkt_bytes=64, rx_desc_bytes=32, tx_desc_bytes=16, rs_thresh=32, rx_free_thresh=32, batch=32
)


def gbps(metric, cfg=RECIPE, pps=10e6):
    return float(forwarding.estimate(cfg, Link(), pps).metric_gbps(metric))


def test_inbound_read_at_10mpps():
    # R * (CL(64) + rxd 32 + txd 16) * 8 = 10e6 * 112 * 8 = 8.96 Gb/s.
    assert gbps("inbound_read") == pytest.approx(8.96)


def test_inbound_write_at_10mpps():
    # R * (CL(64) + rxd 32 + txd 16 / RS 32) * 8 = 10e6 * 96.5 * 8 = 7.72 Gb/s.
    assert gbps("inbound_write") == pytest.approx(7.72)


def test_inbound_write_with_full_line_tx_writeback():
    cfg = forwarding.ForwardingConfig(full_line_tx_writeback=True)
    assert gbps("inbound_write", cfg) == pytest.approx(10e6 * (64 + 32 + 64 / 32) * 8 / 1e9)


def test_outbound_write_and_no_outbound_reads():
    # R * s * (1/max(T_rxf, B) + 1/B) * 8 = 10e6 * 4 * (1/32 + 1/32) * 8 = 0.02 Gb/s.
    assert gbps("outbound_write") == pytest.approx(0.02)
    assert gbps("outbound_read") == 0


def test_rx_doorbell_follows_the_larger_of_threshold_and_batch():
    cfg = forwarding.ForwardingConfig(batch=8, rx_free_thresh=32)
    assert gbps("outbound_write", cfg) == pytest.approx(10e6 * 4 * (1 / 32 + 1 / 8) * 8 / 1e9)
    cfg = forwarding.ForwardingConfig(batch=64, rx_free_thresh=32)
    assert gbps("outbound_write", cfg) == pytest.approx(10e6 * 4 * (2 / 64) * 8 / 1e9)


def test_cache_line_rounding_of_packet_data():
    # A 65-byte packet moves two cache lines each way: CL(65) = 128.
    cfg = forwarding.ForwardingConfig(pkt_bytes=65)
    assert gbps("inbound_read", cfg) == pytest.approx(10e6 * (128 + 48) * 8 / 1e9)


def test_mean_batch_from_recipe_peaks():
    # Peaks at 8, 10 and 12 averaging 11 (the recipe's figure); empty polls do not count.
    assert forwarding.mean_tx_batch({0: 100, 8: 1, 10: 2, 12: 5}) == pytest.approx(11)
    assert forwarding.mean_tx_batch({0: 1000, 4: 5000, 8: 200}) == pytest.approx(21600 / 5200)


def test_empty_histogram_is_rejected():
    with pytest.raises(UsageError, match="no packets"):
        forwarding.mean_tx_batch({0: 100})


def test_wire_bytes_match_the_nic_profile():
    # dpdk-fwd and `nic --profile testpmd-fwd` price the same operations.
    est = forwarding.estimate(RECIPE, Link(), 1.0)
    shares = price_operations(
        Link(), forwarding.forwarding_profile(RECIPE), __import__("numpy").array([68])
    )
    assert sum(t.wire_up_bytes for t in est.terms) == pytest.approx(
        float(sum(s.up_bytes for s in shares)[0])
    )


def test_max_forwarding_rate_on_gen3_x8():
    # Per packet: up = 12 + 88 + 56 + 6 + 24 + 1.25 = 187.25 B (descriptor reads a 64 B line for
    # 2 Rx / 4 Tx descriptors, 24 B MRd; packet MWr 64+24; Rx write-back 32+24; Tx write-back
    # 40/32); down = 42 + 21 + 84 + 0.75 + 0.75 = 148.5 B.
    est = forwarding.estimate(RECIPE, Link(), 1.0)
    assert sum(t.wire_up_bytes for t in est.terms) == pytest.approx(187.25)
    assert sum(t.wire_down_bytes for t in est.terms) == pytest.approx(148.5)
    assert est.max_pps == pytest.approx(Link().tlp_bytes_per_s / 187.25)


@pytest.mark.parametrize(
    "kwargs", [{"rx_desc_bytes": 24}, {"rs_thresh": 0}, {"pkt_bytes": -1}, {"batch": -2.0}]
)
def test_bad_forwarding_config(kwargs):
    with pytest.raises(UsageError):
        forwarding.ForwardingConfig(**kwargs)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rs-thresh", "0"], "--rs-thresh 0 is not allowed"),
        (["--rx-free-thresh", "-1"], "--rx-free-thresh -1 is not allowed"),
        (["--batch", "0"], "--batch 0.0 is not allowed"),
        (["--doorbell-bytes", "0"], "--doorbell-bytes 0 is not allowed"),
    ],
)
def test_the_forwarding_checks_name_the_flags(capsys, argv, message):
    # values argparse accepts but the forwarding model refuses: one line in the CLI's words
    err = refused(capsys, "dpdk-fwd", *argv)
    assert err == f"pcieperf: error: {message}; it must be a positive number\n"

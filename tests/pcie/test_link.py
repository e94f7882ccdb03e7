"""Link bandwidth per direction, hand-computed from the PCIe Base Specification."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.errors import UsageError
from pcieperf.pcie.link import GENERATIONS, LANE_WIDTHS, Link, spec_ack_interval_symbols


def test_gen3_x8_raw_and_encoded():
    # 8 GT/s x 8 lanes = 64 Gb/s raw; 128b/130b (§4.2.2) leaves 64 * 128/130 = 63.015 Gb/s.
    link = Link(gen=3, lanes=8)
    assert link.raw_gbps == 64.0
    assert link.encoded_gbps == pytest.approx(63.0154, abs=1e-4)


def test_gen1_x1_after_8b10b():
    # 2.5 GT/s with 8b/10b (§4.2.1): 2.0 Gb/s.
    assert Link(gen=1, lanes=1).encoded_gbps == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("gen", "lanes", "mps", "symbols"),
    [
        (1, 1, 128, 237),  # Table 3-10 (2.5 GT/s), MPS 128, x1
        (1, 8, 256, 107),  # Table 3-10, MPS 256, x8
        (2, 32, 4096, 327),  # Table 3-11 (5.0 GT/s): pcie-bench's model has a typo (237) here
        (3, 8, 256, 203),  # Table 3-12 (8.0 GT/s and higher), MPS 256, x8
        (5, 16, 4096, 630),  # Table 3-12 applies to 32 GT/s too
    ],
)
def test_ack_latency_matches_spec_tables(gen, lanes, mps, symbols):
    assert spec_ack_interval_symbols(gen, lanes, mps) == symbols


def test_dllp_overhead_divides_by_lane_count():
    # Gen3 x8, MPS 256: one ACK and one UpdateFC per 203 symbol times; an 8-byte DLLP takes
    # 8/8 = 1 symbol time on x8, so 2/203 of the link (pcie-bench charges 8 * 2/203).
    assert Link(gen=3, lanes=8).dllp_fraction == pytest.approx(2 / 203)
    # x1 at 2.5 GT/s, MPS 256: 8 symbol times per DLLP every 416.
    assert Link(gen=1, lanes=1, mps=256).dllp_fraction == pytest.approx(16 / 416)


def test_skp_overhead_per_encoding():
    # 8b/10b: 4 SKP symbols per 1180 symbol times (§4.2.8).
    assert Link(gen=1, lanes=4).skp_fraction == pytest.approx(4 / 1184)
    # 128b/130b: one 16-symbol block per 370 blocks plus a 4-symbol EDS token on the link.
    assert Link(gen=3, lanes=8).skp_fraction == pytest.approx(16.5 / (370 * 16 + 16.5))


def test_gen3_x8_tlp_bandwidth_by_hand():
    expected = 64 * 128 / 130 * (1 - 16.5 / 5936.5) * (1 - 2 / 203)
    assert Link(gen=3, lanes=8).tlp_gbps == pytest.approx(expected)
    assert Link().tlp_gbps == pytest.approx(62.22, abs=0.01)


def test_gen6_flit_mode():
    # 64 GT/s is Flit-only; 236 of 256 flit bytes carry TLPs (§4.2.3.3); a 40-byte Control SKP
    # after every 748 flits at x16, i.e. 748 * 16 bytes per lane (Table 4-30).
    link = Link(gen=6, lanes=16)
    assert link.flit_mode
    assert link.dllp_fraction == 0
    assert link.tlp_gbps == pytest.approx(1024 * 236 / 256 * (1 - 40 / (748 * 16 + 40)))
    assert link.tlp_overhead_bytes == 0  # no STP, sequence number or LCRC per TLP


def test_flit_mode_at_lower_rate_keeps_encoding():
    link = Link(gen=4, lanes=8, flit=True)
    assert link.tlp_gbps == pytest.approx(128 * 128 / 130 * 236 / 256 * (1 - 16 / (374 * 16 + 16)))


def test_per_tlp_framing_is_8_bytes_in_both_encodings():
    # 8b/10b: STP + seq (2) + LCRC (4) + END; 128b/130b: STP token (holds seq) + LCRC.
    assert Link(gen=2).tlp_overhead_bytes == 8
    assert Link(gen=4).tlp_overhead_bytes == 8
    assert Link(gen=4, ecrc=True).tlp_overhead_bytes == 12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gen": 9}, "generation 9"),
        ({"lanes": 3}, "lane width 3"),
        ({"mps": 100}, "MPS 100"),
        ({"mrrs": 8192}, "MRRS 8192"),
        ({"rcb": 32}, "RCB 32"),
        ({"gen": 6, "flit": False}, "Flit"),
        ({"ack_interval_symbols": -1.0}, "ack_interval_symbols"),
    ],
)
def test_bad_link_parameters_name_the_value(kwargs, message):
    with pytest.raises(UsageError, match=message):
        Link(**kwargs)


@given(
    gen=st.sampled_from(sorted(GENERATIONS)),
    lanes=st.sampled_from(LANE_WIDTHS),
    mps=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
    ecrc=st.booleans(),
)
def test_usable_never_exceeds_encoded_or_raw(gen, lanes, mps, ecrc):
    link = Link(gen=gen, lanes=lanes, mps=mps, ecrc=ecrc)
    assert 0 < link.tlp_gbps <= link.encoded_gbps <= link.raw_gbps
    assert math.isfinite(link.tlp_gbps)


def test_a_link_is_built_from_any_settings_of_the_same_names():
    # Issue 30: one constructor for every place that held link settings under Link's names (a
    # host profile, host facts, a calibration's reference host); what they lack keeps its
    # default, and overrides win.
    class Reference:  # a calibration's [reference_host]: MPS and MRRS only
        mps, mrrs, walk_ns = 128, 1024, 321.0

    assert Link.of(Reference()) == Link(mps=128, mrrs=1024)
    assert Link.of(Reference(), gen=4, mps=256) == Link(gen=4, mps=256, mrrs=1024)
    given = Link(gen=5, lanes=16, mps=512, rcb=128, addr64=False, completion_policy="mps")
    assert Link.of(given) == given


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gen", True),  # True == 1 in Python: not generation 1
        ("lanes", 8.0),  # 8.0 == 8: a lane width is a whole number
        ("mps", True),
        ("flit", "x"),  # a switch: True, False or None (the generation's default)
        ("ecrc", "yes"),
        ("ack_interval_symbols", "x"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_by_name(field, value):
    # The API is the CLI's equal (issue 30): what argparse's types refused, the link refuses.
    with pytest.raises(UsageError, match=f"{value!r} is not allowed"):
        Link(**{field: value})

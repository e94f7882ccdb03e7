"""Ethernet frame rates and packet mixes (IEEE 802.3 overheads: 8 B preamble+SFD, 12 B IFG)."""

import numpy as np
import pytest

from pcieperf.errors import UsageError
from pcieperf.net.ethernet import Ethernet, PacketMix, parse_mix


def test_minimum_frames_at_line_rate():
    # 64 B frame + 20 B overhead = 672 bit times: 10G -> 14.88 Mpps, 40G -> 59.52 Mpps.
    assert float(Ethernet(10).frames_per_second(64)) == pytest.approx(14_880_952, rel=1e-6)
    assert float(Ethernet(40).frames_per_second(64)) == pytest.approx(59_523_810, rel=1e-6)


def test_max_standard_frame_at_10g():
    # 1518 + 20 = 1538 B per frame: 812,743 frames/s at 10 Gb/s.
    assert float(Ethernet(10).frames_per_second(1518)) == pytest.approx(812_743.8, rel=1e-6)


def test_vlan_tag_adds_four_wire_bytes():
    assert int(Ethernet(40, vlan=True).wire_bytes(64)) == 64 + 24


def test_frame_throughput_excludes_preamble_and_gap():
    assert float(Ethernet(40).frame_gbps(64)) == pytest.approx(40 * 64 / 84)


def test_simple_imix_mean_frame():
    # 7 x 64 + 4 x 594 + 1 x 1518 over 12 packets = 361.83 B.
    assert parse_mix("imix").mean_frame_bytes == pytest.approx(4342 / 12)


def test_mix_mean_is_per_packet():
    mix = PacketMix.from_counts("two", [64, 1518], [1, 1])
    assert float(mix.mean(np.array([10.0, 30.0]))) == pytest.approx(20.0)


@pytest.mark.parametrize("text", ["63", "9217", "64:x", "64:-1", "abc", "64:0"])
def test_bad_mixes_are_rejected(text):
    with pytest.raises(UsageError):
        parse_mix(text)


def test_unknown_rate_is_rejected():
    with pytest.raises(UsageError, match="Ethernet rate"):
        Ethernet(30)


def test_mixes_are_equal_by_value_and_hash_alike():
    # A mix is part of cache keys (iommu.model's shared runs): equal by name, sizes and
    # weights, whatever arrays hold them.
    imix = parse_mix("imix")
    assert imix == parse_mix("imix")
    assert hash(imix) == hash(parse_mix("imix"))
    assert imix != parse_mix("64")
    assert imix != PacketMix("imix", imix.sizes, imix.weights[::-1])
    assert len({imix, parse_mix("imix"), parse_mix("64")}) == 2

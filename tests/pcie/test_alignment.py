"""Alignment of one pcie-bench transfer: device words and bursts, the extra word of an unaligned
device buffer, and the host-side TLP split averaged over the benchmark's addresses. Every
expected value is hand-computed in the comment beside it."""

from dataclasses import asdict, replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.errors import ProfileError, UsageError
from pcieperf.pcie import alignment
from pcieperf.pcie.link import Link
from pcieperf.pciebench import sim
from pcieperf.pciebench.bench import Point
from pcieperf.pciebench.device import DeviceProfile, from_table
from tests.helpers import hosts

LINK = Link(mps=256, mrrs=512, completion_policy="mps")  # the E5 hosts' settings (lspci)


def test_device_words_and_the_extra_word():
    # 64 B at DO 0: words 0..7 = 8. At DO 2: bytes 2..65, words 0..8 = 9, one more than the 8
    # its data fills. At DO 8: bytes 8..71, words 1..8 = 8: aligned again.
    assert alignment.device_words([0, 2, 8], 64).tolist() == [8, 9, 8]
    assert alignment.extra_word([0, 2, 8], 64).tolist() == [False, True, False]
    # 407 B fills ceil(407 / 8) = 51 words. DO 1: bytes 1..407, words 0..50 = 51 (no extra);
    # DO 2: bytes 2..408, words 0..51 = 52 (extra); DO 25: bytes 25..431, words 3..53 = 51.
    assert alignment.device_words([0, 1, 2, 25], 407).tolist() == [51, 51, 52, 51]
    assert alignment.extra_word([0, 1, 2, 25], 407).tolist() == [False, False, True, False]


def test_bursts_of_sixteen_words():
    # 128 B bursts = 16 words. 64 B at DO 2: 9 words, 1 burst. 128 B: 16 words at DO 0 (1
    # burst), 17 at DO 2 (2 bursts), so it costs what 129 B costs at DO 0 (17 words, 2).
    # 416 B: 52 words (4 bursts) at DO 0, 53 at DO 2 (still 4). 1024 B: 128 -> 8, 129 -> 9.
    assert alignment.bursts(2, 64).tolist() == 1
    assert alignment.bursts([0, 2], 128).tolist() == [1, 2]
    assert alignment.bursts(0, 129).tolist() == 2
    assert alignment.bursts([0, 2], 416).tolist() == [4, 4]
    assert alignment.bursts([0, 2], 1024).tolist() == [8, 9]
    # 64 B bursts: 1024 B at DO 2 = 129 words = 17 bursts of 8 words.
    assert alignment.bursts(2, 1024, burst_bytes=64).tolist() == 17


def test_data_lines_ignore_where_the_transfer_starts():
    # ceil(SZ / 64): 64 -> 1, 65 -> 2, 407 -> 7, 2048 -> 32, whatever the offsets.
    assert alignment.data_lines([64, 65, 407, 2048]).tolist() == [1, 2, 7, 32]


def test_read_requests_averaged_over_the_units_the_benchmark_visits():
    # 416 B reads in an 8 KiB window: 448 B units at 448 i, i = 0..17 without i = 9 (4032 +
    # 415 crosses 4 KiB): 17 addresses. With MRRS 512 a read splits where it crosses a 512 B
    # boundary: i = 1..6, 10..14 and 17 do (e.g. 448..863), i = 0, 7, 8, 15, 16 do not
    # (0, 3136 = 6 * 512 + 64, 3584, 6720 = 13 * 512 + 64, 7168): 12 of 17 need two requests.
    side = alignment.host_side(LINK, 416, 0, 8192)
    assert side.read_requests == pytest.approx(1 + 12 / 17)
    # HO 41 makes the unit 512 B: every read sits in one 512 B block, one request each.
    assert alignment.host_side(LINK, 416, 41, 8192).read_requests == 1.0
    # A posted write of 64 B at an aligned address: one MWr of 16 B header (64-bit) + 8 B
    # framing + 64 B data = 88 B, wherever the 64 B unit is.
    assert alignment.host_side(LINK, 64, 0, 64 << 20).write_up_bytes == 88.0


def test_bad_transfers_are_named():
    with pytest.raises(UsageError, match="host offset -5 is not allowed"):
        alignment.host_side(LINK, 64, -5, 8192)
    with pytest.raises(UsageError, match="size 0 is not allowed"):
        alignment.host_side(LINK, 0, 0, 8192)
    # 64 B at HO 8192 takes 8256 B units: none fits a 4 KiB window.
    with pytest.raises(UsageError, match="window of 4096 bytes holds no 8256-byte unit"):
        alignment.host_side(LINK, 64, 8192, 4096)


def test_the_shape_of_points_element_wise():
    shape = alignment.transfer_shape(LINK, [416, 416, 128], [0, 41, 0], [2, 0, 8], 8192)
    assert shape.extra_word.tolist() == [1.0, 0.0, 0.0]
    assert shape.bursts.tolist() == [4, 4, 1]
    assert shape.read_requests.tolist() == pytest.approx([1 + 12 / 17, 1.0, 1.0])


@given(
    dev_offset=st.integers(0, 4095),
    size=st.integers(1, 4096),
)
def test_an_unaligned_buffer_needs_at_most_one_extra_word(dev_offset, size):
    words = alignment.device_words(dev_offset, size)
    full = -(-size // 8)
    assert full <= words <= full + 1
    # Moving the buffer by whole words changes nothing.
    assert alignment.device_words(dev_offset + 8, size) == words
    assert alignment.extra_word(dev_offset, size) == (words == full + 1)


# --- The simulator runs the same device model --------------------------------------------------

# hosts's profiles with every cost that would hide the alignment effects set to zero or fast.
FAST = replace(hosts.DEVICE, tags=64, write_ns=0.0, fixed_latency_ns=0.0)
HOST = replace(
    hosts.HOST,
    llc_latency_ns=10.0,
    ddio_latency_ns=10.0,
    dram_latency_ns=10.0,
    remote_extra_ns=0.0,
    partial_line_ns=0.0,
    iotlb_entries=0,
    walk_ns=0.0,
    walk_busy_ns=0.0,
    walkers=1,
)


def offset_point(test: str, size: int, dev_offset: int, host_offset: int = 0) -> Point:
    return Point(test, "Seq", "HWarm", host_offset, dev_offset, 8192, size)


def test_writes_pay_per_device_burst():
    # 4 ns + 17 ns per 128 B burst: 128 B from DO 0 is 1 burst (21 ns per write), from DO 2
    # it is 2 bursts (38 ns), the measured 21.1 and 38.0 ns of every steady host.
    device = replace(FAST, burst_base_ns=4.0, burst_ns=17.0)
    rates = [
        sim.simulate(offset_point("BW_DMA_WR", 128, do), HOST, device).trans_per_s for do in (0, 2)
    ]
    assert rates[0] == pytest.approx(1e9 / 21.0, rel=0.01)
    assert rates[1] == pytest.approx(1e9 / 38.0, rel=0.01)


def test_reads_into_an_unaligned_buffer_pay_the_extra_word():
    # A 40 ns read engine: 64 B reads at DO 8 retire one per 40 ns, at DO 2 one per 40 + 22 ns.
    device = replace(FAST, read_ns=40.0, unaligned_read_ns=22.0)
    rates = [
        sim.simulate(offset_point("BW_DMA_RD", 64, do), HOST, device).trans_per_s for do in (8, 2)
    ]
    assert rates[0] == pytest.approx(1e9 / 40.0, rel=0.01)
    assert rates[1] == pytest.approx(1e9 / 62.0, rel=0.01)


def test_each_extra_read_request_costs_the_engine():
    # 416 B at HO 0 needs 1 + 12/17 requests on average (above): 100 ns + 10 ns * 12/17 (the
    # completions, at most 3 * 20 + 416 B, take ~62 ns of link and do not bind).
    device = replace(FAST, read_ns=100.0, read_request_ns=10.0)
    rate = sim.simulate(offset_point("BW_DMA_RD", 416, 0), HOST, device).trans_per_s
    assert rate == pytest.approx(1e9 / (100.0 + 10.0 * 12 / 17), rel=0.01)


def test_engine_costs_count_data_not_host_lines():
    # 64 B at HO 1 touches two host lines but carries one line of data: 10 + 8 ns per read,
    # plus 2 ns for each of its two partly covered host lines.
    device = replace(FAST, read_ns=10.0, read_line_ns=8.0)
    host = replace(HOST, read_partial_line_ns=2.0)
    rate = sim.simulate(offset_point("BW_DMA_RD", 64, 0, host_offset=1), host, device)
    assert rate.trans_per_s == pytest.approx(1e9 / 22.0, rel=0.01)


def test_a_burst_must_be_whole_words():
    with pytest.raises(ProfileError, match="burst_bytes 12"):
        from_table(DeviceProfile, {**asdict(FAST), "burst_bytes": 12}, "dev.toml")


def test_device_times_match_costs_for_aligned_transfers():
    device = replace(FAST, read_ns=7.0, read_line_ns=9.0, write_ns=18.0, write_line_ns=3.0)
    shape = alignment.transfer_shape(LINK, np.array([64, 256]), 0, 0, 8192)
    read, write, _ = device.times(shape)
    # 1 and 4 lines of data: reads 7 + 9 = 16 and 7 + 36 = 43; writes 21 and 30.
    assert read.tolist() == [16.0, 43.0]
    assert write.tolist() == [21.0, 30.0]

"""The capture pool's footprint in the cache (capture.pool) and the host facts a capture run
records beside it (capture.threads)."""

from __future__ import annotations

import os
import subprocess
import sys
from subprocess import PIPE

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.capture import threads
from pcieperf.capture.pool import cold_bytes, cold_share
from pcieperf.capture.records import _pool_lines
from pcieperf.capture.tools import PDUMP_POOL_MBUFS, tool

LLC = 32 * 2**20  # this VM's L3 (sysfs cpu0/cache/index3/size: 32768K)


def test_pdumps_default_pool_outgrows_the_cache_from_512_bytes():
    # dpdk-pdump's 65535 mbufs (app/pdump/main.c MBUFS_PER_POOL), each touching its 128 B
    # header and the copy's lines: 256 B copies 65535 x 384 B = 24 MiB fit a 32 MiB cache;
    # 508 B copies (512 B frames) 65535 x 640 B = 40 MiB do not: 1 - 32 / 40 = 0.2 of them cold.
    assert tool("pdump").pool_mbufs(2048) == PDUMP_POOL_MBUFS == 65535
    assert cold_share(65535, 252, LLC) == 0
    assert cold_share(65535, 508, LLC) == pytest.approx(1 - LLC / (65535 * 640))
    # 1496 B copies: 65535 x (128 + 1536) B = 104 MiB, 69 % cold, of 1536 B of lines
    assert cold_bytes(65535, 1496, LLC) == pytest.approx((1 - LLC / (65535 * 1664)) * 1536)


def test_dumpcaps_pool_of_twice_its_ring_stays_cached():
    # app/dumpcap/main.c create_mempool: 2 x ring (-N, 2048) = 4096 mbufs, 6.5 MiB at 1500 B
    assert tool("dumpcap").pool_mbufs(2048) == 4096
    assert cold_bytes(4096, 1496, LLC) == 0


def test_an_unknown_cache_makes_nothing_cold():
    assert cold_bytes(65535, 1496, np.nan) == 0
    assert cold_bytes(65535, 1496, 0) == 0


@given(
    pool=st.integers(1, 2**20),
    more=st.integers(0, 2**20),
    captured=st.floats(1, 9000),
    llc=st.floats(2**10, 2**31),
)
def test_a_larger_pool_is_never_warmer(pool, more, captured, llc):
    share = cold_share(pool, captured, llc)
    assert 0 <= share <= 1
    assert cold_share(pool + more, captured, llc) >= share
    assert cold_bytes(pool, captured, llc) <= captured + 64


def test_the_last_level_cache_is_the_highest_levels(tmp_path):
    for index, (level, size) in enumerate([(1, "48K"), (1, "32K"), (2, "1024K"), (3, "32768K")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "size").write_text(f"{size}\n")
    assert threads.llc_bytes(tmp_path) == 32 * 2**20
    assert threads.llc_bytes(tmp_path / "none") is None


def test_a_thread_that_sleeps_counts_its_sleeps():
    # 50 sleeps of 1 ms, each a voluntary context switch (proc(5) status)
    code = "import sys, time\nfor _ in range(50): time.sleep(0.001)\nprint(1, flush=True)\n"
    child = subprocess.Popen(
        [sys.executable, "-c", code + "sys.stdin.read()"], stdin=PIPE, stdout=PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "1\n"
        assert threads.sleeps(child.pid) >= 50
    finally:
        child.communicate("")
    assert threads.sleeps(child.pid) == 0  # reaped: no such process


def test_capture_show_says_whether_the_thread_slept_and_how_cold_the_pool_ran():
    # dpdk-pdump at 1500 B: 65535 x (128 + 1536) B = 104 MiB of lines in a 16 MiB cache,
    # 1 - 16 / 104 = 85 % cold; it polls without sleeping (0.25 sleeps/s in the calibration runs)
    row = {"capture_sleeps_per_s": 0.25, "pool_mbufs": 65535, "cache_bytes": 16 * 2**20}
    lines = _pool_lines(row | {"frame_bytes": 1500.0, "snaplen": 0, "loss": 0.5})
    assert lines[0].endswith("slept 0.2 times/s: it never found its ring empty for long")
    assert "65535 mbufs in a 16.0 MiB cache (probed): 85 % of a copy's lines cold" in lines[1]
    # dumpcap with copies to spare sleeps hundreds of times a second; its pool stays cached
    row = {"capture_sleeps_per_s": 457.1, "pool_mbufs": 4096, "cache_bytes": 16 * 2**20}
    lines = _pool_lines(row | {"frame_bytes": 1500.0, "snaplen": 0, "loss": 0.0})
    assert lines[0].endswith("slept 457.1 times/s: it had CPU to spare")
    assert ": 0 % of a copy's lines cold" in lines[1]
    # ...but one that slept and lost copies (40-92 % on issue 43's loaded VM) woke too late:
    # a thread that lost copies never had CPU to spare
    lines = _pool_lines(row | {"frame_bytes": 1500.0, "snaplen": 0, "loss": 0.4})
    assert "CPU to spare" not in lines[0]
    assert lines[0].endswith("it lost 40.00 % of its copies all the same: it woke too late")
    # a snaplen of 128 B keeps 65535 x (128 + 128) B = 16 MiB: all cached, as the model
    # prices it (capture.model.captured_bytes: one rule for the model, the fit and this line)
    row = {"capture_sleeps_per_s": 0.25, "pool_mbufs": 65535, "cache_bytes": 16 * 2**20}
    lines = _pool_lines(row | {"frame_bytes": 1500.0, "snaplen": 128, "loss": 0.0})
    assert ": 0 % of a copy's lines cold" in lines[1]
    assert _pool_lines({"frame_bytes": 64.0, "snaplen": 0}) == []  # stored before either


def test_steal_is_read_from_the_cpu_line_in_ns(tmp_path):
    # proc(5): the "cpu" line's 8th number is steal, in USER_HZ ticks (sysconf SC_CLK_TCK)
    stat = tmp_path / "stat"
    stat.write_text("cpu  6442644 6992 981619 5315758 33958 0 6482 40884 0 0\ncpu0 1 2 3\n")
    assert threads.steal_ns(stat) == 40884 * 10**9 // os.sysconf("SC_CLK_TCK")
    assert threads.steal_ns(tmp_path / "none") == 0

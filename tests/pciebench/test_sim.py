"""The pcie-bench simulator driven from Python: hand-checked latencies and bandwidths, and the
qualitative effects it must show (IOTLB reach, warm vs cold, remote memory)."""

from dataclasses import replace

import pytest

from pcieperf.errors import ProfileError, UsageError
from pcieperf.pcie.link import Link
from pcieperf.pciebench import sim
from pcieperf.pciebench.bench import Point
from pcieperf.pciebench.device import load_device
from tests.helpers.hosts import DEVICE, HOST, write_host_toml

RATE = Link(mps=256, mrrs=512, completion_policy="mps").tlp_bytes_per_s / 1e9  # bytes per ns


def point(test="BW_DMA_RD", size=64, window=8192, cache="HWarm", pattern="Rand", ho=0):
    return Point(test, pattern, cache, ho, 0, window, size)


def test_read_latency_by_hand():
    # MRd 16+8 = 24 B up, CplD 64+12+8 = 84 B down, a warm line (400 ns), fixed 100 ns.
    res = sim.simulate(point("LAT_DMA_RD"), HOST, DEVICE, transactions=1000)
    expected = 24 / RATE + 400 + 84 / RATE + 100
    assert res.latency_ns["med_ns"] == pytest.approx(expected)


def test_small_reads_are_latency_bound():
    res = sim.simulate(point(), HOST, DEVICE)
    round_trip = 24 / RATE + 400 + 84 / RATE + 100
    assert res.trans_per_s == pytest.approx(32 / round_trip * 1e9, rel=0.01)


def test_small_writes_hit_the_engine_ceiling():
    res = sim.simulate(point("BW_DMA_WR"), HOST, DEVICE)
    assert res.trans_per_s == pytest.approx(1e9 / 20.0, rel=0.01)


def test_large_reads_are_link_bound():
    # 2048 B with MPS completions: 8 x (256 + 20) = 2208 B down per read.
    res = sim.simulate(point(size=2048), HOST, DEVICE)
    assert res.bw_gbps == pytest.approx(RATE * 8 * 2048 / 2208, rel=0.01)


def test_iotlb_collapse_needs_small_pages():
    far = dict(size=64, window=64 << 20, cache="Cold")
    off = sim.simulate(point(**far), HOST, DEVICE).bw_gbps
    nosp = sim.simulate(point(**far), replace(HOST, iommu="nosp"), DEVICE).bw_gbps
    on = sim.simulate(point(**far), replace(HOST, iommu="on"), DEVICE).bw_gbps
    assert nosp < 0.5 * off
    assert on == pytest.approx(off, rel=0.02)
    near = sim.simulate(point(size=64, window=128 << 10), replace(HOST, iommu="nosp"), DEVICE)
    assert near.bw_gbps == pytest.approx(
        sim.simulate(point(size=64, window=128 << 10), HOST, DEVICE).bw_gbps, rel=0.02
    )


def test_warm_beats_cold_until_the_window_outgrows_the_llc():
    small = sim.simulate(point(window=1 << 20, cache="HWarm"), HOST, DEVICE).bw_gbps
    cold = sim.simulate(point(window=1 << 20, cache="Cold"), HOST, DEVICE).bw_gbps
    huge = sim.simulate(point(window=64 << 20, cache="HWarm"), HOST, DEVICE).bw_gbps
    assert small > cold
    assert huge < small


def test_remote_memory_is_slower():
    local = sim.simulate(point(cache="Cold"), HOST, DEVICE).bw_gbps
    remote = sim.simulate(point(cache="Cold"), replace(HOST, numa_memory=1), DEVICE).bw_gbps
    assert remote < local


def test_rw_reports_one_direction():
    res = sim.simulate(point("BW_DMA_RW", size=2048), HOST, DEVICE)
    assert res.bw_gbps < RATE * 8


def test_profile_files(tmp_path):
    path = tmp_path / "dev.toml"
    path.write_text(
        'name = "d"\nsource = "s"\ntags = 32\nread_ns = 0.0\nread_line_ns = 0.0\n'
        "write_ns = 20.0\nwrite_line_ns = 0.0\ndatapath_ns = 0.0\ndatapath_line_ns = 0.0\n"
        "fixed_latency_ns = 100.0\n"
    )
    assert load_device(path).tags == 32
    path.write_text(path.read_text() + "colour = 1\n")
    with pytest.raises(ProfileError, match="unknown key 'colour'"):
        load_device(path)
    path.write_text(
        'name = "d"\nsource = "s"\ntags = -1\nread_ns = 0.0\nread_line_ns = 0.0\n'
        "write_ns = 20.0\nwrite_line_ns = 0.0\ndatapath_ns = 0.0\ndatapath_line_ns = 0.0\n"
        "fixed_latency_ns = 100.0\n"
    )
    with pytest.raises(ProfileError, match="tags = -1"):
        load_device(path)


def test_bench_cli(tmp_path, capsys):
    import json

    from pcieperf.cli import main

    dev, host = tmp_path / "dev.toml", tmp_path / "host.toml"
    dev.write_text(
        'name = "d"\nsource = "s"\ntags = 32\nread_ns = 0.0\nread_line_ns = 0.0\n'
        "write_ns = 20.0\nwrite_line_ns = 0.0\ndatapath_ns = 0.0\ndatapath_line_ns = 0.0\n"
        "fixed_latency_ns = 100.0\n"
    )
    write_host_toml(host)
    argv = [
        "bench",
        "sim",
        "--host",
        str(host),
        "--device",
        str(dev),
        "--test",
        "BW_WR",
        "--sizes",
        "64",
        "--json",
    ]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["trans_per_s"] == pytest.approx(50e6, rel=0.01)
    # A device that reads its memory in 128 B bursts of 4 + 17 ns: 128 B writes from device
    # offset 2 span 17 words, two bursts: one write per 38 ns.
    dev.write_text(
        dev.read_text().replace("write_ns = 20.0", "write_ns = 0.0")
        + "burst_base_ns = 4.0\nburst_ns = 17.0\n"
    )
    assert main([*argv[:-3], "--sizes", "128", "--dev-offset", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["trans_per_s"] == pytest.approx(1e9 / 38.0, rel=0.01)
    assert main(["bench", "tests", "--json"]) == 0
    assert "BW_DMA_RW" in capsys.readouterr().out
    assert (
        main(["bench", "sim", "--host", str(host), "--device", str(dev), "--test", "LAT_CMD_RD"])
        == 2
    )
    assert "DMA tests only" in capsys.readouterr().err


def test_root_complex_charges_each_line_and_each_ragged_line():
    # 10 ns per line, 30 ns more per partly covered line, a fast device: 128 B = 2 lines
    # (20 ns per write), 129 B = 3 lines, the last one ragged (30 + 30 = 60 ns per write).
    host = replace(HOST, write_line_ns=10.0, partial_line_ns=30.0, iommu="off")
    fast = replace(DEVICE, write_ns=0.0)
    rates = [sim.simulate(point("BW_DMA_WR", size=s), host, fast).trans_per_s for s in (128, 129)]
    assert rates[0] == pytest.approx(1e9 / max(20.0, (128 + 24) / RATE), rel=0.01)
    assert rates[1] == pytest.approx(1e9 / 60.0, rel=0.01)


def test_cache_lines_and_ragged_ends():
    assert sim.cache_lines(0, 64) == (1, 0)
    assert sim.cache_lines(0, 129) == (3, 1)
    assert sim.cache_lines(1, 64) == (2, 2)
    assert sim.cache_lines(8, 16) == (1, 1)  # one line, ragged at both ends: still one line


def test_transactions_must_be_positive():
    with pytest.raises(UsageError, match="transactions 0 is not allowed"):
        sim.simulate(point(), HOST, DEVICE, transactions=0)

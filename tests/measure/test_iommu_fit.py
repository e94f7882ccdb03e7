"""`iommu fit`: counters made by the model itself give back the platform they were made
with; the fitted profile runs; counters without IOTLB events or outside any reach are named."""

import json

import pytest

from pcieperf.dpdk import forwarding
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError
from pcieperf.iommu import profiles as platforms
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import Traffic, load_platform
from pcieperf.measure import explain, iommu_fit
from pcieperf.measure.api import stack_counters
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.pcie.link import Link
from tests.helpers.cli import run_cli
from tests.helpers.counters import write_pcm

PACKETS = 50_000
SKX_HEADER = (
    "Date,Time,Socket,Name,Part,IB write (bytes),IB read (bytes),OB read (bytes),"
    "OB write (bytes),IOTLB Hit,IOTLB Miss,VT-d CTXT Miss,VT-d L1 Miss,VT-d L2 Miss,"
    "VT-d L3 Miss,VT-d Mem Read"
)


def write_skx(path, misses_per_s, hits_per_s, samples=4):
    """pcm-iio -csv on Skylake-SP: header before every block, IOTLB values on Part0 only
    (shared/docs/counters-dpdk-trace-notes.md §1.1), +-1 % wobble on the misses."""
    lines = []
    for t in range(samples):
        wobble = 1 + 0.01 * (-1) ** t
        lines += [
            SKX_HEADER,
            f"2026-11-21,23:08:1{t}.000,Socket0,IIO Stack 2 - PCIe1,Part0 (1st x16/x8/x4),"
            f"900000000,700000000,0,1000000,{hits_per_s:.0f},{misses_per_s * wobble:.0f},0,0,0,0,0",
            f"2026-11-21,23:08:1{t}.000,Socket0,IIO Stack 2 - PCIe1,Part1 (2nd x4),0,0,0,0",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def skx():
    return load_platform(platform="skylake-sp")


@pytest.fixture(scope="module")
def skx_64b(skx):
    """What the skylake-sp model says for 64 B at rxd/txd 1024: the counters to fit."""
    traffic = Traffic(parse_mix("64"), Ethernet(40))
    return Model(skx, traffic, PACKETS).evaluate(PortSetup())


def run_fit(tmp_path, skx, result, setup=None, base="e5-v4"):
    path = write_skx(
        tmp_path / "pcm.csv",
        result.iotlb_misses_per_fwd_pkt * result.mpps_iommu * 1e6,
        3e7,
    )
    return iommu_fit.fit(
        stack_counters(path),
        pps=result.mpps_iommu * 1e6,
        setup=setup or PortSetup(),
        traffic=Traffic(parse_mix("64"), Ethernet(40)),
        platform=skx,
        base=platforms.load_platform_profile(base),
        name="mine",
        packets=PACKETS,
    )


def test_walk_bound_counters_give_back_the_walkers(tmp_path, skx, skx_64b):
    # skylake-sp at 64 B, rxd 1024 on testpmd-fwd: 18.6 Mpps forwarded, 2.01 misses each =
    # 37.4 M walks/s, with 321 ns per walk = 12.0 walkers (the profile's 12); the rate is below
    # the IOMMU-free 42.4 Mpps, so the walks bound it.
    fit = run_fit(tmp_path, skx, skx_64b)
    assert fit.walk_bound
    assert fit.misses_per_pkt == pytest.approx(skx_64b.iotlb_misses_per_fwd_pkt, rel=0.01)
    assert fit.walkers.value == 12
    assert fit.walkers.low <= 12 <= fit.walkers.high
    # 2.01 misses per packet only happen while the ~2000 pages in flight outgrow the IOTLB:
    # the reach is below that, and the skylake-sp value (512) lies inside.
    assert fit.entries.low <= 512 <= fit.entries.high < 2048
    assert fit.entries.kind == fit.walkers.kind == "fit"
    # Lookups per packet: (hits 3e7 + misses) / rate.
    assert fit.lookups_per_pkt == pytest.approx((3e7 + 37.4e6) / 18.6e6, rel=0.02)


def test_no_misses_bound_the_reach_from_below(tmp_path, skx):
    # rxd/txd 128 on skylake-sp: ~258 pages cycle and fit 512 entries: 0 misses, line rate.
    # Counters of 0 misses say the reach is at least the working set: >= 256-ish.
    setup = PortSetup(rxd=128, txd=128)
    result = Model(skx, Traffic(parse_mix("64"), Ethernet(40)), PACKETS).evaluate(setup)
    assert result.iotlb_misses_per_pkt == 0
    fit = run_fit(tmp_path, skx, result, setup)
    assert not fit.walk_bound
    assert 256 <= fit.entries.low <= 384
    assert fit.entries.high >= 4096


def test_a_miss_rate_no_reach_gives_is_refused(tmp_path, skx):
    path = write_skx(tmp_path / "pcm.csv", 5e8, 3e7)  # 50 misses per packet at 10 Mpps
    with pytest.raises(UsageError, match=r"no IOTLB reach gives 50\.0"):
        iommu_fit.fit(
            stack_counters(path),
            pps=1e7,
            setup=PortSetup(),
            traffic=Traffic(parse_mix("64"), Ethernet(40)),
            platform=skx,
            base=platforms.load_platform_profile("skylake-sp"),
            name="x",
            packets=PACKETS,
        )


def test_cli_writes_a_profile_that_iommu_sim_runs(tmp_path, capsys, skx_64b):
    # The rate skylake-sp forwards at 64 B, rxd 1024 (18.6 Mpps, test above): 12 walkers back.
    pps = skx_64b.mpps_iommu * 1e6
    path = write_skx(tmp_path / "pcm.csv", skx_64b.iotlb_misses_per_fwd_pkt * pps, 3e7)
    out_file = tmp_path / "mine.toml"
    argv = ["iommu", "fit", "--counters", str(path), "--pps", f"{pps:.0f}", "--rxd", "1024"]
    argv += ["--frame", "64", "--platform", "skylake-sp", "--packets", str(PACKETS)]
    code, out, err = run_cli(capsys, *argv, "-o", str(out_file), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["walk_bound"] is True
    assert payload["walkers"]["value"] == 12
    assert payload["file"] == str(out_file)
    code, out, err = run_cli(
        capsys, "iommu", "sim", "--platform", str(out_file), "--packets", str(PACKETS), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["platform"] == "fitted"
    # Not overwritten without --force.
    code, _, err = run_cli(capsys, *argv, "-o", str(out_file))
    assert code == 2
    assert "exists; pass --force" in err


def test_cli_names_a_file_without_iotlb_counters(tmp_path, capsys):
    path = tmp_path / "bytes.csv"
    header = "Date,Time,Socket,Name,Part,IB write (bytes),IB read (bytes),OB read (bytes)"
    row = "2026-11-21,23:08:10.000,Socket0,IIO Stack 2 - PCIe1,Part0 (1st x16/x8/x4),9,9,0"
    path.write_text(f"{header},OB write (bytes)\n{row},0\n")
    code, _, err = run_cli(capsys, "iommu", "fit", "--counters", str(path), "--pps", "1M")
    assert code == 2
    assert "has no IOTLB miss counter" in err


def test_explain_routes_its_counters_into_the_same_fit(tmp_path, capsys, skx_64b):
    # Issue 14 item 4, "or through explain": a pcm-iio file whose byte counters are the
    # forwarding model's at the skylake-sp 64 B rate (18.6 Mpps, so explain keeps the rate) and
    # whose IOTLB misses are the IOMMU model's (2.01 per packet): `explain --fit-iommu` fits on
    # the stack, setup and rate it explained, and gives what `iommu fit` gives (12 walkers).
    pps = skx_64b.mpps_iommu * 1e6
    cfg = forwarding.ForwardingConfig(pkt_bytes=60)  # explain's --pkt: DMA bytes, 64 B frame - FCS
    rates = explain.predict(cfg, Link(), pps, misses_pkt=skx_64b.iotlb_misses_per_fwd_pkt)
    path = write_pcm(tmp_path / "pcm.csv", rates)
    out_file = tmp_path / "host.toml"
    argv = ["explain", "--counters", str(path), "--pps", f"{pps:.0f}", "--pkt", "60"]
    argv += ["--page", "4k", "--rxd", "1024", "--platform", "skylake-sp", "--json"]
    code, out, err = run_cli(capsys, *argv, "--fit-out", str(out_file))
    assert code == 0, err
    payload = json.loads(out)
    assert not payload["rate_mistake"]
    fitted = payload["iommu_fit"]
    assert fitted["pps"] == pytest.approx(pps)
    assert fitted["walk_bound"] is True
    assert fitted["walkers"]["value"] == 12
    assert fitted["iotlb_entries"]["low"] <= 512 <= fitted["iotlb_entries"]["high"]
    assert fitted["file"] == str(out_file)
    assert platforms.load_platform_profile(out_file).value("iommu.walkers") == 12
    # Without --fit-iommu/--fit-out explain says nothing about a fit; the text names the fit.
    code, out, _ = run_cli(capsys, *argv[:-1], "--json")
    assert "iommu_fit" not in json.loads(out)
    code, out, _ = run_cli(capsys, *argv[:-1], "--fit-iommu")
    assert code == 0
    assert "walkers       12 " in out
    # The profile file is not overwritten without --force.
    code, _, err = run_cli(capsys, *argv, "--fit-out", str(out_file))
    assert code == 2
    assert "exists; pass --force" in err

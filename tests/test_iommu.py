"""The DPDK IOMMU model: calibrated parameters used unchanged, working sets counted by hand,
walker bounds, the orderings the model predicts, invariants, and bad input."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf import iommu
from pcieperf.calibrate import DEFAULT_CALIBRATION, load_calibration
from pcieperf.errors import UsageError
from pcieperf.ethernet import Ethernet, parse_mix

PACKETS = 50_000  # enough for +-1 % on every rate asserted here


@pytest.fixture(scope="module")
def platform():
    return iommu.load_platform()


def model(platform, mix="64", eth=40, pace=None):
    return iommu.Model(platform, iommu.Traffic(parse_mix(mix), Ethernet(eth), pace), PACKETS)


def test_the_iotlb_is_the_pcie_bench_calibration_unchanged(platform):
    # Acceptance: the IOTLB that reproduces the window-sweep knees, not a DPDK-specific one.
    cal = load_calibration(DEFAULT_CALIBRATION)
    p = platform.iommu
    assert p.iotlb_entries == cal.reference.iotlb_entries == 96  # median of the nosp hosts
    assert p.walk_ns == cal.reference.walk_ns
    assert p.walk_busy_ns == cal.shared.walk_busy_ns
    assert p.walkers == cal.shared.walkers
    assert (p.iotlb_ways, p.replacement, p.pwc_entries) == (0, "lru", 0)  # as in `sim`


def test_working_set_is_both_rings_of_mbufs_one_page_each(platform):
    # Scattered 4 KiB layout: one 2368 B mbuf per page. In circulation: the Rx ring's 1024,
    # the Tx ring's held mbufs (1023 minus up to rs_thresh just freed) -> 2015..2047 pages,
    # plus the rings: 1024 x 32 B = 8 pages Rx, 1024 x 16 B = 4 pages Tx.
    counts = iommu.count_misses(
        iommu.PortSetup(), iommu.Traffic(parse_mix("64"), Ethernet(40)), platform.iommu, PACKETS
    )
    assert 2015 + 12 <= counts.working_set_pages <= 2047 + 12 + 32
    # Every mbuf's page comes back after ~2000 other pages: LRU with 96 entries keeps none,
    # so each packet write misses; the Tx read a burst later still hits.
    assert counts.misses_per_pkt == pytest.approx(1.0, abs=0.02)


def test_transactions_per_packet_follow_the_descriptor_batching(platform):
    # Per packet: 1 write + 1 read of the packet, Rx descriptors (32 B, 2 a line) read and
    # written back once per 2 packets, Tx descriptors (16 B, 4 a line) read once per 4,
    # one RS write-back per 32: 2 + 0.5 + 0.5 + 0.25 + 1/32 = 3.28125.
    counts = iommu.count_misses(
        iommu.PortSetup(page="2m"),
        iommu.Traffic(parse_mix("64"), Ethernet(40)),
        platform.iommu,
        PACKETS,
    )
    assert counts.transactions_per_pkt == pytest.approx(3.28125, abs=1e-3)


def test_walkers_bound_the_rate_when_every_packet_misses(platform):
    # One walker busy 51.7 ns per miss (calibration [host]) and ~1.01 misses per packet:
    # at most 1e3 / (1.01 * 51.7) = 19.1 Mpps.
    r = model(platform).evaluate(iommu.PortSetup())
    bound = 1e3 / (r.iotlb_misses_per_pkt * platform.iommu.walk_busy_ns)
    assert r.mpps_iommu <= bound * 1.01
    assert r.mpps_iommu >= 0.8 * bound
    assert r.bottleneck == "IOMMU page walks"


def test_64b_with_4k_pages_is_well_below_hugepages(platform):
    m = model(platform)
    small = m.evaluate(iommu.PortSetup(page="4k"))
    huge = m.evaluate(iommu.PortSetup(page="2m"))
    assert huge.throughput_ratio == 1.0
    assert huge.iotlb_misses_per_pkt == 0.0
    assert small.mpps_iommu < 0.75 * huge.mpps_iommu


def test_2m_pages_make_ring_size_irrelevant(platform):
    m = model(platform)
    rates = []
    for ring in (128, 1024, 4096):
        setup = iommu.PortSetup(page="2m", rxd=ring, txd=ring, pool=16384)
        r = m.evaluate(setup)
        assert r.iotlb_misses_per_pkt < 1e-4  # compulsory misses of a handful of pages only
        rates.append(r.mpps_iommu)
    assert max(rates) / min(rates) < 1.01


def test_ring_shrink_gains_shrink_with_packet_size(platform):
    # With the NIC's own device (no NFP engine), 64 B and 128 B are walker bound (~19.1 Mpps,
    # below their PCIe bounds) and gain from fewer misses; 256 B and IMIX sit at line rate
    # (18.1 and 13.1 Mpps, below the walker bound) with either ring, so they gain nothing
    # beyond the +-1 % run-to-run noise.
    rows = iommu.gain(
        platform,
        Ethernet(40),
        iommu.PortSetup(),
        128,
        128,
        [parse_mix(s) for s in ("64", "128", "256", "imix")],
        PACKETS,
    )
    gain = {r["size"]: r["gain_pct"] for r in rows}
    assert min(gain["64"], gain["128"]) > 0.5
    assert abs(gain["256"]) < 1
    assert abs(gain["imix"]) < 1


def test_rings_that_fit_the_iotlb_restore_the_hugepage_rate(platform):
    # Contiguous layout, rxd = txd = 64: ~150 mbufs of 2368 B = ~87 pages plus 2 ring
    # pages, within the 96 entries: no capacity misses, so the IOMMU costs nothing.
    m = model(platform)
    fits = m.evaluate(iommu.PortSetup(rxd=64, txd=64, layout="contiguous"))
    assert fits.working_set_pages <= platform.iommu.iotlb_entries
    assert fits.iotlb_misses_per_pkt == 0.0
    assert fits.throughput_ratio == 1.0


def test_advise_prefers_the_smallest_change_that_restores_the_rate(platform):
    advice = iommu.advise(
        platform,
        iommu.Traffic(parse_mix("64"), Ethernet(40)),
        iommu.PortSetup(layout="contiguous"),
        PACKETS,
    )
    # Shrinking rings is tried before pages, larger rings first; the choice is the first
    # option that restores the IOMMU-free rate and every option before it does not.
    assert advice.restores
    assert advice.choice.knob == "rings"
    index = [c for c, _ in advice.options].index(advice.choice)
    assert advice.chosen.mpps_iommu >= 0.99 * advice.target_mpps
    assert all(r.mpps_iommu < 0.99 * advice.target_mpps for _, r in advice.options[:index])
    assert advice.reason.endswith(".")
    assert "\n" not in advice.reason


def test_pacing_never_beats_the_iommu_free_rate(platform):
    r = model(platform, pace=10.0).evaluate(iommu.PortSetup())
    assert r.mpps_iommu <= 10.0 * 1.001
    assert r.bottleneck == "Rx pacing"


def test_set_associativity_adds_conflict_misses(platform):
    m = model(platform)
    setup = iommu.PortSetup(rxd=64, txd=64, layout="contiguous")
    direct = replace(platform, iommu=replace(platform.iommu, iotlb_ways=1))
    assert iommu.Model(direct, m.traffic, PACKETS).evaluate(setup).iotlb_misses_per_pkt > 0.05


def test_a_page_walk_cache_miss_walks_twice(platform):
    # 1 PWC entry covers 512 pages (2 MiB); scattered pages sit all over ~16 MiB of IOVA.
    small_pwc = replace(platform, iommu=replace(platform.iommu, pwc_entries=1))
    r = iommu.Model(small_pwc, model(platform).traffic, PACKETS).evaluate(iommu.PortSetup())
    assert 0.5 < r.pwc_misses_per_pkt <= r.iotlb_misses_per_pkt
    base = model(platform).evaluate(iommu.PortSetup())
    assert r.mpps_iommu < base.mpps_iommu


# --- invariants -------------------------------------------------------------------------------

setups = st.builds(
    lambda ring, tx_ring, cache, layout, queues: iommu.PortSetup(
        rxd=ring, txd=tx_ring, cache=cache, layout=layout, queues=queues, pool=1 << 16
    ),
    st.sampled_from([64, 128, 256, 512, 1024]),
    st.sampled_from([64, 128, 256, 512, 1024]),
    st.sampled_from([0, 32, 256]),
    st.sampled_from(iommu.LAYOUTS),
    st.integers(1, 2),
)
mixes = st.sampled_from(["64", "128", "1518", "imix", "64:1,1518:1"])


@settings(max_examples=25, deadline=None)
@given(setup=setups, mix=mixes)
def test_misses_are_never_negative_and_hugepages_never_worse(platform, setup, mix):
    traffic = iommu.Traffic(parse_mix(mix), Ethernet(40))
    small = iommu.count_misses(setup, traffic, platform.iommu, 20_000)
    huge = iommu.count_misses(replace(setup, page="2m"), traffic, platform.iommu, 20_000)
    assert 0 <= huge.misses_per_pkt <= small.misses_per_pkt
    assert huge.working_set_pages <= small.working_set_pages
    # A transfer of up to 1514 B spans at most 2 pages: misses <= 2 per transaction.
    assert small.misses_per_pkt <= 2 * small.transactions_per_pkt


@settings(max_examples=20, deadline=None)
@given(setup=setups, mix=mixes)
def test_an_iotlb_larger_than_the_working_set_only_takes_compulsory_misses(platform, setup, mix):
    traffic = iommu.Traffic(parse_mix(mix), Ethernet(40))
    probe = iommu.count_misses(setup, traffic, platform.iommu, 20_000)
    big = replace(platform.iommu, iotlb_entries=probe.working_set_pages + 64)
    assert iommu.count_misses(setup, traffic, big, 20_000).misses_per_pkt == 0.0


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"rxd": 1000}, "rxd 1000 is not allowed; use a power of two from 64 to 4096"),
        ({"txd": 8192}, "txd 8192 is not allowed"),
        ({"page": "3k"}, "page size '3k' is not allowed; choose one of 4k, 2m, 1g"),
        ({"pool": 1000}, "pool 1000 is smaller than the rings and caches hold"),
        ({"rx_free_thresh": 48}, "rx_free_thresh 48 must divide rxd 1024"),
        ({"cache": 600}, "cache 600 is not allowed; use 0 to 512"),
    ],
)
def test_bad_setups_are_named(changes, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(")):
        iommu.PortSetup(**changes)


@pytest.mark.parametrize("text", ["4k", "4K", "4096", "2m", "2MiB", "1G"])
def test_page_sizes_parse(text):
    assert iommu.parse_page(text) in iommu.PAGE_SIZES

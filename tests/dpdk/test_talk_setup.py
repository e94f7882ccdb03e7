"""The DPDK 4 KiB-page talk on its own setup (issue 29): the testbed (`--setup talk`), the offered
load (`--offered`), the overload mechanisms and the talk's observations
(shared/docs/dpdk-4k-pages-talk-setup.md; docs/iommu.md, "The talk on its own setup")."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.dpdk import api, setups
from pcieperf.dpdk.iommu.advise import gain
from pcieperf.dpdk.iommu.model import Model
from pcieperf.dpdk.iommu.platform import Platform, Traffic, load_platform
from pcieperf.dpdk.iommu.stream import PACKETS
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError
from pcieperf.net.ethernet import Ethernet, parse_mix

TALK = setups.load_testbed("talk")
# testpmd.c init_config: (RTE_TEST_RX_DESC_MAX 2048 + nb_lcores 2 x DEF_MBUF_CACHE 250 +
# RTE_TEST_TX_DESC_MAX 2048 + MAX_PKT_BURST 512) x RTE_MAX_ETHPORTS 32 (testpmd.h, rte_config.h).
TALK_POOL = (2048 + 2 * 250 + 2048 + 512) * 32
SIZES = ("64", "128", "256", "imix")


def test_the_talk_command_line_gives_testpmds_pool():
    # `testpmd -l 1-3 -n 4 -m 1024 --no-huge`: lcores 1-3, the first the main lcore
    # (set_default_fwd_lcores_config skips it), 1024 MB of 4 KiB pages.
    assert TALK.eal == setups.Eal(lcores=3, memory_mb=1024, no_huge=True)
    assert TALK.eal.forwarding_lcores == 2
    assert TALK.pool == TALK_POOL == 163_456
    assert TALK.page == "4k"


def test_the_talk_setup_is_two_ports_forwarding_across_two_nics():
    setup = TALK.port_setup(PortSetup())
    assert (setup.ports, setup.cross_port, setup.pool, setup.cache) == (2, True, TALK_POOL, 250)
    assert (setup.page, setup.iova, setup.lanes) == ("4k", "va", 2)
    base = load_platform(platform="skylake-sp", lanes=TALK.lanes)
    talk = TALK.platform(base)
    # Each XL710 its own read requests, each root port its own 64 posted credits; two x8 links.
    assert talk.device.device.read_requests == 2 * base.device.device.read_requests
    assert talk.posted_credits == 2 * base.posted_credits == 128
    assert talk.link.lanes == 16


def test_the_pool_must_fit_the_command_lines_memory(tmp_path):
    # 163 456 mbufs of 2368 B each take a 4 KiB page (DPDK's populate rule): 638.5 MiB > 512.
    small = replace(TALK, command="testpmd -l 1-3 -n 4 -m 512 --no-huge -- -i")
    with pytest.raises(UsageError, match="more than -m 512"):
        small.port_setup(PortSetup())
    assert TALK.port_setup(PortSetup()).pool * 4096 / 2**20 == pytest.approx(638.5)


def test_each_port_needs_its_own_forwarding_lcore():
    one = replace(TALK, command="testpmd -l 1-2 -m 1024 --no-huge")
    with pytest.raises(UsageError, match="1 forwarding lcores for 2 port queues"):
        one.port_setup(PortSetup())


def test_an_unknown_setup_is_a_usage_error():
    with pytest.raises(UsageError, match="setup 'nope' is not allowed; use talk"):
        setups.load_testbed("nope")


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 3)), min_size=1, max_size=4))
def test_an_lcore_list_counts_every_lcore_it_names(runs):
    # EAL -l: comma-separated lcores and low-high ranges (doc/guides/linux_gsg/eal_args).
    text = ",".join(f"{a}-{a + n}" if n else str(a) for a, n in runs)
    eal = setups.parse_eal(f"testpmd -l {text} -m 64")
    assert eal.lcores == sum(n + 1 for _, n in runs)


def test_a_coremask_counts_its_bits():
    assert setups.parse_eal("testpmd -c 0xe -m 64 -- -i").lcores == 3


@pytest.mark.parametrize(
    ("text", "offer"), [("line", (1.0, None)), ("70%", (0.7, None)), ("30", (1.0, 30.0))]
)
def test_offered_load_is_line_a_share_or_mpps(text, offer):
    assert api.parse_offered(text) == offer


@pytest.mark.parametrize("text", ["fast", "0%", "150%"])
def test_a_bad_offered_load_is_a_usage_error(text):
    with pytest.raises(UsageError, match="offered load"):
        api.inputs(offered=text)


def test_line_rate_is_the_default_offer():
    # Default outputs stay as before: the offer is line rate exactly, and no `offered` bound.
    traffic = api.inputs().traffic
    assert traffic.offered_mpps(1) == traffic.line_mpps(1)
    assert "offered" not in api.sim(packets=20_000).data["bounds_mpps"]


def talk_platform(read_requests: int = 256, overload: str = "tx-full") -> Platform:
    """skylake-sp on the talk's testbed, each NIC with `read_requests` (testpmd-fwd: 32-256)."""
    base = load_platform(platform="skylake-sp", lanes=TALK.lanes)
    facts = replace(base.device.device, read_requests=read_requests)
    base = replace(base, device=replace(base.device, device=facts), overload=overload)
    return TALK.platform(base)


def talk_gains(platform: Platform) -> dict[str, dict]:
    """`iommu gain --setup talk --page 4k --from-rxd 1024 --to-rxd 128`, by size."""
    setup = TALK.port_setup(PortSetup())
    mixes = [parse_mix(s) for s in SIZES]
    rows = gain(platform, Ethernet(40), setup, 128, 128, mixes, PACKETS)
    return {r["size"]: r for r in rows}


@pytest.fixture(scope="module")
def shipped():
    return talk_gains(talk_platform())


def test_the_talk_gain_as_shipped_through_the_api(shipped):
    rows = api.gain(setup="talk", platform="skylake-sp", page="4k").data
    assert {r["size"]: round(r["gain_pct"], 6) for r in rows} == {
        s: round(shipped[s]["gain_pct"], 6) for s in SIZES
    }


def test_on_the_talks_setup_64b_more_than_doubles_and_128_256b_gain_little(shipped):
    # Talk: 1024 -> 128 descriptors more than double 64 B; 128 and 256 B gain about a tenth
    # (acceptance: 64 B above +80 %, 128/256 B within 0-25 %).
    assert shipped["64"]["gain_pct"] > 80
    for size in ("128", "256"):
        assert 0 <= shipped[size]["gain_pct"] <= 25


def test_imix_stays_with_128b_on_every_mechanism(shipped):
    # Known departure (docs/iommu.md): the talk puts IMIX between 64 B and 128/256 B. Walks are
    # per packet and IMIX forwards 15.3 Mpps against 128 B's 35.1 on the same links, so it
    # loads the walkers less than 128 B and is never worse off.
    assert shipped["imix"]["gain_pct"] == pytest.approx(shipped["128"]["gain_pct"], abs=1)
    assert shipped["imix"]["mpps_no_iommu"] < 0.45 * shipped["128"]["mpps_no_iommu"]


def test_a_lower_offered_load_raises_64b_throughput():
    # Talk, option 1: limiting the injected rate raises system throughput. At line rate the
    # walkers' overload traps the port in the full-Tx-ring state (2 walks per packet); 30 % of
    # line rate (35.7 Mpps) needs 35.7 x 1.01 x 321 ns / 12 = 0.96 of the walkers: light.
    at = {
        share: api.sim(setup="talk", platform="skylake-sp", offered=share).data
        for share in ("line", "30%")
    }
    assert at["line"]["state"] == "tx-full"
    assert at["30%"]["state"] == "light"
    assert at["30%"]["mpps_iommu"] > 1.5 * at["line"]["mpps_iommu"]


@pytest.mark.parametrize("read_requests", [32, 48])
def test_the_drop_path_gives_a_poll_delay_of_about_2_us_and_one_to_two_misses(read_requests):
    # The combination that reproduces all but IMIX (docs/iommu.md, talk-mechanisms table): read
    # requests below the 64 posted credits per NIC make the lcores drop at a full Tx ring, so
    # each received packet walks 1 + reads / 64 times (1.5 at 32, 1.75 at 48: acceptance
    # 0.5-2); a poll delay moves the drops to the wire. Two lcores share 37.4 M walks/s, 18.7
    # Mpps at two walks per packet, so the best delay is 64 / 18.7 Mpps - 636 ns = 2.8 us
    # (talk: ~2 us).
    m = Model(talk_platform(read_requests), Traffic(parse_mix("64"), Ethernet(40)))
    setup = TALK.port_setup(PortSetup())
    unpaced = m.evaluate(setup)
    assert unpaced.iotlb_misses_per_pkt == pytest.approx(1 + read_requests / 64, abs=0.03)
    best = m.best_poll_delay(setup)
    assert best == pytest.approx(2.9, abs=0.1)
    assert m.evaluate(replace(setup, poll_delay_us=best)).mpps_iommu > 1.1 * unpaced.mpps_iommu


def test_wire_drops_give_one_miss_per_packet_and_nothing_to_undo():
    # Posted-write ordering (a read may not pass the NIC's earlier posted writes, PCIe Base 3.0
    # §2.4.1) slows Rx and Tx together: the rings stay light, one walk per packet, the rate is
    # the walkers' 12 / 321 ns / 1.01 = 37.0 Mpps. Nothing is trapped, so neither a lower offer
    # nor a poll delay raises it (observations 5 and 6 rule it out).
    m = Model(talk_platform(overload="wire-drop"), Traffic(parse_mix("64"), Ethernet(40)))
    r = m.evaluate(TALK.port_setup(PortSetup()))
    assert r.state == "light"
    assert r.iotlb_misses_per_pkt == pytest.approx(1.01, abs=0.02)
    assert r.mpps_iommu == pytest.approx(12 / 0.321 / 1.01, rel=0.03)
    assert m.best_poll_delay(TALK.port_setup(PortSetup())) is None


def test_an_unknown_overload_is_a_usage_error():
    with pytest.raises(UsageError, match="overload mechanism"):
        api.inputs(overload="collapse")

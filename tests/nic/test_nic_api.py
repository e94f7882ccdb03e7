"""`pp.nic` prices plain frame sizes vectorised (`rows.fixed_rows`, no PacketMix per size:
a sweep's calls of thousands of sizes) and anything with a named mix or a histogram one mix
per row (`nic.evaluate`); a size's row must not depend on which path priced it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.nic.profile import PROFILES as PROFILE_DIR
from pcieperf.nic.profile import builtin_profiles

PROFILES = builtin_profiles()


@pytest.mark.filterwarnings("ignore::pcieperf.errors.PcieperfWarning")  # a rate over the line
@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(64, 9216), min_size=1, max_size=12),
    profile=st.sampled_from(PROFILES),
    gen=st.sampled_from([1, 3, 4, 5]),
    lanes=st.sampled_from([1, 4, 8, 16]),
    eth=st.sampled_from([10, 40, 100]),
    paths=st.sampled_from(["rx,tx", "rx", "tx"]),
    vlan=st.booleans(),
)
def test_a_size_row_is_the_same_alone_or_beside_a_mix(sizes, profile, gen, lanes, eth, paths, vlan):
    options = dict(profile=profile, gen=gen, lanes=lanes, eth=eth, paths=paths, vlan=vlan)
    options |= dict(pps="5M", breakdown=True)
    alone = pp.nic(sizes=sizes, **options).to_json()  # plain sizes: the vectorised path
    beside = pp.nic(sizes=sizes, mix=["64:1"], **options).to_json()  # a histogram: per mix
    assert alone == beside[:-1]
    assert beside[-1]["size"] == "64:1"


def test_sizes_alone_and_with_a_named_mix_agree_on_the_shared_rows():
    # The README's sizes: 64 B at Gen3 x8 and 40 GbE is PCIe-bound (the dpdk profile's
    # descriptor traffic), so its row carries every cost column.
    alone = pp.nic(sizes="64,1518").to_json()
    with_imix = pp.nic(sizes="64,1518,imix").to_json()
    assert alone == with_imix[:2]
    assert alone[0]["bottleneck"] == "pcie_up"


def test_a_profile_without_device_facts_has_no_tag_bound(tmp_path):
    # Issue 27: the tags bind only where a [device] table gives them; without one the bound is
    # null in JSON (JSON has no infinity) and the text says there is none.
    profile = (PROFILE_DIR / "simple.toml").read_text()
    start, end = profile.index("[device]"), profile.index("[[tx]]")
    body = profile[:start] + profile[end:]
    for fact, value in (
        ("rx_fetch_bytes", "desc"),
        ("tx_fetch_bytes", "desc"),
        ("rx_wb_batch", "1"),
    ):
        body = body.replace(fact, value)  # the operations' expressions name the device's facts
    path = tmp_path / "nodevice.toml"
    path.write_text(body)
    table = pp.nic(profile=str(path), sizes=[64])
    assert table.to_json()[0]["tag_bound_pps"] is None
    assert "read tags: no limit" in table.to_text()

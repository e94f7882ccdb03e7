"""`nic` with a command line's few sizes and mixes is priced on Python scalars before numpy is
loaded (`nic.evaluate` of a `FewRow`, issue 15 item 4: start-up under 120 ms); it must give what
the arrays give (`evaluate` of `Rows`) bit for bit, and name bad input as they do."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.errors import PcieperfWarning, ProfileError
from pcieperf.net.ethernet import Ethernet, few_weights, parse_mix
from pcieperf.nic import api, rows
from pcieperf.nic import nic as model
from pcieperf.nic.profile import builtin_profiles, load_profile
from tests.helpers.models import links, probe

PROFILES = builtin_profiles()
FIELDS = ["label", *(attr or key for key, attr in api.NIC_FIELDS.items())]

frames = st.integers(64, 9216)
histograms = st.lists(
    st.tuples(frames, st.floats(0, 1e6) | st.sampled_from([1.0, 7.0, 1e308])),
    min_size=1,
    max_size=20,
).filter(lambda pairs: max(c for _, c in pairs) > 0)
mix_texts = (
    frames.map(str)
    | st.just("imix")
    | histograms.map(lambda pairs: ",".join(f"{s}:{c!r}" for s, c in pairs))
)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(mix_texts, min_size=1, max_size=6),
    profile=st.sampled_from(PROFILES),
    link=links,
    eth=st.sampled_from([10, 40, 100, 400]),
    vlan=st.booleans(),
    paths=st.sampled_from([("rx", "tx"), ("rx",), ("tx",), ("tx", "rx")]),
)
def test_scalar_rows_equal_the_arrays_bit_for_bit(texts, profile, link, eth, vlan, paths):
    loaded, port = load_profile(profile), Ethernet(eth, vlan=vlan)
    few = [model.evaluate(loaded, link, port, r, paths) for r in api._few_rows(None, texts)]
    many = model.evaluate(loaded, link, port, api.frame_mixes(None, texts), paths)
    for name in FIELDS:
        column = getattr(many, name)
        column = column.tolist() if isinstance(column, np.ndarray) else column
        # Exactly equal, floats included: the same operations in the same order.
        assert [getattr(r, name) for r in few] == column
    if all(text.isdecimal() for text in texts):  # plain sizes: the vectorised sizes path too
        fixed = rows.fixed_rows([int(t) for t in texts])
        sizes = model.evaluate(loaded, link, port, fixed, paths)
        assert [r.max_pps for r in few] == sizes.max_pps.tolist()


@settings(max_examples=200)
@given(histograms)
def test_few_weights_are_the_packet_mixs(pairs):
    sizes, counts = [s for s, _ in pairs], [c for _, c in pairs]
    text = ",".join(f"{s}:{c!r}" for s, c in pairs)
    assert list(few_weights(sizes, counts)) == parse_mix(text).weights.tolist()


def test_few_weights_by_hand_and_what_they_leave_to_numpy():
    # Simple IMIX 7:4:1 (net/ethernet.py NAMED_MIXES): shares 7/12, 4/12, 1/12 of the packets.
    assert few_weights([64, 594, 1518], [7.0, 4.0, 1.0]) == pytest.approx((7 / 12, 4 / 12, 1 / 12))
    # A size outside 64-9216, a negative, infinite or NaN count, all zero: numpy names them.
    for sizes, counts in [([63], [1.0]), ([64], [-1.0]), ([64], [np.inf]), ([64], [0.0])]:
        assert few_weights(sizes, counts) is None
    assert few_weights([64], [np.nan]) is None


@pytest.fixture
def numpy_unused(monkeypatch):
    """`pp.nic` as in a process that has not used numpy yet (this one has); the array paths
    made to fail, so that a test passing shows the scalar path ran."""
    monkeypatch.setattr(api._numpy, "in_use", lambda: False)
    for name in ("fixed_rows", "mix_rows"):
        monkeypatch.setattr(rows, name, lambda *a, **k: pytest.fail("priced as arrays"))


def test_the_api_answers_the_same_on_the_scalar_path(numpy_unused):
    # 64 B at 40 GbE: 64 + 8 (preamble, SFD) + 12 (IFG) = 84 B on the wire (IEEE 802.3
    # §4.4.2), so 40e9 / (8 * 84) frames per second at line rate.
    # 1518 B: 40e9 / (8 * 1538) = 3.25 Mpps at line rate (the link, testpmd-fwd's 2060.5 B down
    # per packet: 62.22e9 / 8 / 2060.5 = 3.77); the IMIX's mean wire time gives 13.09 Mpps (the
    # link: 14.36): 20 Mpps fits neither, each warning says so.
    with pytest.warns(PcieperfWarning, match=r"for size 1518 \(at most 3\.(25|77) Mpps\), imix"):
        rows = pp.nic(sizes="64,1518,imix", pps="20M").to_json()
    assert rows[0]["line_rate_pps"] == 40 * 1e9 / (8 * 84.0)
    assert [r["size"] for r in rows] == [64, 1518, "imix"]
    assert [r["fits_line"] for r in rows] == [True, False, False]


def test_the_api_rows_equal_the_arrays_rows(monkeypatch):
    options = dict(sizes="64,128,imix", mix=["64:1,1518:3"], vlan=True, pps="3M")
    arrays = pp.nic(**options).to_json()
    monkeypatch.setattr(api._numpy, "in_use", lambda: False)
    assert pp.nic(**options).to_json() == arrays


def test_a_profile_error_is_named_as_the_arrays_name_it(tmp_path, monkeypatch):
    # Op A is whole only at 64 B (1518 / 64 = 23.71875 B), op B only at 1518 B (23.71875 B at
    # 64): the arrays report the first op's first bad size, A at 1518; size by size, B at 64
    # would be found first, so the scalar path hands a profile error to the arrays.
    path = tmp_path / "two.toml"
    path.write_text(
        'name = "two"\ndescription = "d"\nsource = "s"\nnotes = "n"\n'
        '[[rx]]\nwhat = "A"\ninitiator = "dma_write"\nsize = "frame / 64"\nevery = 1\n'
        '[[rx]]\nwhat = "B"\ninitiator = "dma_write"\nsize = "1518 / frame"\nevery = 1\n'
    )
    message = r"rx op 'A' size 'frame / 64' gives 23.71875 bytes"
    with pytest.raises(ProfileError, match=message):
        pp.nic(profile=str(path), sizes="64,1518")
    monkeypatch.setattr(api._numpy, "in_use", lambda: False)
    with pytest.raises(ProfileError, match=message):
        pp.nic(profile=str(path), sizes="64,1518")


@pytest.mark.parametrize(
    "argv",
    [
        ["nic", "--sizes", "64,128,1518"],
        ["nic", "--sizes", "imix", "--json"],
        ["nic", "--sizes", "64,imix", "--json", "--pps", "10Mpps"],
        ["nic", "--mix", "64:7,594:4,1518:1", "--format", "csv", "--vlan", "--eth", "100"],
        ["nic", "--profile", "testpmd-fwd", "--sizes", "64,1518", "--paths", "rx", "--gen", "6"],
    ],
)
def test_nic_with_a_few_sizes_imports_neither_numpy_nor_pandas(argv):
    assert probe(*argv) == {"code": 0, "loaded": []}


@pytest.mark.parametrize(
    "argv",
    [
        ["nic", "--sizes", "64", "--breakdown"],  # the per-operation arrays
        ["nic", "--sizes", ",".join(map(str, range(64, 64 + api.FEW_SIZES + 1)))],
    ],
)
def test_nic_with_a_breakdown_or_many_sizes_loads_numpy(argv):
    # The probe can fail: these rows are priced as arrays, and it sees numpy.
    assert probe(*argv) == {"code": 0, "loaded": ["numpy"]}

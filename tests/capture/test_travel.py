"""Costs that travel (issue 43 item 2): a calibration's costs carried to another kind of
machine by the ratio of each cost's primitive there over here, with synthetic probes only (no
timing of this machine: the probe itself is tests/capture/test_probe.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.capture import machine
from pcieperf.capture.calibration import (
    DEFAULT_CALIBRATION,
    CaptureCalibration,
    calibration_toml,
    load_calibration,
)
from pcieperf.capture.model import capture_model
from pcieperf.capture.primitives import PRIMITIVES, Probe, Spread, cache_file, probe_of
from pcieperf.capture.travel import PRICED_BY, WRITE, travelled
from pcieperf.errors import ProfileError

# The other machine: an Intel Ice Lake VM with 2 vCPUs (its /proc/cpuinfo model name).
ICE_LAKE = machine.Machine("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 2, "6.1.0")


def synthetic(kind: tuple[str, int], **factors: float) -> Probe:
    """A probe of `kind` whose every primitive is 1 (with a +-10 % spread), those named times
    their factor."""
    return Probe(
        kind[0],
        kind[1],
        5,
        {k: Spread(f, 0.9 * f, 1.1 * f) for k in PRIMITIVES for f in [factors.get(k, 1.0)]},
    )


@pytest.fixture(scope="module")
def shipped() -> CaptureCalibration:
    """The shipped calibration, recording a synthetic probe of its own machine."""
    cal = load_calibration(DEFAULT_CALIBRATION)
    return replace(cal, meta=replace(cal.meta, probe=synthetic(("AMD EPYC", 2))))


def costs_of(cal: CaptureCalibration) -> dict[str, float]:
    """Every cost the probes may scale, by table.key (a consumer's by consumer.SINK.key; a
    fixed cost per writer as its total: each writer's scales alike)."""
    tables = {"forwarding": cal.forwarding, "producer": cal.producer}
    tables |= {f"consumer.{sink}": c for sink, c in cal.consumers.items()}
    found = {
        f"{name}.{key}": getattr(table, key)
        for name, table in tables.items()
        for key in PRICED_BY[name.split(".")[0]]
    }
    return {k: sum(v.values()) if isinstance(v, dict) else v for k, v in found.items()}


def test_on_its_own_kind_of_machine_nothing_is_scaled(shipped):
    # the same kind with other numbers (a busier moment): the calibration as it is
    other_moment = synthetic(("AMD EPYC", 2), copy_warm_ns_per_byte=3.0, ring_ns=5.0)
    moved, ratios = travelled(shipped, other_moment)
    assert moved is shipped
    assert ratios == {}


def test_a_calibration_without_a_probe_is_not_scaled():
    cal = load_calibration(DEFAULT_CALIBRATION)
    bare = replace(cal, meta=replace(cal.meta, probe=None))
    assert travelled(bare, synthetic(ICE_LAKE.kind, ring_ns=2.0)) == (bare, {})


def test_equal_primitives_leave_every_cost_as_it_is(shipped):
    moved, ratios = travelled(shipped, synthetic(ICE_LAKE.kind))
    assert costs_of(moved) == pytest.approx(costs_of(shipped), rel=1e-12)
    assert {r["ratio"] for r in ratios.values()} == {1.0}
    assert moved.wakeup == shipped.wakeup
    assert moved.writes == shipped.writes


def test_a_memcpy_twice_as_slow_doubles_the_per_byte_costs_and_nothing_else(shipped):
    moved, ratios = travelled(shipped, synthetic(ICE_LAKE.kind, copy_warm_ns_per_byte=2.0))
    before, after = costs_of(shipped), costs_of(moved)
    per_byte = {k for k in before if k.endswith(".per_byte_ns")}
    assert per_byte == {
        "forwarding.per_byte_ns",
        "producer.per_byte_ns",
        "consumer.null.per_byte_ns",
        "consumer.tmpfs.per_byte_ns",
    }
    for key in before:
        assert after[key] == pytest.approx(before[key] * (2.0 if key in per_byte else 1.0))
    assert ratios["producer.per_byte_ns"]["primitive"] == "copy_warm_ns_per_byte"


def test_each_sinks_write_call_follows_the_write_into_that_sink(shipped):
    # the Ice Lake: a write into tmpfs 27x dearer, into /dev/null 2.8x
    here = synthetic(ICE_LAKE.kind, write_tmpfs_ns=27.0, write_null_ns=2.8)
    moved, ratios = travelled(shipped, here)
    for sink, factor in (("tmpfs", 27.0), ("null", 2.8)):
        assert moved.consumers[sink].write_call_ns == pytest.approx(
            factor * shipped.consumers[sink].write_call_ns
        )
        assert ratios[f"consumer.{sink}.write_call_ns"]["primitive"] == f"write_{sink}_ns"


@settings(max_examples=30)
@given(
    primitive=st.sampled_from(sorted(PRIMITIVES)),
    slower=st.floats(0.05, 20),
    more=st.floats(1.0, 10),
)
def test_costs_grow_with_their_primitive_and_only_theirs(shipped, primitive, slower, more):
    low = costs_of(travelled(shipped, synthetic(ICE_LAKE.kind, **{primitive: slower}))[0])
    high = costs_of(travelled(shipped, synthetic(ICE_LAKE.kind, **{primitive: slower * more}))[0])
    for key, value in costs_of(shipped).items():
        table, name = key.split(".")[0], key.rsplit(".", 1)[1]
        made_of = PRICED_BY[table][name]
        into = f"write_{key.split('.')[1]}_ns"  # a consumer.SINK's write call
        mine = made_of == primitive or (made_of == WRITE and primitive == into)
        assert high[key] == pytest.approx(low[key] * (more if mine else 1.0))
        if not mine:
            assert low[key] == pytest.approx(value)


@settings(max_examples=30)
@given(factor=st.floats(0.05, 20), primitive=st.sampled_from(["ring_local_ns", "round_trip_ns"]))
def test_a_scaled_band_reaches_from_not_moving_to_the_probes_spread(shipped, factor, primitive):
    moved, _ = travelled(shipped, synthetic(ICE_LAKE.kind, **{primitive: factor}))
    band, was = moved.producer.band, shipped.producer.band
    # the ratio's lowest and highest over both probes' +-10 %: 0.9 / 1.1 and 1.1 / 0.9
    assert band.low <= was.low * min(0.9 / 1.1, 1 / factor) * (1 + 1e-12)
    assert band.high >= was.high * max(1.1 / 0.9, 1 / factor) * (1 - 1e-12)
    assert band.low <= 1.0 <= band.high


def test_the_probe_reads_back_from_a_calibration_file(tmp_path, shipped):
    path = tmp_path / "cal.toml"
    path.write_text(calibration_toml(shipped))
    assert load_calibration(path).meta.probe == shipped.meta.probe


def test_a_calibration_without_a_probe_writes_no_probe_key():
    # the shipped file before it recorded one reads and writes back the same (golden JSON)
    cal = load_calibration(DEFAULT_CALIBRATION)
    bare = replace(cal, meta=replace(cal.meta, probe=None))
    assert "probe" not in calibration_toml(bare)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ring_ns": [1.0, 2.0, 3.0]}, "probe ring_ns = .* 0 < low <= median <= high"),
        ({"ring_ns": [1.0, 0.0, 3.0]}, "probe ring_ns"),
        ({"ring_ns": "fast"}, "probe ring_ns"),
        ({"cpus": 0}, "probe cpus = 0"),
        ({"cpu_model": ""}, "probe cpu_model"),
        ({"fastest_ns": [1.0, 1.0, 1.0]}, "probe key 'fastest_ns' is unknown"),
    ],
)
def test_a_bad_probe_is_named_in_one_line(change, message):
    table = synthetic(ICE_LAKE.kind).table() | change
    with pytest.raises(ProfileError, match=message) as caught:
        probe_of(table, "probe.json")
    assert "\n" not in str(caught.value)


def test_capture_model_on_its_calibrations_kind_says_nothing_of_probes(monkeypatch):
    here = machine.Machine("AMD EPYC", 2, "6.18")
    monkeypatch.setattr(machine.Machine, "here", classmethod(lambda cls: here))
    provenance = capture_model(sizes="64").to_json()["calibration"]
    assert "scaled_by" not in provenance
    assert "probe_here" not in provenance


def keep_probe(tmp_path, probe: Probe) -> str:
    """A store path whose folder keeps `probe` as `capture probe` would."""
    path = cache_file(tmp_path, probe.kind)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(probe.table()))
    return str(tmp_path / "store.duckdb")


def test_capture_model_carries_the_costs_with_this_machines_kept_probe(
    monkeypatch, tmp_path, shipped
):
    monkeypatch.setattr(machine.Machine, "here", classmethod(lambda cls: ICE_LAKE))
    cal = tmp_path / "cal.toml"
    cal.write_text(calibration_toml(shipped))
    db = str(tmp_path / "store.duckdb")
    alone = capture_model(sizes="64", sink="tmpfs", calibration=cal, db=db)
    assert alone.to_json()["calibration"]["scaled_by"] == {}
    assert "`pcieperf capture probe` here" in alone.to_text()

    db = keep_probe(tmp_path, synthetic(ICE_LAKE.kind, write_tmpfs_ns=27.0, ring_ns=2.0))
    carried = capture_model(sizes="64", sink="tmpfs", calibration=cal, db=db).to_json()
    scaled = carried["calibration"]["scaled_by"]
    assert scaled["consumer.tmpfs.write_call_ns"]["ratio"] == pytest.approx(27.0)
    assert scaled["consumer.tmpfs.fixed_ns"]["primitive"] == "ring_ns"
    row, was = carried["rows"][0], alone.to_json()["rows"][0]
    assert row["consumer_ns_per_record"] > was["consumer_ns_per_record"]
    assert row["capture_pps"] < was["capture_pps"]
    assert row["capture_pps_low"] <= row["capture_pps"] <= row["capture_pps_high"]
    text = capture_model(sizes="64", sink="tmpfs", calibration=cal, db=db).to_text()
    assert "scaled by this machine's probe over that one's" in text

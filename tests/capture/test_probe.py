"""`pcieperf capture probe` (issue 43 item 2): the primitives timed on this machine, kept per
kind of machine beside the store. Only forms are asserted (every answer positive, the median
inside its spread, the kept probe read back): never a timing of this machine."""

from __future__ import annotations

import json

import pytest

from pcieperf import statedir
from pcieperf.capture import probe
from pcieperf.capture.machine import Machine
from pcieperf.capture.primitives import PRIMITIVES, Spread, cache_file, probe_of
from pcieperf.errors import UsageError
from tests.helpers.cli import refused, run_cli

# answered on any machine; a round trip and a ring between two CPUs need two CPUs and
# real-time priority (cores::round_trip_ns), and the tmpfs write /dev/shm
ALWAYS = {"ring_local_ns", "copy_warm_ns_per_byte", "copy_cold_ns_per_byte", "write_null_ns"}


def check_form(table: dict) -> None:
    """A probe table as `capture probe` answers it: every primitive [median, low, high]."""
    found = probe_of(table, "answer")
    assert ALWAYS <= set(found.primitives) <= set(PRIMITIVES)
    assert (found.cpu_model, found.cpus) == Machine.here().kind
    for spread in found.primitives.values():
        assert 0 < spread.low <= spread.median <= spread.high


@pytest.fixture
def quick(monkeypatch):
    """Smaller amounts per repeat: the forms, not the timings, are under test."""
    for name, value in (
        ("WARM_BYTES", 1 << 20),
        ("WRITE_CALLS", 500),
        ("RING_ITEMS", 5000),
        ("LOCAL_ITEMS", 20_000),
        ("MAX_POOL", 8 << 20),
    ):
        monkeypatch.setattr(probe, name, value)


def test_a_probe_is_measured_once_then_kept(tmp_path, quick):
    db = tmp_path / "store.duckdb"
    first = probe.capture_probe(repeats=3, db=db).to_json()
    assert first["measured_now"] is True
    check_form(first["probe"])
    assert first["file"] == str(cache_file(tmp_path, Machine.here().kind))
    assert json.loads((tmp_path / first["file"]).read_text()) == first["probe"]
    again = probe.capture_probe(db=db).to_json()
    assert again["measured_now"] is False
    assert again["probe"] == first["probe"]
    fresh = probe.capture_probe(fresh=True, repeats=1, db=db).to_json()
    assert fresh["measured_now"] is True
    assert fresh["probe"]["repeats"] == 1


def test_a_damaged_kept_probe_is_measured_again(tmp_path, quick):
    path = cache_file(tmp_path, Machine.here().kind)
    path.parent.mkdir(parents=True)
    path.write_text('{"cpu_model": "x", "cpus": 2, "ring_ns": [1, 2, 3]}')
    answer = probe.capture_probe(repeats=1, db=tmp_path / "store.duckdb").to_json()
    assert answer["measured_now"] is True
    check_form(json.loads(path.read_text()))


def test_the_tmpfs_file_is_removed(tmp_path, quick, monkeypatch):
    made = []
    folder = statedir.private_folder

    def kept(prefix, parent=None):
        made.append(folder(prefix, parent))
        return made[-1]

    monkeypatch.setattr(statedir, "private_folder", kept)
    probe.measure(1, Machine.here())
    assert made
    assert not any(p.exists() for p in made)


@pytest.mark.parametrize("repeats", [0, -1, 1001, 2.5])
def test_bad_repeats_are_refused(repeats):
    with pytest.raises(UsageError, match="repeats"):
        probe.capture_probe(repeats=repeats)


def test_the_median_and_spread_of_answers():
    assert probe.spread([3.0, float("nan"), 1.0, 2.0, 10.0]) == Spread(2.5, 1.0, 10.0)
    assert probe.spread([float("nan")]) is None


def test_capture_probe_answers_as_the_api(capsys, tmp_path, quick):
    db = str(tmp_path / "store.duckdb")
    code, out, _ = run_cli(capsys, "capture", "probe", "--repeats", "2", "--json", "--db", db)
    assert code == 0
    check_form(json.loads(out)["probe"])
    code, out, _ = run_cli(capsys, "capture", "probe", "--db", db)
    assert code == 0
    assert "kept from an earlier probe" in out
    assert "copy_cold_ns_per_byte" in out
    assert "--repeats" in refused(capsys, "capture", "probe", "--repeats", "0")


@pytest.mark.slow
def test_the_probe_answers_under_a_cpu_hog(tmp_path, cpu_hog):
    # every CPU busy: the answers may be slower and wider, but every primitive that needs no
    # privilege still answers, and the spread holds the median
    check_form(probe.capture_probe(repeats=3, db=tmp_path / "store.duckdb").to_json()["probe"])

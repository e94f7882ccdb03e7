"""`trace stats --json` is byte for byte what it was before the statistics moved into the Rust
core: the expected outputs in tests/data/trace_stats/expected were recorded by the numpy
implementation (commit 085f2a9, see tests/data/trace_stats/make.py) on every shared capture and
on captures written for the purpose (quirks, out of order, several interfaces and resolutions,
gzip, synthetic constant, Poisson and on/off traffic at three Ethernet rates)."""

import json
from pathlib import Path

import pytest

from tests.helpers import CAPTURES, TESTS_DATA
from tests.helpers.cli import run_cli

DATA = TESTS_DATA / "trace_stats"
EXPECTED = sorted((DATA / "expected").glob("*.json"))


def source(expected: Path) -> tuple[Path, str]:
    """The capture an expected output describes and the --eth it was recorded at."""
    key, eth = expected.stem.rsplit("@", 1)
    where, _, name = key.replace("__", "/").partition("/")
    return (DATA / "inputs" / name if where == "inputs" else CAPTURES / name), eth


def recorded_output(expected: Path, path: Path) -> dict:
    """An expected output for the capture at `path`: messages name the file, recorded as
    `{file}` so the test runs from any checkout."""
    text = expected.read_text().replace("{file}", json.dumps(str(path))[1:-1])
    return json.loads(text) | {"file": str(path)}


def test_every_shared_capture_has_an_expected_output():
    if not CAPTURES.is_dir():
        pytest.skip("../shared/data/captures is absent")
    recorded = {source(e)[0] for e in EXPECTED}
    assert set(CAPTURES.glob("**/*.pcap*")) <= recorded
    assert len(recorded) >= 61 + 16  # 61 shared captures, 16 written by make.py


@pytest.mark.parametrize("expected", EXPECTED, ids=lambda p: p.stem)
def test_stats_json_is_byte_identical_to_the_recorded_output(capsys, expected):
    path, eth = source(expected)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data is not checked out)")
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", "--eth", eth, str(path))
    assert code == 0
    recorded = recorded_output(expected, path)
    assert out == json.dumps([recorded], indent=2) + "\n"


def test_several_files_in_one_call_match_their_single_outputs(capsys):
    picks = [e for e in EXPECTED if e.stem.startswith("inputs__") and e.stem.endswith("@40")]
    paths = [source(e)[0] for e in picks]
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", *map(str, paths))
    assert code == 0
    expected = [recorded_output(e, p) for e, p in zip(picks, paths, strict=True)]
    assert json.loads(out) == expected

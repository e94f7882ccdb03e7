"""`trace stats --json` is byte for byte what it was before the statistics moved into the Rust
core: the expected outputs in tests/data/trace_stats/expected were recorded by the numpy
implementation (commit 085f2a9, see tests/data/trace_stats/make.py) on every shared capture and
on captures written for the purpose (quirks, out of order, several interfaces and resolutions,
gzip, synthetic constant, Poisson and on/off traffic at three Ethernet rates).

Keys added since (how far a capture's times can be trusted, issue 26: ties, steps back,
directions, dates) were never in the numpy implementation: they are left out here, every
recorded key keeps its value and place, and tests/net/test_trace_trust.py checks the new ones
against tests/helpers/stats_oracle.py."""

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


def recorded_keys(out: str, recorded: list[dict]) -> str:
    """`out` (JSON of a list of reports) with only the keys the recorded reports have, their
    interfaces' too, in its own order, dumped as the CLI dumps it."""

    def keep(found: dict, old: dict) -> dict:
        kept = {k: v for k, v in found.items() if k in old}
        if "interfaces" in kept:
            kept["interfaces"] = [
                keep(i, o) for i, o in zip(kept["interfaces"], old["interfaces"], strict=True)
            ]
        return kept

    reports = json.loads(out)
    return json.dumps([keep(r, o) for r, o in zip(reports, recorded, strict=True)], indent=2) + "\n"


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
    assert recorded_keys(out, [recorded]) == json.dumps([recorded], indent=2) + "\n"


def test_several_files_in_one_call_match_their_single_outputs(capsys):
    picks = [e for e in EXPECTED if e.stem.startswith("inputs__") and e.stem.endswith("@40")]
    paths = [source(e)[0] for e in picks]
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", *map(str, paths))
    assert code == 0
    expected = [recorded_output(e, p) for e, p in zip(picks, paths, strict=True)]
    assert json.loads(recorded_keys(out, expected)) == expected

"""The fast tier (`-m "not slow"`, CONTRIBUTING.md "Testing"): drawn from a recording of the
whole suite, by share of its time, and still touching every package."""

import json

import pytest

from tests.helpers import ROOT, durations


def _recording(tmp_path, seconds, setups=None):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"seconds": seconds, "setup_seconds": setups or {}}))
    return path


def test_a_test_is_slow_by_its_share_of_the_whole_run(tmp_path):
    # 3000 tests of 1 s and one of 5 s: the line is 1/3000 of 3005 s, just above 1 s
    seconds = {f"tests/a.py::t{i}": 1.0 for i in range(3000)} | {"tests/b.py::long": 5.0}
    slow, modules = durations.recorded(_recording(tmp_path, seconds))
    assert slow == {"tests/b.py::long"}
    assert modules == set()
    # the same run recorded on a machine 4x slower draws the same line
    slower = {k: 4 * v for k, v in seconds.items()}
    assert durations.recorded(_recording(tmp_path, slower))[0] == slow


def test_a_module_whose_setup_was_slow_is_slow_whole(tmp_path):
    seconds = {f"tests/a.py::t{i}": 0.01 for i in range(100)} | {"tests/c.py::first": 9.0}
    path = _recording(tmp_path, seconds, {"tests/c.py::first": 8.9})
    assert durations.recorded(path)[1] == {"tests/c.py"}


def test_no_recording_marks_nothing(tmp_path):
    assert durations.recorded(tmp_path / "absent.json") == (set(), set())


def test_the_fast_tier_touches_every_package():
    slow, slow_modules = durations.recorded()
    if not slow:
        pytest.fail("tests/durations.json is missing or empty: re-record it (CONTRIBUTING.md)")
    recorded = json.loads(durations.DURATIONS.read_text())["seconds"]
    fast = {t for t in recorded if t not in slow and t.split("::")[0] not in slow_modules}
    folders = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").is_file()}
    folders -= {"helpers", "data"}
    touched = {t.split("/")[1] for t in fast if t.count("/") > 1}
    assert folders <= touched, f"no fast test in tests/{sorted(folders - touched)}"


class _Item:
    """What `longest_first` reads of a pytest item."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_modules_run_longest_first_each_whole_and_in_its_order(tmp_path):
    seconds = {"tests/a.py::t1": 1.0, "tests/a.py::t2": 1.0, "tests/b.py::long": 5.0}
    items = [_Item(n) for n in ("tests/a.py::t1", "tests/a.py::t2", "tests/new.py::x")]
    items += [_Item("tests/b.py::long"), _Item("tests/b.py::new")]
    durations.longest_first(items, _recording(tmp_path, seconds))
    assert [i.nodeid for i in items] == [
        "tests/b.py::long",
        "tests/b.py::new",
        "tests/a.py::t1",
        "tests/a.py::t2",
        "tests/new.py::x",  # not recorded: none, last
    ]

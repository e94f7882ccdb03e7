"""The fast tier (CONTRIBUTING.md "Testing"): the tests a recorded run of the whole suite found
slow are marked `slow`, so that `python3 -m pytest -m "not slow"` leaves them out.

`tests/durations.json` holds each test's seconds (setup, call and teardown) from one whole run,
`python3 -m pytest --record-durations tests/durations.json`, and the modules whose set-up alone
was slow (a module-scoped fixture: a replay, a built store). A test is slow when it took at least
`SLOW_SHARE` of that run's total: a share, not seconds, so that a file recorded on a busy or a
quiet machine draws the same line. A test the file does not know (new, renamed) is fast until
the next recording; a test that knows it is slow says so itself (`@pytest.mark.slow`).

The same recording orders the modules, the longest first (`longest_first`): xdist hands a worker
the next module in collection order as it finishes one (`--dist loadfile`), so a long module
collected last ran on one worker while the other was idle (the hostile probe's 64 s, at the end
of a run beside a CPU hog); longest first leaves the short ones to even out the end.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import ROOT

DURATIONS = ROOT / "tests" / "durations.json"
SLOW_SHARE = 1 / 3000
"""A test slower than this share of the whole suite's time is slow: 0.3 s of a 15-minute run
of 2 workers; on the run recorded, the rest of the suite took ~6 % of the whole."""


def recorded(path: Path = DURATIONS) -> tuple[set[str], set[str]]:
    """The slow tests' ids and the modules whose set-up was slow, from a recording."""
    if not path.is_file():
        return set(), set()
    found = json.loads(path.read_text(encoding="utf-8"))
    seconds, setups = found["seconds"], found["setup_seconds"]
    line = SLOW_SHARE * sum(seconds.values())
    slow = {test for test, s in seconds.items() if s >= line}
    return slow, {test.split("::")[0] for test, s in setups.items() if s >= line}


def module_seconds(path: Path = DURATIONS) -> Counter[str]:
    """Each module's seconds in a recording (none without one)."""
    if not path.is_file():
        return Counter()
    seconds = json.loads(path.read_text(encoding="utf-8"))["seconds"]
    modules: Counter[str] = Counter()
    for test, s in seconds.items():
        modules[test.split("::")[0]] += s
    return modules


def longest_first(items: list[pytest.Item], path: Path = DURATIONS) -> None:
    """Order `items` module by module, the longest recorded module first (a module the file
    does not know counts as none); within a module, as collected."""
    modules = module_seconds(path)
    first = {}
    for index, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], index)
    position = {item.nodeid: index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[float, int, int]:
        module = item.nodeid.split("::")[0]
        return (-modules[module], first[module], position[item.nodeid])

    items.sort(key=key)


def mark_slow(items: list[pytest.Item], path: Path = DURATIONS) -> None:
    """Mark the tests the recording found slow, and every test of a module whose set-up was."""
    slow, slow_modules = recorded(path)
    for item in items:
        if item.nodeid in slow or item.nodeid.split("::")[0] in slow_modules:
            item.add_marker(pytest.mark.slow)


class Recorder:
    """Sums each test's phases as the reports arrive (from every xdist worker, on the
    controller) and writes them at the session's end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: Counter[str] = Counter()
        self.setup_seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One phase of one test."""
        self.seconds[report.nodeid] += report.duration
        if report.when == "setup":
            self.setup_seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The recording, written whole (a temporary sibling, then renamed)."""
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes what every worker reported
        rounded = {k: round(v, 3) for k, v in sorted(self.seconds.items())}
        setups = {k: round(v, 3) for k, v in sorted(self.setup_seconds.items()) if v >= 0.05}
        text = json.dumps({"seconds": rounded, "setup_seconds": setups}, indent=0)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        temporary.write_text(text + "\n", encoding="utf-8")
        temporary.replace(self.path)

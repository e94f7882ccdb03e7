"""Every --help example and every line of the README's "What it answers" runs as pasted, from a
clone's root, in the order a user would try them (a command that reads a file runs after the one
that writes it)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from pcieperf.cli.examples import AFTER, EXAMPLES, ordered, readme_lines
from tests.helpers import ROOT, SHARED
from tests.helpers.dpdk import NOTHING_LEFT, leftovers_of, needs_dpdk, needs_testpmd
from tests.helpers.scripts import golden_json

# The examples run in order in one clone (a later one reads what an earlier one made): the
# whole walk or none of it, so the fast tier leaves the module out.
pytestmark = pytest.mark.slow

RUN_S = 600  # a generous deadline per example on a loaded 2-core machine
NEEDS = {"capture run": needs_dpdk, "capture show": needs_dpdk, "dpdk run": needs_testpmd}
README_NEEDS = (  # what a README line needs besides the files earlier lines write
    (re.compile(r"capture (run|show)"), needs_dpdk),
    (re.compile(r"dpdk run|--from-run"), needs_testpmd),
)
# Lines that read the pcie-bench results `data import` stores from ../shared/data.
STORED_RESULTS = re.compile(r"data (show|plot)")
OUTPUT = re.compile(r"(?:-o|--out)\s+(\S+)")


def _needs_shared(line: str) -> bool:
    """Whether a line reads the measured data, itself or as `data import` stored it."""
    return "../shared/data" in line or STORED_RESULTS.search(line) is not None


def _clone(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder laid out as a clone's root (as the golden replay makes it), so that outputs
    land in the folder only."""
    return golden_json.clone(tmp_path_factory.mktemp(name))


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The clone the help examples run in."""
    return _clone(tmp_path_factory, "examples")


@pytest.fixture(scope="module")
def readme_clone(tmp_path_factory):
    """The clone the README's lines run in, and the outputs of lines that could not run."""
    return _clone(tmp_path_factory, "readme"), set()


def _run(line: str, work: Path) -> int:
    """One pasted line in `work`, with a store of its own: exit 0 and some output. Its process
    id: bash replaces itself by the line's one command (`exec`), so it is pcieperf's."""
    env = os.environ | {"PCIEPERF_DB": str(work / "store.duckdb"), "COLUMNS": "100"}
    with subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=RUN_S)
        except subprocess.TimeoutExpired:
            proc.kill()  # no process outlives its test
            raise
    assert proc.returncode == 0, f"{line}\n{err}"
    assert out.strip(), line
    return proc.pid


def test_every_example_is_run_once():
    assert set(AFTER) <= set(EXAMPLES)
    assert sorted(line for _, line in ordered()) == sorted(set(EXAMPLES.values()))


@pytest.mark.parametrize(("key", "line"), ordered(), ids=[key for key, _ in ordered()])
def test_example_runs_as_pasted(key, line, clone):
    if _needs_shared(line) and not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (set PCIEPERF_SHARED_DATA)")
    mark = NEEDS.get(key) or NEEDS.get(" ".join(line.split()[1:3]))
    if mark is not None and mark.args[0]:
        pytest.skip(mark.kwargs["reason"])
    pid = _run(line, clone)
    if mark is needs_dpdk:
        assert leftovers_of(pid) == NOTHING_LEFT


@pytest.mark.parametrize("line", readme_lines((ROOT / "README.md").read_text()))
def test_readme_line_runs_as_pasted(line, readme_clone):
    work, not_made = readme_clone
    marks = [mark for pattern, mark in README_NEEDS if pattern.search(line)]
    why = [m.kwargs["reason"] for m in marks if m.args[0]]
    if _needs_shared(line) and not SHARED.is_dir():
        why.append(f"{SHARED} is absent (set PCIEPERF_SHARED_DATA)")
    if missing := not_made & set(line.split()):
        why.append(f"an earlier line could not make {', '.join(sorted(missing))}")
    if why:
        not_made.update(OUTPUT.findall(line))
        pytest.skip("; ".join(why))
    pid = _run(line, work)
    if needs_dpdk in marks:
        assert leftovers_of(pid) == NOTHING_LEFT

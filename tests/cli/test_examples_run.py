"""Every --help example runs as pasted, from a clone's root, in the order a user would try them
(a command that reads a file runs after the one that writes it)."""

import os
import subprocess

import pytest

from pcieperf.cli._parser import EXAMPLES
from tests.capture.test_capture_run import _leftovers, needs_dpdk
from tests.dpdk.test_testpmd import needs_testpmd
from tests.helpers import ROOT, SHARED

RUN_S = 600  # a generous deadline per example on a loaded 2-core machine
# Examples that need what a user makes first, after what makes it (each key once, in this
# order; the rest run before them in EXAMPLES' order).
AFTER = (
    "data import",
    "data show",
    "data plot",
    "bench predict",
    "validate",
    "counters import",
    "counters ls",
    "counters show",
    "counters rm",
    "capture run",
    "capture show",
)
NEEDS = {"capture run": needs_dpdk, "capture show": needs_dpdk, "dpdk run": needs_testpmd}


def _ordered() -> list[tuple[str, str]]:
    """Each distinct example line once (a group repeats one of its commands'), in run order."""
    keys = [k for k in EXAMPLES if k not in AFTER] + list(AFTER)
    seen, ordered = set(), []
    for key in keys:
        line = EXAMPLES[key]
        if line not in seen:
            seen.add(line)
            ordered.append((key, line))
    return ordered


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A folder laid out as a clone's root: tests/ as the repository's, and ../shared/data where
    the measured data is (a link to it), so that outputs land in the folder only."""
    top = tmp_path_factory.mktemp("examples")
    work = top / "pcieperf"
    work.mkdir()
    (work / "tests").symlink_to(ROOT / "tests")
    (top / "shared").mkdir()
    if SHARED.is_dir():
        (top / "shared" / "data").symlink_to(SHARED)
    return work


def test_every_example_is_run_once():
    assert set(AFTER) <= set(EXAMPLES)
    assert sorted(line for _, line in _ordered()) == sorted(set(EXAMPLES.values()))


@pytest.mark.parametrize(("key", "line"), _ordered(), ids=[key for key, _ in _ordered()])
def test_example_runs_as_pasted(key, line, clone):
    if "../shared/data" in line and not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (set PCIEPERF_SHARED_DATA)")
    mark = NEEDS.get(key) or NEEDS.get(" ".join(line.split()[1:3]))
    if mark is not None and mark.args[0]:
        pytest.skip(mark.kwargs["reason"])
    before = _leftovers() if mark is needs_dpdk else None
    env = os.environ | {"PCIEPERF_DB": str(clone / "store.duckdb"), "COLUMNS": "100"}
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_S,
        check=False,
    )
    assert done.returncode == 0, f"{line}\n{done.stderr}"
    assert done.stdout.strip(), line
    if before is not None:
        assert _leftovers() == before

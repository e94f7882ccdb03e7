"""Test-wide settings: property tests must not depend on the machine being idle or fast.

Hypothesis' per-example deadline (200 ms) and its too-slow health check both measure the
machine, so they are off; CI draws the same examples on every run (derandomize). Set
HYPOTHESIS_PROFILE=explore to draw new examples, as a fuzzing session would.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import SHARED, durations

_NOT_ABOUT_SPEED = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=_NOT_ABOUT_SPEED
)
settings.register_profile(
    "explore", deadline=None, max_examples=2000, suppress_health_check=_NOT_ABOUT_SPEED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tests read the text output's lines whole: where a line wraps at the terminal's width is
# tested on its own (tests/cli/test_text_width.py, which sets COLUMNS for each command).
os.environ["COLUMNS"] = "1000"


@pytest.fixture(scope="session", autouse=True)
def own_store(tmp_path_factory):
    """The store and the user's data folder beside it (`PCIEPERF_DB`) are the tests' own: no
    test reads the user's stored runs or the calibration `capture calibrate --here` made for
    this machine (a test that wants one sets its own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PCIEPERF_DB", str(tmp_path_factory.mktemp("data") / "store.duckdb"))
        yield


@pytest.fixture(scope="module")
def local2():
    """A local cluster of two worker processes, as `--scheduler local:2` starts it."""
    from pcieperf import engine  # here, so that tests without a cluster never load dask

    with engine.connect(engine.parse_scheduler("local:2")) as client:
        client.wait_for_workers(2, timeout=300)
        yield client


@pytest.fixture
def cpu_hog():
    """A busy loop on every CPU while the test runs (issue 41: a killed run must take its DPDK
    processes down under load too); stopped, whatever the test does, at its end."""
    spin = "while True: pass"
    hogs = [
        subprocess.Popen([sys.executable, "-c", spin], start_new_session=True)
        for _ in range(len(os.sched_getaffinity(0)))
    ]
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


def pytest_report_header(config) -> str:
    """Say once, at the top, whether the measured data is there (each test that needs it
    skips, naming the folder)."""
    if SHARED.is_dir():
        return f"measured data: {SHARED}"
    return (
        f"measured data: {SHARED} is absent: the tests that read it skip; "
        "set PCIEPERF_SHARED_DATA=DIR to point at a copy"
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    """--record-durations FILE: each test's seconds, for the fast tier (tests/helpers/durations)."""
    parser.addoption(
        "--record-durations",
        metavar="FILE",
        default=None,
        help="write each test's seconds here (the fast tier's tests/durations.json)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Record the durations where asked."""
    path = config.getoption("--record-durations")
    if path is not None:
        config.pluginmanager.register(durations.Recorder(Path(path)), "pcieperf-durations")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests the recorded run found slow are marked `slow` (the fast tier leaves them out),
    and the modules run longest first (xdist's workers then finish together)."""
    durations.mark_slow(items)
    durations.longest_first(items)

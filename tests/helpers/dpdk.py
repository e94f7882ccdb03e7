"""What the tests that run real DPDK share: whether dpdk-testpmd (and, for captures, root,
hugepages and dpdk-dumpcap) are here, and what a capture run could leave behind."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from pcieperf.capture import hugepages, run
from pcieperf.dpdk import testpmd
from tests.helpers import TESTS_DATA

HAVE_TESTPMD = shutil.which("dpdk-testpmd") is not None and len(os.sched_getaffinity(0)) >= 2
needs_testpmd = pytest.mark.skipif(
    not HAVE_TESTPMD,
    reason="dpdk-testpmd (Debian dpdk-dev; .ci/run installs it) or a second CPU is missing",
)

REAL = shutil.which("dpdk-testpmd") and shutil.which("dpdk-dumpcap")
needs_dpdk = pytest.mark.skipif(
    not REAL or os.geteuid() != 0 or not (hugepages.POOL / "nr_hugepages").exists(),
    reason="needs root, 2 MiB hugepages and Debian's dpdk-dev (dpdk-testpmd, dpdk-dumpcap); "
    ".ci/run installs dpdk-dev and runs as root",
)
PREFIX = "pcieperf-capture-"


def leftovers() -> dict:
    """What a capture run could leave behind: its processes, hugetlbfs mounts of its own,
    runtime folders, tmpfs files, and the hugepage count."""
    mounts = [
        line for line in Path("/proc/mounts").read_text().splitlines() if "pcieperf-huge" in line
    ]
    procs = subprocess.run(["pgrep", "-f", PREFIX], capture_output=True, text=True).stdout.split()
    return {
        "processes": procs,
        "mounts": mounts,
        "runtime": sorted(p.name for p in testpmd.runtime_dir(PREFIX).parent.glob(PREFIX + "*")),
        "tmpfs": sorted(p.name for p in run.TMPFS.glob(f".{PREFIX}*")),
        "hugepages": (hugepages.POOL / "nr_hugepages").read_text().strip(),
        "null_is_a_device": stat.S_ISCHR(os.stat(os.devnull).st_mode),  # never removed
    }


RECORDED_RUN = TESTS_DATA / "capture" / "dumpcap-64-null.json"
"""A real `capture run` (dumpcap, 64 B, /dev/null), recorded on the dev VM by an earlier
version: it lacks the columns added since."""


def recorded_run_row() -> dict:
    """RECORDED_RUN as a row of today's columns, those added since it was recorded left NULL
    (as the store's migration leaves them for the runs it held)."""
    import json

    from pcieperf.measure.store_schema import CAPTURE_RUN_COLUMNS

    row = json.loads(RECORDED_RUN.read_text())
    return {name: row.get(name) for name in CAPTURE_RUN_COLUMNS}

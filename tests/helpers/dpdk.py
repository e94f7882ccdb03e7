"""What the tests that run real DPDK share: whether dpdk-testpmd (and, for captures, root,
hugepages and dpdk-dumpcap) are here, and what a capture run could leave behind."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from pcieperf import statedir
from pcieperf.capture import hugepages, leftovers, run
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
PREFIX = leftovers.RUN_PREFIX


def leftovers_of(pid: int) -> dict:
    """What the capture run of process `pid` could leave behind, and only that (other runs may
    go on beside the test): its DPDK processes, its hugetlbfs mount, its record in the state
    folder, its private folders (links, tmpfs sink) and EAL's runtime folder of its prefix. Its
    hugepage count is put back before its record goes (`leftovers.Recorder.close`)."""
    tag = f"{PREFIX}{pid}-"
    state = statedir.folder()
    huge = str(state / f"huge-{pid}-")
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(huge)
    ]
    procs = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()
    return {
        "processes": procs,
        "mounts": mounts,
        "records": statedir.names(f"capture-{pid}-*.json"),
        "folders": sorted(p.name for p in [*state.glob(f".{tag}*"), *state.glob(f"huge-{pid}-*")]),
        "runtime": sorted(p.name for p in testpmd.runtime_dir(PREFIX).parent.glob(tag + "*")),
        "tmpfs": sorted(p.name for p in run.TMPFS.glob(f".{tag}*")),
        "null_is_a_device": stat.S_ISCHR(os.stat(os.devnull).st_mode),  # never removed
    }


NOTHING_LEFT = {
    "processes": [],
    "mounts": [],
    "records": [],
    "folders": [],
    "runtime": [],
    "tmpfs": [],
    "null_is_a_device": True,
}


RECORDED_RUN = TESTS_DATA / "capture" / "dumpcap-64-null.json"
"""A real `capture run` (dumpcap, 64 B, /dev/null), recorded on the dev VM by an earlier
version: it lacks the columns added since."""


def recorded_run_row() -> dict:
    """RECORDED_RUN as a row of today's columns, those added since it was recorded left NULL
    (as the store's migration leaves them for the runs it held)."""
    import json

    from pcieperf.capture.stored import RUN_COLUMNS

    row = json.loads(RECORDED_RUN.read_text())
    return {name: row.get(name) for name in RUN_COLUMNS}

"""The run's hugetlbfs mount comes off even while another process holds it: a DPDK process
starting elsewhere opens every hugetlbfs mount it finds (EAL's hugepage scan), and a capture
run's `umount` then fails "target is busy" (seen when two test suites ran side by side)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pcieperf.capture import hugepages

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not (hugepages.POOL / "nr_hugepages").exists(),
    reason="mounting hugetlbfs needs root and 2 MiB hugepages; .ci/run runs as root",
)
HOLD = "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); print('held', flush=True); "
HOLD += "sys.stdin.readline()"


@needs_root
def test_a_busy_mount_is_detached_not_left(tmp_path):
    folder = tmp_path / "huge"
    folder.mkdir()
    subprocess.run(
        ["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", str(folder)], check=True
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"  # the mount is busy from here on
        hugepages.unmount(folder)
        assert not hugepages.is_hugetlbfs(folder)  # detached: gone from /proc/mounts
    finally:
        holder.communicate("\n", timeout=60)
        if hugepages.is_hugetlbfs(folder):  # the test failed: still clean up
            subprocess.run(["umount", "-l", str(folder)], check=False)
    folder.rmdir()

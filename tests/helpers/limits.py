"""The CLI run in a child process under a hard memory limit (issue 28): the limit on its
address space (RLIMIT_AS, set in the child before it starts) is where the run fails if its
memory grows with the input; the child also reports its peaks as Linux counts them."""

import json
import os
import resource
import subprocess
import sys
from typing import NamedTuple

# Runs the CLI, then reports its exit status and peaks (VmHWM: resident; VmPeak: address space).
PEAKS = """
import json, sys
from pcieperf.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
peak = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "VmPeak")}
print(json.dumps({"rss_kib": peak["VmHWM"], "address_kib": peak["VmPeak"]}), file=sys.stderr)
sys.exit(code)
"""


class Run(NamedTuple):
    """A child's exit status, output, and peaks in KiB (None where it died before reporting)."""

    code: int
    stdout: str
    stderr: str
    rss_kib: int | None
    address_kib: int | None


def run_limited(
    argv: list[str],
    address_kib: int | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> Run:
    """`pcieperf ARGV` in a fresh interpreter, its address space limited to `address_kib`,
    `env` added to its environment. glibc's malloc reserves 64 MiB of address space per arena,
    up to 8 a core, so the address space varied by ~60 MB from run to run of one command; two
    arenas keep it to what is used (MALLOC_ARENA_MAX, mallopt(3))."""

    def limited() -> None:
        if address_kib is not None:
            limit = address_kib * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", PEAKS, *argv],
        input=stdin,
        capture_output=True,
        env=os.environ | {"MALLOC_ARENA_MAX": "2"} | (env or {}),
        preexec_fn=limited,
        check=False,
    )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    last = stderr.strip().splitlines()[-1:] or [""]
    peaks = json.loads(last[0]) if last[0].startswith('{"rss_kib"') else {}
    return Run(
        done.returncode,
        stdout,
        stderr,
        peaks.get("rss_kib"),
        peaks.get("address_kib"),
    )

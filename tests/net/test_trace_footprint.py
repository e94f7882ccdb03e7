"""What the capture commands cost as whole processes (issue 15): `trace stats`, `merge` and
`convert` import none of numpy, duckdb, scipy or matplotlib, and `trace merge` of 64 inputs
peaks below 32 MiB of resident memory, interpreter included."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pcieperf._native import core
from pcieperf.net.trace.synthesis import SYNTH_START_NS

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from Linux /proc"
)

# Runs the CLI in a fresh interpreter, then reports its peak resident memory (VmHWM, KiB) and
# which heavy modules were really loaded (a lazily registered module is not).
RUN = """
import json, sys
from pcieperf.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
loaded = [
    m for m in ("numpy", "duckdb", "scipy", "matplotlib", "pandas")
    if m in sys.modules and type(sys.modules[m]).__name__ != "_LazyModule"
]
peak = int(status.split("VmHWM:")[1].split()[0])
print(json.dumps({"code": code, "peak_kib": peak, "loaded": loaded}), file=sys.stderr)
"""


def run(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, check=True
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def write_inputs(folder: Path, count: int) -> list[str]:
    """`count` interleaved captures of 1000 60-byte frames each."""
    paths = []
    for k in range(count):
        path = folder / f"in{k}.pcap"
        writer = core().TraceWriter(str(path), "pcap", 1, 0)
        n = 1000
        ts = SYNTH_START_NS + k + np.arange(n, dtype=np.int64) * count
        lens = np.full(n, 60, dtype=np.uint32)
        frame = np.zeros(60, dtype=np.uint8)
        writer.write_batch(ts, np.zeros(n, np.uint32), lens, lens, frame, np.zeros(n, np.uint64))
        writer.close()
        paths.append(str(path))
    return paths


def test_capture_commands_load_no_heavy_module_and_stay_small(tmp_path):
    inputs = write_inputs(tmp_path, 64)
    merged = str(tmp_path / "merged.pcapng")
    for argv, label in [
        (["trace", "merge", *inputs, "-o", merged, "--json"], "merge of 64 inputs"),
        (["trace", "convert", inputs[0], "-o", str(tmp_path / "c.pcapng")], "convert"),
        (["trace", "stats", "--json", merged, *inputs[:3]], "stats"),
    ]:
        got = run(*argv)
        assert (got["code"], got["loaded"]) == (0, []), label
        # Issue 15: below 32 MiB for the whole process. Every input's read buffer is filled
        # whole at the start, so 64 small inputs hold as much as 64 large ones.
        assert got["peak_kib"] < 32 * 1024, label

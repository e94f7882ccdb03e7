"""What the model tests share: the PCIe links hypothesis draws, and a probe of which heavy
modules a CLI command really imports (issue 15 item 4: light commands start without numpy)."""

import json
import subprocess
import sys

from hypothesis import strategies as st

from pcieperf.pcie.link import Link

links = st.builds(
    Link,
    gen=st.sampled_from([1, 2, 3, 4, 5, 6]),
    lanes=st.sampled_from([1, 2, 4, 8, 16]),
    mps=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
    mrrs=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
    rcb=st.sampled_from([64, 128]),
    addr64=st.booleans(),
    ecrc=st.booleans(),
    completion_policy=st.sampled_from(["rcb", "mps"]),
)
"""Every kind of link the closed forms see (Gen 6 runs in Flit mode)."""

PROBE = """
import json, sys
from pcieperf.cli import main
code = main(sys.argv[1:])
loaded = [m for m in ("numpy", "pandas") if m in sys.modules
          and type(sys.modules[m]).__name__ != "_LazyModule"]
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def probe(*argv: str) -> dict:
    """Run the CLI with `argv` in a fresh interpreter: its exit code, and which of numpy and
    pandas it really loaded (one that importlib's LazyLoader registered but nothing used is
    not)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    return json.loads(done.stderr.strip().splitlines()[-1])

"""What more than one test module needs, one place per concept: the paths below, `cli` (running
the CLI in-process, every command walked from its parser), `captures` (capture files written
byte by byte, tshark's reading of them), `hosts` (the simulator's test host and device),
`counters` (pcm-iio files written from rates) and `stats_oracle` (the numpy capture statistics
the Rust ones are checked against).

Paths are constants here, never `Path(__file__)` arithmetic in a test module, so that a test
module can move without its paths breaking."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TESTS_DATA = ROOT / "tests" / "data"  # the test suite's own files
# ../shared/data: the measured data, read-only; PCIEPERF_SHARED_DATA points at a copy elsewhere
SHARED = Path(os.environ.get("PCIEPERF_SHARED_DATA") or ROOT.parent / "shared" / "data")
PCIE_BENCH = SHARED / "pcie-bench"  # tests that need it skip when it is absent
CAPTURES = SHARED / "captures"  # tests that need it skip when it is absent

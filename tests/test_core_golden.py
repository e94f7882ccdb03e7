"""The Rust core's models give, bit for bit, what they gave before issue 15's speed work:
every call the Python models made into `simulate`, `port_misses` and `port_simulate` for a
spread of pcie-bench points and DPDK port setups was recorded with its result at 5d588da,
before the speed work was merged (tests/data/core_golden/make.py), and is replayed here. Exact
equality: a faster IOTLB, DDIO model, address stream or event loop must not move a single count
or nanosecond."""

import json

import pytest

from pcieperf._native import core
from tests.helpers import TESTS_DATA
from tests.helpers.scripts import load

DATA = TESTS_DATA / "core_golden"
make = load(DATA / "make.py")
CALLS = json.loads((DATA / "calls.json").read_text())


def test_the_recording_covers_every_core_model():
    # make.py: 12 pcie-bench points, 7 port setups timed with and without the IOMMU (14 runs)
    # plus the timed light-state runs that the reported misses now come from (2), and 3 IOTLB
    # shapes counted only.
    functions = [c["function"] for c in CALLS]
    assert (functions.count("simulate"), functions.count("port_simulate")) == (12, 16)
    assert functions.count("port_misses") >= 3


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c["function"])
def test_core_output_is_bit_identical_to_the_recording(call):
    out = getattr(core(), call["function"])(*call["args"])
    # JSON keeps floats exactly (shortest repr round-trips), so == is bit equality. Keys added
    # since (port_simulate's `batches` and `rate_rel_stderr`, issue 29) are not in the
    # recording; every recorded one must be there, unchanged.
    recorded = call["out"]
    assert {k: v for k, v in make.outputs(out).items() if k in recorded} == recorded

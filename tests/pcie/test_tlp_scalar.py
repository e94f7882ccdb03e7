"""The TLP closed forms on Python ints (a `dma` command line's few sizes, which must start
without numpy: issue 15 item 4) against the same closed forms on numpy arrays: equal bit for
bit, and the switch between them (`SCALAR_SIZES`, numpy in use or not)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.errors import UsageError
from pcieperf.pcie import tlp
from pcieperf.pcie.link import Link
from tests.helpers.models import links, probe

FIELDS = ("effective_gbps", "tlps_up", "tlps_down", "bytes_up", "bytes_down")


@pytest.fixture
def numpy_unused(monkeypatch):
    """`dma_rows` as in a process that has not used numpy yet (this one has)."""
    monkeypatch.setattr(tlp._numpy, "in_use", lambda: False)


@settings(max_examples=300)
@given(
    link=links,
    flit=st.booleans(),
    op=st.sampled_from(tlp.OPS),
    sizes=st.lists(st.integers(1, 1 << 31), min_size=1, max_size=tlp.SCALAR_SIZES),
    offset=st.integers(0, (1 << 40) + 5),
)
def test_scalar_rows_equal_the_vectorised_ones(link, flit, op, sizes, offset):
    # Gen 4/5 may run in Flit mode too (the OHC terms); Gen 6 always does.
    if flit and link.gen in (4, 5):
        link = Link(gen=link.gen, lanes=link.lanes, mps=link.mps, mrrs=link.mrrs, flit=True)
    with pytest.MonkeyPatch.context() as numpy_unused:
        numpy_unused.setattr(tlp._numpy, "in_use", lambda: False)
        few = tlp.dma_rows(link, op, sizes, offset)
    many = tlp.dma_rows(link, op, np.array(sizes), offset)
    assert isinstance(few.tlps_up, list)
    for name in FIELDS:
        # Exactly equal, floats included: the same operations in the same order.
        assert getattr(few, name) == getattr(many, name).tolist(), name


def test_scalar_rows_by_hand(numpy_unused):
    # Gen3 x8, MPS 256: a 1500 B write is 6 MWr of 24 B header+framing (4 DW header + 8 B
    # framing/LCRC), 1500 + 6 * 24 = 1644 B up; a 64 B read at offset 2 touches 17 DWs
    # (68 B back) in 2 RCB blocks of 64 B: 2 CplD of 12 + 8 B, 68 + 40 = 108 B down.
    link = Link(gen=3, lanes=8, mps=256, mrrs=512, rcb=64)
    assert tlp.dma_rows(link, "write", [1500], 0).bytes_up == [1644]
    assert tlp.dma_rows(link, "write", [1500], 0).tlps_up == [6]
    read = tlp.dma_rows(link, "read", [64], 2)
    assert (read.tlps_up, read.bytes_up, read.tlps_down, read.bytes_down) == ([1], [24], [2], [108])
    # Gb/s: the link's TLP bytes/s over the busier direction's bytes, times the data bits.
    assert read.effective_gbps == [link.tlp_bytes_per_s / 108 * (64 * 8) / 1e9]


@pytest.mark.parametrize(
    ("sizes", "offset", "message"),
    [
        ([64, 0, -1], 0, "size 0 is not allowed; use 1 or more"),
        ([64], -3, "offset -3 is not allowed; use 0 or more"),
    ],
)
def test_scalar_path_names_the_bad_value_as_numpy_does(sizes, offset, message):
    # The same one-line error either way (the first bad size, then the offset).
    with pytest.raises(UsageError, match=f"^{message}$"):
        tlp._scalar_sizes(sizes, offset)
    with pytest.raises(UsageError, match=f"^{message}$"):
        tlp.dma_rows(Link(), "write", np.array(sizes), offset)


def test_scalar_path_checks_the_operation(numpy_unused):
    with pytest.raises(UsageError, match=r"^operation 'copy' is not allowed"):
        tlp.dma_rows(Link(), "copy", [64], 0)


def test_few_int_sizes_take_the_scalar_path_before_numpy_is_used(numpy_unused):
    # Gen3 MPS 256, MRRS 512: 64 B at 3 is 1 MWr + 1 MRd; [3, 1503) is 6 MWr + 3 MRd.
    assert tlp.dma_rows(Link(), "rw", [64, 1500], 3).tlps_up == [2, 9]


@pytest.mark.parametrize(
    ("sizes", "offset"),
    [
        (list(range(1, tlp.SCALAR_SIZES + 2)), 0),  # more than SCALAR_SIZES sizes
        ([64, 128.0], 0),  # a float
        ([64], np.int64(3)),  # a numpy offset
        ([64], 1 << 62),  # beyond where int64 arithmetic is safe
        ((), 0),  # no sizes
    ],
)
def test_other_inputs_take_the_vectorised_path(numpy_unused, sizes, offset):
    assert isinstance(tlp.dma_rows(Link(), "rw", sizes, offset).tlps_up, np.ndarray)


def test_once_numpy_is_used_every_call_is_vectorised():
    # This process uses numpy, which is then faster at any count (a sweep calls `dma` often).
    assert isinstance(tlp.dma_rows(Link(), "rw", [64], 0).tlps_up, np.ndarray)


@pytest.mark.parametrize(
    "argv",
    [
        ["dma", "--json"],  # default sizes
        ["dma", "--op", "rw", "--sizes", "1,64,1500,4097", "--offset", "3", "--gen", "6"],
        ["dma", "--format", "csv", "--op", "read", "--mps", "128", "--addr32", "--ecrc"],
    ],
)
def test_dma_with_a_few_sizes_imports_neither_numpy_nor_pandas(argv):
    assert probe(*argv) == {"code": 0, "loaded": []}


def test_dma_with_many_sizes_loads_numpy():
    # The probe can fail: past SCALAR_SIZES sizes the vectorised path runs, and it sees numpy.
    sizes = ",".join(str(s) for s in range(1, tlp.SCALAR_SIZES + 2))
    assert probe("dma", "--json", "--sizes", sizes)["loaded"] == ["numpy"]


def test_effective_gbps_is_an_array_whatever_the_path(numpy_unused):
    # Its callers (report data, plots) compute on it: numpy's type either way. Gen3 x8 write
    # of 256 B: 1 MWr of 256 + 16 + 8 = 280 B, so 256 * 8 bits per 280 B of TLP capacity.
    link = Link()
    gbps = tlp.effective_gbps(link, "write", [256])
    assert isinstance(gbps, np.ndarray)
    assert gbps.tolist() == [link.tlp_bytes_per_s / 280 * (256 * 8) / 1e9]

"""Every point of a sweep is checked before any work (issue 28 item 7): a bad value anywhere in
the grid, or a combination of values the command refuses, is one line naming the point (its
number in the grid and its axis values) and what is allowed, exit 2, nothing written; the
model is never run to find it."""

import pytest

pytest.importorskip("distributed", reason="the dask extra (pip install 'pcieperf[dask]')")
pytest.importorskip("pyarrow", reason="the dask extra (pyarrow)")

from pcieperf.errors import UsageError
from pcieperf.sweep import check
from pcieperf.sweep.api import checked_plan
from pcieperf.sweep.commands import Command
from pcieperf.sweep.run import parts_dir
from tests.helpers.cli import run_cli

# (spec, the point named): points are the axes' product, the last axis fastest.
BAD = [
    # mps x gen: (128,3) (128,4) (256,3) (256,4) (100,3) (100,4); the link refuses MPS 100
    # (a power of two from 128 to 4096, PCIe Base 6.0 §7.5.3.4).
    (
        'command = "dma"\nchunk = 1\n[axes]\nmps = [128, 256, 100]\ngen = [3, 4]\n',
        "point 4 of 6 (mps=100, gen=3): MPS 100 is not allowed; use a power of two from 128",
    ),
    # Only a combination is bad: Gen 6 runs only in Flit mode (PCIe Base 6.0 §4.2.1).
    (
        'command = "dma"\nchunk = 1\n[axes]\ngen = [5, 6]\nflit = [true, false]\n',
        "point 3 of 4 (gen=6, flit=False): generation 6 runs only in Flit mode",
    ),
    # Sizes joined into one call (the vector axis): the bad size is still named alone.
    (
        'command = "dma"\n[axes]\ngen = [3, 4]\nsizes = [64, 128, 0]\n',
        "point 2 of 6 (gen=3, sizes=0): transfer size",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_point_anywhere_fails_before_any_work(tmp_path, capsys, monkeypatch, text, message):
    def never(_args):
        raise AssertionError("a point was evaluated")

    monkeypatch.setattr(check, "evaluate_chunk", never)  # the estimate's first point
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    out = tmp_path / "o.parquet"
    code, _out, err = run_cli(capsys, "sweep", str(spec), "-o", str(out))
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert message in err, err
    assert not out.exists()
    assert not parts_dir(out).exists()


def test_a_grid_too_large_to_check_point_by_point_has_each_value_checked(tmp_path, monkeypatch):
    # Above MAX_CHECKED_CALLS each axis value is checked with the other axes at their first
    # values: MPS 100 is found at the first point that has it.
    monkeypatch.setattr(check, "MAX_CHECKED_CALLS", 1)
    spec = tmp_path / "s.toml"
    spec.write_text(BAD[0][0])
    with pytest.raises(UsageError, match=r"point 4 of 6 \(mps=100, gen=3\)"):
        checked_plan(spec)


def test_a_good_grid_checks_each_point_once(tmp_path, monkeypatch):
    # 3 gens x 4 sizes joined per gen: 3 checks, one per call the evaluation would make.
    spec = tmp_path / "s.toml"
    spec.write_text('command = "dma"\n[axes]\ngen = [3, 4, 5]\nsizes = [64, 128, 256, 512]\n')
    seen = []
    monkeypatch.setattr(Command, "check", lambda _, a: seen.append((a["gen"], a["sizes"])))
    plan = checked_plan(spec)
    assert plan.points == 12
    assert seen == [(3, "64,128,256,512"), (4, "64,128,256,512"), (5, "64,128,256,512")]

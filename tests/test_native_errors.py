"""Issue 16's one error mapping: the Rust core's errors reach Python as pcieperf exceptions
(`pcieperf._native` maps them) and the CLI as one line, exit 2 for a bad value, from the
simulator (`bench sim`), the IOMMU model (`iommu sim`) and the TLP walk. They used to escape as
a bare ValueError: "internal error", exit 1."""

import re

import numpy as np
import pytest

from pcieperf._native import checked, core
from pcieperf.errors import InternalError, TraceFileError, UsageError
from pcieperf.iommu.profiles import PLATFORM_DIR
from pcieperf.net.trace.statistics import WINDOWS_NS, stats_config
from pcieperf.pcie import tlp
from tests.helpers.cli import run_cli
from tests.helpers.hosts import write_host_toml

U64 = np.uint64


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "internal error" not in lines[0]
    assert "Traceback" not in err
    return lines[0]


def device_toml(path, tags):
    """A device profile that passes Python's checks (tags is a whole number >= 0)."""
    path.write_text(
        f'name = "d"\nsource = "s"\ntags = {tags}\nread_ns = 0.0\nread_line_ns = 0.0\n'
        "write_ns = 20.0\nwrite_line_ns = 0.0\ndatapath_ns = 0.0\ndatapath_line_ns = 0.0\n"
        "fixed_latency_ns = 100.0\n"
    )
    return path


def test_bench_sim_with_no_tags_is_exit_2(tmp_path, capsys):
    # tags = 0 passes the profile's type check; the core's check_machine (sim/engine.rs) rejects it.
    host = tmp_path / "host.toml"
    write_host_toml(host)
    dev = device_toml(tmp_path / "dev.toml", tags=0)
    argv = ["bench", "sim", "--host", str(host), "--device", str(dev), "--sizes", "64"]
    code, out, err = run_cli(capsys, *argv, "--test", "BW_DMA_RD")
    assert (code, out) == (2, "")
    assert one_line(err) == (
        "pcieperf: error: bad simulation parameter: tags and posted_credits must be >= 1"
    )


def platform_with(tmp_path, name, old, new):
    """skylake-sp's profile with one parameter table's text replaced (value, low and high)."""
    text = (PLATFORM_DIR / "skylake-sp.toml").read_text()
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # walkers = 0 passes the platform's range check; Iommu::new (sim/engine.rs) rejects it.
        (
            "[iommu.walkers]\nvalue = 12\nlow = 4",
            "[iommu.walkers]\nvalue = 0\nlow = 0",
            "page walks need walkers >= 1 and finite walk times >= 0",
        ),
        # 2000 sets per LLC slice is not a power of two: Ddio::new (ddio.rs) rejects it.
        (
            "[llc.sets_per_slice]\nvalue = 2048\nlow = 2048\nhigh = 2048",
            "[llc.sets_per_slice]\nvalue = 2000\nlow = 2000\nhigh = 2000",
            "the LLC needs a power-of-two sets per slice",
        ),
    ],
    ids=["walkers", "llc-sets"],
)
def test_iommu_sim_with_a_platform_the_core_rejects_is_exit_2(tmp_path, capsys, old, new, message):
    platform = platform_with(tmp_path, "odd", old, new)
    code, out, err = run_cli(capsys, "iommu", "sim", "--platform", str(platform), "--frame", "64")
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"pcieperf: error: bad simulation parameter: {message}")


def test_tlp_walk_rejects_a_cut_that_is_no_power_of_two_as_exit_2(capsys, monkeypatch):
    # Every Link has power-of-two MPS/MRRS/RCB, so the cut is forced: 48 B completions reach
    # the core's split_aligned (tlp.rs), which names the value.
    monkeypatch.setattr(tlp, "completion_cut", lambda link: 48)
    code, out, err = run_cli(capsys, "dma", "--op", "read", "--sizes", "256", "--tlps")
    assert (code, out) == (2, "")
    assert one_line(err) == "pcieperf: error: cut must be a power of two, got 48"


@pytest.mark.parametrize(
    ("addrs", "lens", "cut", "error", "message"),
    [
        ([0], [64], 48, UsageError, "cut must be a power of two, got 48"),
        ([0, 64], [64, 0], 64, UsageError, "transfer 1 has length 0"),
        ([2**64 - 8], [16], 64, UsageError, "transfer 0 ends beyond the 64-bit address space"),
        # Arrays of different lengths are pcieperf's own bug, never a user's value.
        ([0, 64], [64], 64, InternalError, "addresses and lengths differ in count: 2 vs 1"),
    ],
    ids=["cut", "zero-length", "overflow", "mismatch"],
)
def test_the_core_s_tlp_errors_arrive_mapped(addrs, lens, cut, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        core().split_aligned(np.array(addrs, dtype=U64), np.array(lens, dtype=U64), cut)


def test_an_internal_error_from_the_core_is_exit_1_and_says_so(capsys, monkeypatch):
    def mismatched(*_args, **_kwargs):
        core().split_aligned(np.array([0, 64], dtype=U64), np.array([64], dtype=U64), 64)

    monkeypatch.setattr(tlp, "list_device_tlps", mismatched)
    code, _, err = run_cli(capsys, "dma", "--op", "read", "--sizes", "256", "--tlps")
    assert code == 1
    assert err.strip() == (
        "pcieperf: internal error: InternalError: addresses and lengths differ in count: 2 vs 1 "
        "(rerun with --debug for a traceback)"
    )


def test_file_and_glue_errors_arrive_mapped(tmp_path):
    missing = tmp_path / "none.pcap"
    with pytest.raises(TraceFileError, match=f"^{re.escape(str(missing))}: "):
        core().trace_read(str(missing))
    # The glue's own checks (a parameter dict without its entries) are bad values too; the
    # first field of SimParams (rust/core/src/sim/bench.rs) is the first one missing.
    with pytest.raises(UsageError, match=r"^missing parameter 'transactions'$"):
        core().simulate({"pattern": "seq", "ops": "read"})


def test_a_core_class_s_constructor_maps_its_errors(tmp_path):
    # TraceSynth creates its file at once: a missing folder is the file's error.
    target = tmp_path / "no" / "such.pcap"
    with pytest.raises(TraceFileError, match=f"^{re.escape(str(target))}: "):
        core().TraceSynth(str(target), "pcap", 1)


def test_a_per_file_error_comes_back_in_place_and_is_raised_mapped(tmp_path):
    # trace_stats reads many files and puts a file's error where its result would be; the
    # caller raises it (mapped) when that file's turn comes, after the files before it.
    missing = tmp_path / "none.pcap"
    found = core().trace_stats([str(missing)], stats_config(40, WINDOWS_NS))
    assert len(found) == 1
    with pytest.raises(TraceFileError, match=f"^{re.escape(str(missing))}: "):
        checked(found[0])
    assert checked({"packets": 0}) == {"packets": 0}  # a result passes through

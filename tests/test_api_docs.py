"""docs/api.md is complete and its examples run (issue 16, item 2): every public name of
`import pcieperf as pp` and of its namespaces (`pp.bench`, `pp.iommu`, `pp.store`) has a
heading there, every heading names something real, and every `python` block executes, in
document order, in a folder holding the files the examples name."""

import gzip
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

import pcieperf as pp
from tests.helpers import ROOT, SHARED, TESTS_DATA

DOC = ROOT / "docs" / "api.md"
TEXT = DOC.read_text(encoding="utf-8")
HEADING = re.compile(r"^### `(pp\.[A-Za-z_][\w.]*)", re.MULTILINE)
HEADINGS = HEADING.findall(TEXT)
BLOCK = re.compile(r"^```(python[^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
PCIE_BENCH = "pcie-bench"  # the fence tag of blocks that need a pcie-bench result directory
# the examples' host
SHARED_HOST = SHARED / "pcie-bench" / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
COUNTERS = TESTS_DATA / "counters" / "pcm-iio-skx.csv"


def expected_headings() -> set[str]:
    """`pp.<name>` for each name in `pp.__all__`, and `pp.<ns>.<name>` for each name in a
    namespace's `__all__` (a namespace without one, `pp.nic` or `pp.report`, is callable: its
    own heading)."""
    wanted = set()
    for name in pp.__all__:
        namespace = isinstance(getattr(pp, name), ModuleType)  # pp.bench, pp.nic, pp.store, ...
        exported = getattr(getattr(pp, name), "__all__", None) if namespace else None
        if exported is None or callable(getattr(pp, name)):
            wanted.add(f"pp.{name}")
        wanted |= {f"pp.{name}.{member}" for member in exported or ()}
    return wanted


def test_every_public_name_has_a_heading():
    missing = sorted(expected_headings() - set(HEADINGS))
    assert not missing, f"docs/api.md has no `### \\`NAME(...)\\`` heading for {missing}"


def test_every_heading_names_a_public_name():
    # a heading for a name that was renamed or dropped is a stale doc
    stale = sorted(set(HEADINGS) - expected_headings())
    assert not stale, f"docs/api.md documents {stale}, which `pp` does not export"


def test_each_name_has_one_heading():
    twice = sorted({h for h in HEADINGS if HEADINGS.count(h) > 1})
    assert not twice


@pytest.mark.parametrize(
    ("namespace", "helpers"),
    [
        ("bench", ["format_table", "require_new_file", "bench", "Column", "bench_device"]),
        ("store", ["require_choice", "canonical_test", "parse_result_dir", "Store"]),
        ("iommu", ["annotations", "Inputs"]),
    ],
)
def test_namespaces_export_only_their_functions(namespace, helpers):
    module = getattr(pp, namespace)
    exported = set(module.__all__)
    # what `from pcieperf.<module> import *` gives is the documented API, nothing else
    star: dict = {}
    exec(f"from {module.__name__} import *", star)
    assert set(star) - {"__builtins__"} == exported
    assert not exported & set(helpers), "a helper import is exported"
    assert all(callable(getattr(module, name)) for name in exported)
    documented = {h.split(".", 2)[2] for h in HEADINGS if h.startswith(f"pp.{namespace}.")}
    assert exported == documented


def blocks(tag: str) -> list[tuple[int, str]]:
    """The `python` blocks whose fence carries `tag` (or no tag for ""), with their line."""
    found = []
    for match in BLOCK.finditer(TEXT):
        tags = match.group(1).split()[1:]
        if tags == ([tag] if tag else []):
            found.append((TEXT.count("\n", 0, match.start()) + 1, match.group(2)))
    return found


def test_blocks_carry_known_tags():
    tags = {tuple(m.group(1).split()[1:]) for m in BLOCK.finditer(TEXT)}
    assert tags <= {(), (PCIE_BENCH,)}, "a block no test runs"
    assert len(blocks("")) >= 30  # the sections' examples (counted in docs/api.md)


def make_inputs(folder: Path) -> None:
    """The files the examples name: small synthetic captures and a pcm-iio sample."""
    for name in ("in.pcapng", "a.pcap", "b.pcapng", "port1.pcapng", "port2.pcapng"):
        pp.synth_capture(folder / name, sizes="64:1,1518:1", pps="1M", duration="1ms")
    (folder / "day1").mkdir()
    for name in ("x.pcap", "y.pcap"):
        pp.synth_capture(folder / "day1" / name, sizes="imix", pps="2M", duration="1ms")
    pp.synth_capture(folder / "old.pcap", duration="1ms")
    (folder / "old.pcap.gz").write_bytes(gzip.compress((folder / "old.pcap").read_bytes()))
    shutil.copy(COUNTERS, folder / "pcm-iio.csv")


def run_blocks(found: list[tuple[int, str]], folder: Path, monkeypatch) -> None:
    """Execute the blocks in order in one namespace, as a notebook would, in `folder`."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PCIEPERF_DB", str(folder / "store.duckdb"))
    namespace = {"pp": pp}
    for line, code in found:
        try:
            exec(compile(code, f"docs/api.md:{line}", "exec"), namespace)
        except Exception as error:  # the block's line in docs/api.md, not this file's
            pytest.fail(f"the example at docs/api.md line {line} raised {error!r}")


def test_examples_run(tmp_path, monkeypatch):
    make_inputs(tmp_path)
    run_blocks(blocks(""), tmp_path, monkeypatch)
    # the examples wrote what they say they write
    assert (tmp_path / "merged.pcapng").is_file()
    assert (tmp_path / "report" / "index.html").is_file()


@pytest.mark.skipif(not SHARED_HOST.is_dir(), reason=f"the pcie-bench data {SHARED_HOST} is absent")
def test_pcie_bench_examples_run(tmp_path, monkeypatch):
    (tmp_path / "pcie-bench").symlink_to(SHARED / "pcie-bench")
    found = blocks(PCIE_BENCH)
    assert len(found) == 8  # load, calibrate, predict, validate, data_import, _ls, _show, _plot
    run_blocks(found, tmp_path, monkeypatch)
    assert (tmp_path / "predicted" / "bounds.csv").is_file()
    assert (tmp_path / "window.png").is_file()  # pp.data_plot's example

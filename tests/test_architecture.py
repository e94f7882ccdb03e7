"""Data flows one way (issue 16): each package imports only the packages below it, nothing
imports the CLI, and the model packages import no store, runner or report."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pcieperf

PACKAGE = Path(pcieperf.__file__).parent
BASE = {"errors", "units", "progress", "results", "_native", "_numpy", "_values", "_config"}
BASE |= {"_callable"}
BASE |= {"outputs", "interrupts"}
# What each package or top-level module may import, as its __init__ docstring says.
ALLOWED = {
    "errors": set(),
    "results": set(),
    "units": {"errors"},
    "progress": set(),
    "_numpy": set(),
    "_callable": set(),
    "_values": {"_numpy"},
    "_native": {"errors"},
    "_config": {"errors"},
    "outputs": {"errors"},
    "interrupts": set(),
    "engine": {"errors", "progress"},
    "sweep": {"engine", "errors", "progress", "_config", "outputs"},
    "sweep_check": {"sweep", "errors", "_config"},
    "pcie": BASE,
    "net": BASE | {"pcie", "engine"},
    "pciebench": BASE | {"pcie"},
    "nic": BASE | {"pcie", "net", "pciebench"},
    "dpdk": BASE | {"pcie", "net", "nic", "pciebench"},
    "measure": BASE | {"pcie", "net", "nic", "dpdk", "pciebench"},
    "capture": BASE | {"pcie", "net", "nic", "dpdk", "pciebench", "measure"},
    "report": BASE | {"pcie", "net", "nic", "dpdk", "pciebench", "measure", "capture"},
}
UNITS = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}


def imports_of(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def unit_of(path):
    """The package (or top-level module) a source file belongs to."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def units_imported(path):
    parts = (name.split(".") for name in imports_of(path) if name.startswith("pcieperf."))
    return {p[1] for p in parts if p[1] in UNITS} - {unit_of(path)}


def test_every_package_says_what_it_may_import():
    # Each package's __init__ says what it holds and what it may import (issue 16, item 1).
    for init in PACKAGE.glob("*/__init__.py"):
        assert "May import" in init.read_text() or init.parent.name == "cli", init


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_imports_follow_the_layers(unit):
    root = PACKAGE / unit
    files = list(root.rglob("*.py")) if root.is_dir() else [PACKAGE / f"{unit}.py"]
    assert files, unit
    for path in files:
        extra = units_imported(path) - ALLOWED[unit]
        assert not extra, f"{path.relative_to(PACKAGE)} imports {sorted(extra)}"


def test_every_unit_has_a_rule():
    # A new package or top-level module must be placed in the layers above.
    assert sorted(UNITS - set(ALLOWED) - {"__init__", "cli", "__pycache__"}) == []


def test_no_module_imports_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if unit_of(path) != "cli":
            assert "cli" not in units_imported(path), path


def test_the_iommu_model_loads_no_store_and_no_runner():
    # Issue 16's acceptance: `import pcieperf.dpdk.iommu` imports neither duckdb nor the
    # testpmd runner (it used to reach both through calibrate -> store -> testpmd).
    code = (
        "import sys, pcieperf.dpdk.iommu; "
        "print(sorted(m for m in ('duckdb', 'pcieperf.dpdk.testpmd', 'pcieperf.measure.store') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_command_modules_stay_thin():
    # Issue 16: each CLI module is a thin layer (parse -> one API call -> format), none over
    # ~250 lines; a bigger one holds work that belongs in the library.
    sizes = {p.name: len(p.read_text().splitlines()) for p in (PACKAGE / "cli").glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 250} == {}


def test_no_module_is_over_600_lines():
    # Issue 16: a module a newcomer can read; a bigger one holds more than one concept.
    sizes = {p: len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {str(p.relative_to(PACKAGE)): n for p, n in sizes.items() if n > 600} == {}

"""The test suite mirrors the packages (issue 16, item 1): every folder of tests/ is a package
of src/pcieperf (tests/nic tests pcieperf.nic) and a Python package itself, test modules share
builders through tests/helpers and never import each other, and paths come from
tests/helpers' constants, so that a test module can move without breaking."""

import ast
import re
from pathlib import Path

import pytest

import pcieperf
from tests.helpers import ROOT

PACKAGE = Path(pcieperf.__file__).parent
TESTS = ROOT / "tests"
# Folders of tests/ that are no package of pcieperf, and why.
NOT_A_PACKAGE = {
    "data": "the tests' input files (each folder says how it was made)",
    "helpers": "builders and paths more than one test module needs (tests/helpers/__init__.py)",
}
SOURCES = sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts[:1])
TEST_MODULES = {p.stem for p in SOURCES if p.name.startswith("test_")}
# A path reckoned from a module's own file (its parent, parents[1], resolved or not) breaks when
# the module moves; tests/helpers' ROOT, TESTS_DATA and SHARED are the paths to use.
RELATIVE_TO_HERE = re.compile(r"\bPath\(__file__\)(\.resolve\(\))?\.parent")


def folders():
    """Every folder under tests/ that may hold tests, relative to tests/."""
    for path in sorted(TESTS.rglob("*")):
        rel = path.relative_to(TESTS)
        if path.is_dir() and rel.parts[0] != "data" and "__pycache__" not in rel.parts:
            yield rel


def imported_test_modules(source: str) -> set[str]:
    """The test modules `source` imports, however spelled (`import test_x`, `from
    tests.nic.test_x import y`, `from . import test_x`, inside a function too)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names.update(f"{node.module or ''}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {part for name in names for part in name.split(".") if part in TEST_MODULES}


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from tests.helpers.cli import run_cli", set()),
        ("import pytest\nfrom pcieperf.pcie import link", set()),
        ("from tests.pciebench.test_sim import HOST", {"test_sim"}),
        ("import test_sim", {"test_sim"}),
        ("def f():\n    from test_explain import write_pcm", {"test_explain"}),
        ("from . import test_link", {"test_link"}),
        ("from tests.nic import test_nic", {"test_nic"}),
    ],
)
def test_imports_of_test_modules_are_found(source, found):
    # The finder below on hand-written imports: each spelling of a test module import is
    # caught (the names are test modules of this suite), helpers and the library are not.
    assert imported_test_modules(source) == found


def test_no_test_module_imports_another():
    # A builder two test modules need lives in tests/helpers, once (issue 16).
    offenders = {
        str(p.relative_to(TESTS)): sorted(found)
        for p in SOURCES
        if (found := imported_test_modules(p.read_text()) - {p.stem})
    }
    assert offenders == {}


def test_every_test_folder_is_a_package_of_pcieperf():
    # tests/<pkg>/ tests pcieperf.<pkg>; a folder named after no package is a misplaced test
    # (or one more entry in NOT_A_PACKAGE, saying why).
    strays = [
        str(rel)
        for rel in folders()
        if rel.parts[0] not in NOT_A_PACKAGE and not (PACKAGE / rel / "__init__.py").is_file()
    ]
    assert strays == []
    assert {rel.parts[0] for rel in folders()} >= {"pcie", "net", "nic", "dpdk", "cli"}


def test_every_test_folder_is_a_python_package():
    # Each folder has an __init__.py, so that same-named test modules in two folders
    # (tests/nic/test_api.py, tests/pcie/test_api.py) are two modules, not one clash.
    assert [str(rel) for rel in folders() if not (TESTS / rel / "__init__.py").is_file()] == []


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ('DATA = Path(__file__).parent / "data"', True),
        ("ROOT = Path(__file__).resolve().parents[1]", True),
        ("require_new_file(__file__, force=True)", False),  # the file itself, not a folder
        ("PACKAGE = Path(pcieperf.__file__).parent", False),  # the installed package
        ('DATA = TESTS_DATA / "counters"', False),
    ],
)
def test_paths_from_a_modules_own_place_are_found(line, found):
    assert bool(RELATIVE_TO_HERE.search(line)) is found


def test_no_path_is_reckoned_from_a_test_modules_own_place():
    found = {
        f"{p.relative_to(TESTS)}:{n}": line.strip()
        for p in SOURCES
        if p.name != "test_layout.py"  # whose examples above are such paths
        and p != TESTS / "helpers" / "__init__.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if RELATIVE_TO_HERE.search(line)
    }
    assert found == {}

"""Data flows one way: no module imports the CLI, and the model modules import no report."""

import ast
from pathlib import Path

import pcieperf

PACKAGE = Path(pcieperf.__file__).parent


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


def test_no_module_imports_the_cli():
    for path in PACKAGE.glob("*.py"):
        if path.name != "cli.py":
            assert not any(n.startswith("pcieperf.cli") for n in imports_of(path)), path.name


def test_models_do_not_import_the_report():
    for name in ("link", "tlp", "ethernet", "nic", "dpdk", "units", "errors"):
        assert "pcieperf.report" not in imports_of(PACKAGE / f"{name}.py"), name

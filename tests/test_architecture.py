"""Data flows one way (issue 16): each package imports only the packages below it, nothing
imports the CLI, and the model packages import no store, runner or report."""

import ast
import functools
import itertools
import re
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import pcieperf
from tests.helpers import ROOT

PACKAGE = Path(pcieperf.__file__).parent
BASE = {"errors", "units", "progress", "results", "_native", "_numpy", "_values", "_config"}
BASE |= {"_cache"}
BASE |= {"outputs", "interrupts", "statedir", "text", "_keywords"}
# What each package or top-level module may import, as its __init__ docstring says.
ALLOWED = {
    "errors": set(),
    "results": {"text"},
    "text": {"units"},
    "units": {"errors"},
    "progress": {"interrupts"},
    "_numpy": set(),
    "_keywords": set(),
    "_values": {"_numpy"},
    "_cache": {"_numpy"},
    "_native": {"errors"},
    "_config": {"errors", "_cache"},
    "outputs": {"errors", "interrupts"},
    "interrupts": set(),
    "statedir": {"errors"},
    "engine": {"errors", "progress", "interrupts", "_native"},
    "pcie": BASE,
    "net": BASE | {"pcie", "engine"},
    "pciebench": BASE | {"pcie"},
    "nic": BASE | {"pcie", "net", "pciebench"},
    "dpdk": BASE | {"pcie", "net", "nic", "pciebench"},
    "iommu": BASE | {"pcie", "net", "nic", "dpdk", "pciebench"},
    "measure": BASE | {"pcie", "net", "nic", "dpdk", "iommu", "pciebench"},
    "capture": BASE | {"pcie", "net", "nic", "dpdk", "iommu", "pciebench", "measure"},
    "report": BASE
    | {"pcie", "net", "nic", "dpdk", "iommu", "pciebench", "measure", "capture", "devices"},
    # above the model packages, like capture and report: it evaluates their API functions
    "sweep": BASE | {"pcie", "net", "nic", "dpdk", "iommu", "pciebench", "engine"},
    # above the models it prices a machine's NICs with, beside capture: nothing below imports it
    "devices": BASE | {"pcie", "net", "nic", "dpdk", "iommu", "pciebench"},
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


# The `pp.iommu` namespace hands on `fit` from measure (it reads counter files), at first use.
NAMESPACE_IMPORTS = {PACKAGE / "iommu" / "__init__.py": {"measure"}}


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_imports_follow_the_layers(unit):
    root = PACKAGE / unit
    files = list(root.rglob("*.py")) if root.is_dir() else [PACKAGE / f"{unit}.py"]
    assert files, unit
    for path in files:
        extra = units_imported(path) - ALLOWED[unit] - NAMESPACE_IMPORTS.get(path, set())
        assert not extra, f"{path.relative_to(PACKAGE)} imports {sorted(extra)}"


def test_every_unit_has_a_rule():
    # A new package or top-level module must be placed in the layers above.
    assert sorted(UNITS - set(ALLOWED) - {"__init__", "cli", "__pycache__"}) == []


def test_no_module_imports_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if unit_of(path) != "cli":
            assert "cli" not in units_imported(path), path


def test_the_iommu_model_loads_no_store_and_no_runner():
    # Issue 16's acceptance: `import pcieperf.iommu` imports neither duckdb nor the
    # testpmd runner (it used to reach both through calibrate -> store -> testpmd).
    assert (
        loaded_by("pcieperf.iommu", ("duckdb", "pcieperf.dpdk.testpmd", "pcieperf.measure.store"))
        == []
    )


def loaded_by(modules, watched):
    """Which of the `watched` modules a fresh interpreter has loaded after importing `modules`
    (comma-separated)."""
    code = f"import sys, {modules}; print([m for m in {watched!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(out.stdout.strip())


def test_command_modules_stay_thin():
    # Issue 16: each CLI module is a thin layer (parse -> one API call -> format), none over
    # ~250 lines; a bigger one holds work that belongs in the library.
    sizes = {p.name: len(p.read_text().splitlines()) for p in (PACKAGE / "cli").glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 250} == {}


def test_no_module_is_over_600_lines():
    # Issue 16: a module a newcomer can read; a bigger one holds more than one concept.
    sizes = {p: len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {str(p.relative_to(PACKAGE)): n for p, n in sizes.items() if n > 600} == {}


RUST = ROOT / "rust"
INLINE_TEST_MODULE = re.compile(r"\s*(pub(\([\w: ]+\))? )?mod \w+ \{")


def rust_code_lines(path):
    """Lines of a Rust file before its inline test module (`#[cfg(test)]` then `mod x {`); a
    `#[cfg(test)]` helper or `mod tests;` declaration does not end the count."""
    lines = path.read_text().splitlines()
    for k, (line, after) in enumerate(itertools.pairwise(lines)):
        if line.strip() == "#[cfg(test)]" and INLINE_TEST_MODULE.match(after):
            return k
    return len(lines)


def test_rust_code_lines_stop_at_the_inline_test_module(tmp_path):
    path = tmp_path / "a.rs"
    # A test-only declaration counts; the inline test module (line 5 on) does not.
    code = ["fn a() {}", "#[cfg(test)]", "mod tests;", "fn b() {}"]
    path.write_text("\n".join([*code, "#[cfg(test)]", "mod tests {", "}"]))
    assert rust_code_lines(path) == 4


def test_no_rust_file_is_over_800_lines_of_code():
    # Issue 30: Python's guard for the Rust crates; test code (a file's #[cfg(test)] module, a
    # tests.rs, a tests/ folder) does not count.
    files = [p.relative_to(RUST) for p in RUST.rglob("*.rs")]
    files = [p for p in files if p.name != "tests.rs" and "tests" not in p.parts]
    assert files
    sizes = {str(p): rust_code_lines(RUST / p) for p in files}
    assert {name: n for name, n in sizes.items() if n > 800} == {}


def written_map(init):
    """The units a package's docstring names after "May import:", up to the end of its
    paragraph."""
    text = ast.get_docstring(ast.parse(init.read_text())) or ""
    paragraph = text.split("May import:", 1)[1].split("\n\n", 1)[0]
    for mark in ",()":
        paragraph = paragraph.replace(mark, " ")
    return {word.rstrip(".;:") for word in paragraph.split()} & UNITS


@pytest.mark.parametrize("init", sorted(PACKAGE.glob("*/__init__.py")), ids=lambda p: p.parent.name)
def test_the_written_map_names_every_unit_the_package_imports(init):
    # Issue 30, item 7: nic's docstring once left out pciebench, which nic imports. The base
    # modules (BASE) every model package may use need not be named.
    if init.parent.name == "cli":
        return
    imported = set().union(*(units_imported(p) for p in init.parent.rglob("*.py"))) - BASE
    assert imported <= written_map(init), sorted(imported - written_map(init))


# ---------------------------------------------------------------------------------------------
# Issue 30: a call graph that tools can follow, and one place where each name is defined.

SOURCES = sorted(PACKAGE.rglob("*.py"))
PUBLIC_API = PACKAGE / "__init__.py"
# `pp.iommu`: the iommu package's __init__, a namespace of API functions that live in iommu.api
# and measure.api (docs/api.md).
NAMESPACES = {PACKAGE / "iommu" / "__init__.py"}


@functools.cache
def module_file(name):
    """The source file of module `name` (a dotted pcieperf name; the Rust extension's is its
    stub, `_core.pyi`), or None for none."""
    base = PACKAGE.parent.joinpath(*name.split("."))
    files = (base.with_suffix(".py"), base.with_suffix(".pyi"), base / "__init__.py")
    return next((f for f in files if f.exists()), None)


@functools.cache
def reexported_by(path):
    """The names a module binds by importing them from another pcieperf module (each module
    parsed once: every import of every file asks)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pcieperf.")
        for alias in node.names
        if not module_file(f"{node.module}.{alias.name}")
    }


def homeless_imports(path):
    """`module.name` for each name `path` takes from a pcieperf module that only imports it
    (a re-export): `from pcieperf.a import name`, or `a.name` where `a` is a module imported by
    `from pcieperf import a` / `import pcieperf.a as a`. pcieperf itself (the public API,
    `import pcieperf as pp`) is the one module whose names are defined elsewhere."""
    tree, found, modules = ast.parse(path.read_text()), [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pcieperf."):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if module_file(sub):
                    modules[alias.asname or alias.name] = sub
                elif alias.name in reexported_by(module_file(node.module)):
                    found.append(sub)
        elif isinstance(node, ast.ImportFrom) and node.module == "pcieperf":
            modules |= {a.asname or a.name: f"pcieperf.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname: a.name for a in node.names if a.asname and module_file(a.name)}
    modules = {k: v for k, v in modules.items() if v != "pcieperf"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = modules.get(node.value.id)
            if module and node.attr in reexported_by(module_file(module)):
                found.append(f"{module}.{node.attr}")
    return found


def test_no_module_is_imported_by_a_name_in_a_string():
    # Editors and structure tools follow static imports only: no importlib.import_module or
    # __import__ of a pcieperf module, and no LazyLoader handle of one (numpy alone is
    # imported lazily, in _numpy.py).
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            called = isinstance(node, ast.Call) and getattr(node.func, "attr", None)
            called = called or (isinstance(node, ast.Call) and getattr(node.func, "id", None))
            named = [  # "pcieperf.x" or f"pcieperf.{name}"
                ast.unparse(a)
                for a in (node.args[:1] if isinstance(node, ast.Call) else [])
                if ast.unparse(a).lstrip("f").strip("'\"").startswith("pcieperf")
            ]
            assert not (
                called in ("import_module", "__import__", "find_spec", "module") and named
            ), f"{path.relative_to(PACKAGE)}:{node.lineno} imports {named} by name"
            assert called != "__import__", f"{path.relative_to(PACKAGE)}:{node.lineno}"


def test_only_the_public_api_imports_its_names_on_first_use():
    # A module-level __getattr__ hides where a name comes from; pcieperf/__init__.py keeps one
    # (`import pcieperf` must stay light), and so does the `pp.iommu` namespace (importing a
    # model module of the iommu package must not load its API); both list the same imports
    # for type checkers.
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        hooks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        assert not hooks or path == PUBLIC_API or path in NAMESPACES, path.relative_to(PACKAGE)


@pytest.mark.parametrize("folder", ["src", "tests", "benchmarks", "scripts"])
def test_every_name_is_imported_from_where_it_is_defined(folder):
    # One answer to "where is X defined" (issue 30): no re-export shims; the public API
    # (`pp.X`) and the `pp.iommu` namespace are the exceptions.
    root = PACKAGE.parents[1] / folder
    found = {
        str(path.relative_to(root)): homeless
        for path in sorted(root.rglob("*.py"))
        if path not in NAMESPACES and ".venv" not in path.parts
        if (homeless := homeless_imports(path))
    }
    assert found == {}


def test_the_public_api_imports_each_name_from_its_home():
    # pcieperf/__init__.py: what type checkers read (the TYPE_CHECKING block) is what
    # `pp.NAME` gives, and both name the module that defines it.
    tree = ast.parse(PUBLIC_API.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    for node in block.body:
        for alias in node.names:
            name = alias.asname or alias.name
            home, given = f"{node.module}.{alias.name}", getattr(pcieperf, name)
            expected = sys.modules.get(home) or getattr(import_module(node.module), alias.name)
            # pp.nic: the package, callable as nic.api.nic (nic/__init__.py)
            assert given is expected or given._api() is expected, name
            assert module_file(home) or alias.name not in reexported_by(module_file(node.module))
    assert sorted(alias.asname or alias.name for n in block.body for alias in n.names) == sorted(
        pcieperf.__all__
    )


def _type_only(tree):
    """The ids of the nodes under `if TYPE_CHECKING:` blocks of a module."""
    return {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for n in ast.walk(stmt)
    }


def _graph(include_type_only):
    """Module -> the pcieperf modules it imports, at its top level or inside a function (a
    function-local import runs when its function does, and a loop through one is a loop of
    the design all the same: issue 43 found calibration -> fit -> model -> records -> ...);
    with `include_type_only`, also under `if TYPE_CHECKING`, which make a cycle for a type
    checker."""
    graph = {}
    for path in SOURCES:
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        )
        tree = ast.parse(path.read_text())
        skipped = set() if include_type_only else _type_only(tree)
        edges = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pcieperf"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    edges.add(sub if module_file(sub) else node.module)
            elif isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.startswith("pcieperf.")}
        graph[name] = {e for e in edges if e != name and module_file(e) and e != "pcieperf"}
    return graph


def _cycle(graph):
    """One cycle of `graph` as a list of modules, or [] (depth-first search)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return []

    return next((c for n in sorted(graph) if n not in state and (c := visit(n))), [])


@pytest.mark.parametrize("include_type_only", [False, True])
def test_the_import_graph_has_no_cycle(include_type_only):
    # Issue 30's acceptance: no cycle, the imports under `if TYPE_CHECKING` included (a
    # package's __init__ importing its own submodules is no cycle: the submodule's import of
    # the package does not import the submodule back); issue 43: function-local imports too.
    assert _cycle(_graph(include_type_only)) == []


def test_the_cycle_test_sees_imports_inside_functions(tmp_path, monkeypatch):
    # Two modules that import each other only inside functions are a cycle (issue 43).
    root = tmp_path / "pcieperf"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    from pcieperf import b\n")
    (root / "b.py").write_text("def g():\n    import pcieperf.a\n")
    monkeypatch.setattr(sys.modules[__name__], "SOURCES", sorted(root.glob("*.py")))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    assert _cycle(_graph(False)) == ["pcieperf.a", "pcieperf.b", "pcieperf.a"]


def test_capture_modules_import_only_those_named_before_them():
    # Issue 43: the capture room in order. Its package docstring lists every module once, and
    # each imports (also inside a function) only modules listed before it.
    init = PACKAGE / "capture" / "__init__.py"
    text = ast.get_docstring(ast.parse(init.read_text())).split("May import:")[0]
    modules = {p.stem for p in init.parent.glob("*.py")} - {"__init__"}
    order = [w for w in re.findall(r"`(\w+)`", text) if w in modules]
    assert sorted(order) == sorted(modules)  # each named once
    graph = _graph(include_type_only=False)
    for k, name in enumerate(order):
        found = graph[f"pcieperf.capture.{name}"]
        imported = {m.split(".")[2] for m in found if m.startswith("pcieperf.capture.")}
        later = (imported & modules) - set(order[:k])
        assert not later, f"capture.{name} imports {sorted(later)}, named after it"


def test_the_capture_model_loads_no_runner_and_no_store():
    # Issue 43: `import pcieperf.capture.model` loaded the testpmd runner (through the capture
    # tools' table) and, through function-local imports, could reach the store.
    watched = ("duckdb", "pcieperf.dpdk.testpmd", "pcieperf.capture.run")
    watched += ("pcieperf.capture.records", "pcieperf.measure.store")
    assert loaded_by("pcieperf.capture.model, pcieperf.capture.fit", watched) == []


def runtime_imports(tree):
    """(module, name) of every `from pcieperf... import name` outside `if TYPE_CHECKING:`
    blocks, function-local ones included (they run when their function does)."""
    typing_only = _type_only(tree)
    for node in ast.walk(tree):
        ours = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pcieperf")
        if ours and id(node) not in typing_only and not node.level:
            yield from ((node.module, a.name) for a in node.names)


def test_every_imported_name_exists():
    # A shim removed (issue 30) must not leave a function-local import that fails only when
    # its function runs: `from pcieperf.measure.counters import BYTES_PER_S` once did.
    import importlib

    missing = []
    for path in SOURCES:
        for module, name in runtime_imports(ast.parse(path.read_text())):
            found = importlib.import_module(module)
            if not hasattr(found, name) and importlib.util.find_spec(f"{module}.{name}") is None:
                missing.append(f"{path.relative_to(PACKAGE)}: {module}.{name}")
    assert missing == []


def test_no_name_of_the_iommu_namespace_is_one_of_its_modules():
    # `pp.iommu` is the iommu package: a submodule named as one of its functions (advise.py
    # once) would take the function's place once imported, so `pp.iommu.advise(...)` broke.
    import pcieperf.iommu

    modules = {p.stem for p in (PACKAGE / "iommu").glob("*.py")}
    assert modules & set(pcieperf.iommu.__all__) == set()

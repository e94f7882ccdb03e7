"""Issue 16's one error tree: every exception class pcieperf defines lives in errors.py, its
docstring draws the tree the classes really form, and the old import names keep working."""

import ast
import re
from pathlib import Path

import pcieperf
from pcieperf import errors

PACKAGE = Path(pcieperf.__file__).parent
PYTHON_EXCEPTIONS = {"Exception", "ValueError", "UserWarning", "Warning", "RuntimeError"}


def exception_classes(path):
    """Classes a module defines whose bases name an exception: a Python one, or a class whose
    name ends in Error, Exception or Warning (every pcieperf exception is named so)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(b).split(".")[-1] for b in node.bases}
            if bases & PYTHON_EXCEPTIONS or any(
                re.search(r"(Error|Exception|Warning)$", b) for b in bases
            ):
                found.append(node.name)
    return found


def test_every_exception_class_lives_in_errors_py():
    homes = {
        path.relative_to(PACKAGE).as_posix(): exception_classes(path)
        for path in PACKAGE.rglob("*.py")
    }
    elsewhere = {home: names for home, names in homes.items() if names and home != "errors.py"}
    assert elsewhere == {}
    # The nine of the tree drawn in errors.py's docstring (checked below against the classes).
    assert sorted(homes["errors.py"]) == sorted(
        [
            "PcieperfError",
            "UsageError",
            "ProfileError",
            "TraceFileError",
            "CaptureNotFoundError",
            "InputNotFoundError",
            "CounterFileError",
            "InternalError",
            "PcieperfWarning",
        ]
    )


def test_the_finder_sees_a_class_defined_elsewhere(tmp_path):
    # The check above must be able to fail: a module with its own error class is found.
    module = tmp_path / "rogue.py"
    module.write_text(
        "from pcieperf.errors import UsageError\nclass MyError(UsageError):\n    pass\n"
    )
    assert exception_classes(module) == ["MyError"]


def drawn_tree(doc):
    """(class, parent) for every class drawn in the docstring's tree: a name at the start of a
    line or right after `├── `/`└── `; each 4 columns of indent is one level down, and the
    parent is the last name drawn one level up (None at the top)."""
    pairs, last_at = [], {}
    for line in doc.splitlines():
        match = re.match(r"^((?:[│ ]   )*[├└]── )?([A-Z]\w*(?:Error|Warning))\b", line)
        if match:
            depth = len(match.group(1) or "") // 4
            last_at[depth] = match.group(2)
            pairs.append((match.group(2), last_at.get(depth - 1)))
    return pairs


def test_the_drawn_tree_is_the_real_one():
    pairs = drawn_tree(errors.__doc__)
    assert len(pairs) == 9
    for name, parent in pairs:
        cls = getattr(errors, name)
        pcieperf_bases = [  # the exception classes; Worded is a mixin (how a message reads)
            b
            for b in cls.__bases__
            if b.__module__ == "pcieperf.errors" and issubclass(b, BaseException)
        ]
        assert [b.__name__ for b in pcieperf_bases] == ([parent] if parent else []), name


def test_usage_errors_are_value_errors_and_internal_errors_no_pcieperf_errors():
    # UsageError keeps its ValueError base (code validating with `except ValueError` sees it);
    # an InternalError is a bug: neither a bad input (exit 2) nor one that the fuzz harness
    # (fuzz/python/fuzz.py) or the CLI may take for an expected PcieperfError.
    assert issubclass(errors.TraceFileError, ValueError)
    assert issubclass(errors.CounterFileError, errors.UsageError)
    assert not issubclass(errors.InternalError, errors.PcieperfError)

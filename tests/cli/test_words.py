"""The library names parameters, the CLI flags (issue 30): a message built with `errors.param`
reads `name` from the API and `--flag` from the command line, translated in one place
(cli._words), and every parameter a library message names is set by a real option."""

import ast
import re

import pytest

import pcieperf as pp
from pcieperf.cli._words import flag_namer
from pcieperf.errors import UsageError, param
from tests.helpers import ROOT
from tests.helpers.cli import command_paths, run_cli


def _named_parameters() -> set[str]:
    """Every parameter name given literally to `param(...)` in the library."""
    names = set()
    for path in (ROOT / "src" / "pcieperf").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "param"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
    return names


def _long_options(parser) -> set[str]:
    """One command's long options."""
    return {o for action in parser._actions for o in action.option_strings if o.startswith("--")}


def test_the_library_names_the_parameter_and_the_cli_the_flag(capsys):
    # pcie/link.py: gen 6 has no non-flit mode (PCIe 6.0 §4.2.1: Flit mode only at 64 GT/s).
    with pytest.raises(UsageError) as caught:
        pp.link(gen=6, flit=False)
    assert str(caught.value) == "generation 6 runs only in Flit mode; drop `no_flit`"
    code, _, err = run_cli(capsys, "link", "--gen", "6", "--no-flit")
    assert (code, err) == (
        2,
        "pcieperf: error: generation 6 runs only in Flit mode; drop --no-flit\n",
    )


def test_a_parameter_is_shown_as_its_options_flag_or_by_the_table():
    parsers = {" ".join(words): parser for words, parser in command_paths()}
    assert flag_namer(parsers["trace merge"])("force") == "--force"
    assert flag_namer(parsers["capture run"])("lcores") == "--lcores"
    assert flag_namer(None)("format") == "--capture-format"  # capture_run(format=...)
    assert flag_namer(None)("ring_size") == "--ring-size"  # the default: dashes for _


@pytest.mark.parametrize("name", sorted(_named_parameters()))
def test_every_parameter_a_message_names_is_a_real_option(name):
    # Some command has the option the CLI would name (`no_flit` is `--flit`'s negative form).
    shown = [(flag_namer(parser)(name), _long_options(parser)) for _, parser in command_paths()]
    assert any(flag in options for flag, options in shown) or name == "no_flit"
    assert str(UsageError(f"x {param(name)} y")) == f"x `{name}` y"


ERRORS = {"UsageError", "PcieperfError", "ProfileError", "InputError"}
FLAG = re.compile(r"(?:^|[\s(])--[a-z][a-z-]+")


def _error_texts(path):
    """The string pieces of every error a library module raises."""
    for node in ast.walk(ast.parse(path.read_text())):
        raised = isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
        if raised and getattr(node.exc.func, "id", None) in ERRORS:
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield node.lineno, part.value


def test_no_library_error_names_a_flag():
    # A library error names a parameter with `param`, which the CLI shows as its flag; a
    # literal "--flag" would read wrong from the API. A command line quoted in backticks (a
    # `pcieperf ...` suggestion) is a command, not a parameter, and is allowed.
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in (ROOT / "src" / "pcieperf").rglob("*.py")
        if "cli" not in path.relative_to(ROOT / "src" / "pcieperf").parts
        for line, text in _error_texts(path)
        if FLAG.search(text) and "`" not in text
    ]
    assert found == []

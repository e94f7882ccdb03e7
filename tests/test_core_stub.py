"""The Rust core's stub (src/pcieperf/_core.pyi) says what the built module has (issue 30):
the same public names, each function, method and class with the same parameters in the same
order, the same ones with defaults, and the getters as properties."""

import ast
import inspect

import pytest

import pcieperf._core as core
from tests.helpers import ROOT

STUB = ast.parse((ROOT / "src" / "pcieperf" / "_core.pyi").read_text())


def _public(names):
    return {n for n in names if not n.startswith("_")}


def _stub_defs(body):
    """Top-level functions and classes of a stub body, by name."""
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def _stub_parameters(node: ast.FunctionDef) -> list[tuple[str, bool]]:
    """(name, has a default) per parameter, `self` left out; a Python keyword the Rust side
    uses as a name (`from`) is spelt with a trailing `_` in the stub."""
    args = node.args
    every = [*args.posonlyargs, *args.args]
    first_default = len(every) - len(args.defaults)
    return [
        (a.arg.removesuffix("_"), i >= first_default)
        for i, a in enumerate(every)
        if a.arg != "self"
    ]


def _module_parameters(obj) -> list[tuple[str, bool]]:
    """(name, has a default) per parameter of a compiled function, method or constructor, from
    the signature PyO3 writes (`__text_signature__`: inspect refuses one naming `from`)."""
    words = obj.__text_signature__.strip("()").split(", ")
    return [
        (word.split("=")[0], "=" in word)
        for word in words
        if word and word not in ("$self", "/", "*")
    ]


def test_the_stub_has_every_public_name_of_the_module():
    assert _public(_stub_defs(STUB.body)) == _public(dir(core))


@pytest.mark.parametrize("name", sorted(_public(dir(core))))
def test_each_name_has_the_module_s_parameters(name):
    obj, stub = getattr(core, name), _stub_defs(STUB.body)[name]
    if isinstance(stub, ast.FunctionDef):
        assert _stub_parameters(stub) == _module_parameters(obj)
        return
    methods = _stub_defs(stub.body)
    if issubclass(obj, Exception):
        assert not methods
        return
    init = methods.pop("__init__", None)
    if init is not None:
        assert _stub_parameters(init) == _module_parameters(obj)
    assert set(methods) == _public(dir(obj))
    for method, node in methods.items():
        member = inspect.getattr_static(obj, method)
        is_property = any(getattr(d, "id", None) == "property" for d in node.decorator_list)
        assert is_property == inspect.isgetsetdescriptor(member), method
        if not is_property:
            assert _stub_parameters(node) == _module_parameters(getattr(obj, method)), method

"""A stock distribution builds pcieperf or is told in one line what to install (issue 41): the
build backend (backend/pcieperf_build.py) checks cargo, rustc and a C compiler before handing
over to maturin, and the Rust release Cargo.toml declares is the oldest that builds the locked
dependencies."""

import json
import shutil
import subprocess
import sys
import types

import pytest

from tests.helpers import ROOT
from tests.helpers.scripts import load


@pytest.fixture
def backend(monkeypatch):
    """The backend, with a stand-in maturin that records the hooks it was asked for."""
    called = []
    maturin = types.ModuleType("maturin")
    for hook in ("build_wheel", "build_editable", "get_requires_for_build_wheel"):
        setattr(maturin, hook, lambda *a, hook=hook: called.append(hook) or [])
    monkeypatch.setitem(sys.modules, "maturin", maturin)
    module = load(ROOT / "backend" / "pcieperf_build.py")
    module.called = called
    return module


def _tools(folder, monkeypatch, **versions):
    """A PATH of stand-ins printing `name X.Y.Z` for --version (cc: anything)."""
    folder.mkdir(exist_ok=True)
    for name, version in versions.items():
        script = folder / name
        script.write_text(f"#!/bin/sh\necho '{name} {version} (stand-in)'\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CARGO", raising=False)
    monkeypatch.delenv("RUSTC", raising=False)


def test_debians_own_cargo_is_named_with_what_to_install(backend, tmp_path, monkeypatch):
    # Debian 12's cargo is 1.65 and its rustc 1.63 (packages cargo, rustc in bookworm).
    _tools(tmp_path / "bin", monkeypatch, cargo="1.65.0", rustc="1.63.0", cc="12.2.0")
    found = backend.problem()
    assert found.startswith(f"pcieperf builds its Rust core with cargo >= 1.87; {tmp_path}")
    assert "is 1.65.0 (a distribution's own is too old): install Rust with rustup" in found
    with pytest.raises(SystemExit, match=r"^error: pcieperf builds its Rust core"):
        backend.build_wheel(str(tmp_path))
    assert backend.called == []  # maturin was never asked


@pytest.mark.parametrize(
    ("versions", "said"),
    [
        ({}, "with cargo >= 1.87, not found: install Rust with rustup"),
        ({"cargo": "1.95.0"}, "with rustc >= 1.87, not found"),
        ({"cargo": "1.95.0", "rustc": "1.84.1"}, "with rustc >= 1.87;"),
        ({"cargo": "1.95.0", "rustc": "1.95.0"}, "compiles zstd's C code: no C compiler (cc)"),
    ],
)
def test_whatever_is_missing_is_named(backend, tmp_path, monkeypatch, versions, said):
    _tools(tmp_path / "bin", monkeypatch, **versions)
    assert said in backend.problem()
    with pytest.raises(SystemExit):
        backend.get_requires_for_build_editable()


def test_a_machine_that_can_build_goes_on_to_maturin(backend, tmp_path, monkeypatch):
    _tools(tmp_path / "bin", monkeypatch, cargo="1.87.0", rustc="1.87.0", cc="12")
    assert backend.problem() is None
    backend.get_requires_for_build_wheel()
    backend.build_editable(str(tmp_path))
    assert backend.called == ["get_requires_for_build_wheel", "build_editable"]


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_the_declared_rust_is_as_new_as_every_locked_dependency_needs(backend):
    done = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--offline"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cargo metadata needs the registry's crates: {done.stderr.strip()[:200]}")
    needs = [
        tuple(int(p) for p in package["rust_version"].split("."))
        for package in json.loads(done.stdout)["packages"]
        if package.get("rust_version")
    ]
    assert max(needs) <= backend.minimum_rust() == (1, 87)

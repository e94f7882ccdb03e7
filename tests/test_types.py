"""The type checks CI runs (issue 30): mypy over src/pcieperf with pyproject.toml's
[tool.mypy] settings (the public API strict), and mypy's stubtest of src/pcieperf/_core.pyi
against the built Rust extension (every name, parameter and default as the module has them).
Both need mypy, which the `test` extra installs; without it they skip, saying so."""

import shutil
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")


def _run(*args: str) -> subprocess.CompletedProcess:
    """`python -m <args>` from the repository root, its output kept for the failure message."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_mypy_finds_no_error():
    done = _run("mypy")  # files and flags: pyproject.toml [tool.mypy]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout


def test_the_core_stub_matches_the_built_module(tmp_path):
    # The stub alone, beside an empty package stub: stubtest type-checks the package of the
    # module it tests, and pcieperf's own 176 files took 22.5 s of its 27 (the stub: 4.5 s).
    stubs = tmp_path / "pcieperf"
    stubs.mkdir()
    shutil.copy(ROOT / "src" / "pcieperf" / "_core.pyi", stubs)
    (stubs / "__init__.pyi").touch()
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nmypy_path = {tmp_path}\npython_version = 3.11\n")
    done = _run("mypy.stubtest", "pcieperf._core", "--mypy-config-file", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 module" in done.stdout, done.stdout

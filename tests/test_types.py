"""The type checks CI runs (issue 30): mypy over src/pcieperf with pyproject.toml's
[tool.mypy] settings (the public API strict), and mypy's stubtest of src/pcieperf/_core.pyi
against the built Rust extension (every name, parameter and default as the module has them).
Both need mypy, which the `test` extra installs; without it they skip, saying so."""

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


def test_the_core_stub_matches_the_built_module():
    done = _run("mypy.stubtest", "pcieperf._core", "--mypy-config-file", "pyproject.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 module" in done.stdout, done.stdout

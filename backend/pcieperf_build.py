"""pcieperf's build backend (pyproject.toml [build-system], PEP 517): maturin's, after a check
that this machine can build the Rust core, so that a missing or too old toolchain stops
`pip install .` at its start with one line naming what to install, instead of a Cargo error
deep in the build (Debian 12's own cargo 1.65 cannot even read Cargo.lock)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import maturin

HERE = Path(__file__).resolve().parent.parent
RUSTUP = "install Rust with rustup (https://rustup.rs), then open a new shell or `. ~/.cargo/env`"


def minimum_rust() -> tuple[int, ...]:
    """The Rust release the workspace declares (Cargo.toml [workspace.package] rust-version)."""
    declared = tomllib.loads((HERE / "Cargo.toml").read_text())
    return _version(declared["workspace"]["package"]["rust-version"])


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _found(tool: str) -> tuple[str, tuple[int, ...]] | None:
    """Where `tool` (cargo, rustc) is and its version, or None if it is not on PATH."""
    path = shutil.which(os.environ.get(tool.upper(), tool))
    if path is None:
        return None
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout)
    return path, tuple(int(g) for g in match.groups()) if match else (0,)


def problem() -> str | None:
    """What this machine lacks to build pcieperf's Rust core, in one line (None: nothing)."""
    need = minimum_rust()
    wanted = ".".join(map(str, need))
    for tool in ("cargo", "rustc"):
        found = _found(tool)
        if found is None:
            return f"pcieperf builds its Rust core with {tool} >= {wanted}, not found: {RUSTUP}"
        path, version = found
        if version < need:
            have = ".".join(map(str, version))
            return (
                f"pcieperf builds its Rust core with {tool} >= {wanted}; {path} is {have} (a "
                f"distribution's own is too old): {RUSTUP}"
            )
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        return (
            f"pcieperf's Rust core compiles zstd's C code: no C compiler ({compiler}) found; "
            "install one (Debian and Ubuntu: `apt install gcc`)"
        )
    return None


def _check() -> None:
    if found := problem():
        raise SystemExit(f"error: {found}")


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    """Check the toolchain, then maturin's."""
    _check()
    return maturin.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: dict | None = None) -> list[str]:
    """Check the toolchain, then maturin's (the same as for a wheel)."""
    _check()
    return maturin.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings: dict | None = None) -> list[str]:
    """Check the toolchain (maturin's sdist reads the workspace with cargo), then maturin's."""
    _check()
    return maturin.get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict | None = None
) -> str:
    """What maturin gives."""
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None
) -> str:
    """Check the toolchain (a frontend may skip the get_requires hook), then maturin's."""
    _check()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None
) -> str:
    """Check the toolchain, then maturin's."""
    _check()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict | None = None) -> str:
    """What maturin gives."""
    return maturin.build_sdist(sdist_directory, config_settings)

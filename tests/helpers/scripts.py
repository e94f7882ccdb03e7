"""The repository's scripts (scripts/*.py, and data makers such as tests/data/*/make.py) as
modules, for tests that call their functions."""

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.helpers import ROOT


def load(path: Path) -> ModuleType:
    """The script at `path` (absolute, or relative to the repository's root), imported."""
    path = path if path.is_absolute() else ROOT / path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


golden_json = load(Path("scripts/golden_json.py"))

"""The `capture` group: the capture path's model and calibration (the runs are the lead's)."""

from __future__ import annotations

import argparse

from pcieperf.cli._parser import _GROUPS, _add_group
from pcieperf.cli.capture_model import _add_capture_model_commands


def _add_capture_commands(sub: argparse._SubParsersAction) -> None:
    """The `capture` group."""
    capture_sub = _add_group(sub, "capture", _GROUPS["capture"])
    _add_capture_model_commands(capture_sub)

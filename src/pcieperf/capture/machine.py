"""The machine a capture run was made on, as the run stores it and a calibration names it: the
CPU model (/proc/cpuinfo's `model name`), the CPUs the kernel offers and the kernel release.
Costs fitted on one kind of machine (CPU model and count) are that kind's: a calibration says
which, and `capture model` says when it is asked on another kind."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"  # runs stored before the machine was (their CSV has no cpu_model column)
COLUMNS = ("cpu_model", "cpus", "kernel")  # a run's columns that name its machine


@dataclass(frozen=True)
class Machine:
    """A machine as a capture run records it."""

    cpu_model: str
    cpus: int
    kernel: str

    @classmethod
    def here(cls) -> Machine:
        """The machine pcieperf runs on."""
        return cls(_cpu_model(), os.cpu_count() or 0, platform.release())

    @property
    def words(self) -> str:
        """The machine in words: CPU model, CPUs, kernel."""
        return f"{self.cpu_model}, {self.cpus} CPUs, Linux {self.kernel}"

    @property
    def kind(self) -> tuple[str, int]:
        """What makes two machines alike for a calibration: CPU model and count."""
        return (self.cpu_model, self.cpus)

    @property
    def slug(self) -> str:
        """The kind as a file name: CPU model and count, lower case, dashes between words."""
        words = re.findall(r"[a-z0-9]+", self.cpu_model.lower())
        return "-".join([*words, f"{self.cpus}cpu"])

    def row(self) -> dict[str, object]:
        """The run's columns that name its machine."""
        return {"cpu_model": self.cpu_model, "cpus": self.cpus, "kernel": self.kernel}


def _cpu_model() -> str:
    """/proc/cpuinfo's first `model name` (the architecture where it has none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def of_rows(rows: Iterable[Mapping[Any, object]]) -> list[Machine]:
    """The machines stored runs name, each once, in the order first seen; runs stored before
    machines were recorded name none."""
    found: dict[Machine, None] = {}
    for row in rows:
        model, cpus, kernel = (row.get(c) for c in COLUMNS)
        if isinstance(model, str) and model and isinstance(cpus, int | float) and _is_count(cpus):
            found[Machine(model, int(cpus), str(kernel or UNKNOWN))] = None
    return list(found)


def _is_count(value: object) -> bool:
    """A CPU count as a store or a CSV holds it (an int, or a float without a fraction)."""
    return isinstance(value, int | float) and value == value and value >= 1 and value % 1 == 0

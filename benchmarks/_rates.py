"""Rates measured over several runs, reported as the median with the spread (min-max).

Shared by the model benchmarks (bench_sim.py, bench_iommu.py): a single run on a loaded
2-core machine moves by tens of per cent, so each figure is the median of --runs runs.
"""

import argparse
import json
import os
import statistics
from pathlib import Path


class Rates:
    """Named rates (items per second), one value per run each."""

    def __init__(self) -> None:
        self.runs: dict[str, list[float]] = {}
        self.targets: dict[str, float] = {}

    def add(self, name: str, items: float, seconds: float, target: float | None = None) -> None:
        """Records one run of `name`: `items` done in `seconds`."""
        self.runs.setdefault(name, []).append(items / seconds)
        if target is not None:
            self.targets[name] = target

    def report(self, unit: str = "M/s", scale: float = 1e6) -> dict:
        """Prints each figure's median [min-max] and whether it meets its target; returns
        them as a dict for --json-out."""
        out = {}
        for name, rates in self.runs.items():
            med = statistics.median(rates)
            target = self.targets.get(name)
            verdict = (
                ""
                if target is None
                else (
                    f"  (target >= {target / scale:g} {unit}: "
                    f"{'met' if med >= target else 'NOT met'})"
                )
            )
            print(
                f"{name}: {med / scale:.1f} {unit} [{min(rates) / scale:.1f}-"
                f"{max(rates) / scale:.1f}], median of {len(rates)}{verdict}"
            )
            out[name] = {"median_per_s": med, "runs_per_s": rates, "target_per_s": target}
        return out


def parser(description: str) -> argparse.ArgumentParser:
    """The options every model benchmark takes: --runs and --json-out."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--runs", type=int, default=5, help="runs per figure (median, >= 1)")
    p.add_argument("--json-out", default=None, help="also write the figures here (JSON)")
    return p


def finish(rates: Rates, json_out: str | None, extra: dict | None = None) -> None:
    """Prints the figures with the machine's load and writes them, and any `extra` figures,
    to `json_out` if given."""
    print(f"load average after: {os.getloadavg()}, {os.cpu_count()} CPUs")
    figures = rates.report() | (extra or {})
    if json_out:
        Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")

"""The `--json-out FILE` option of the benchmarks that print their figures once per run:
benchmarks/run_all.py runs them several times and takes the median of each figure."""

import argparse
import json
from pathlib import Path


def write_figures(figures: dict[str, float]) -> None:
    """Write `figures` (name -> number) to the file named by --json-out, if one was given."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--json-out", default=None)
    path = parser.parse_known_args()[0].json_out
    if path:
        Path(path).write_text(json.dumps(figures, indent=2) + "\n")

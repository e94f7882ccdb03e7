"""Replay inputs through a Python fuzz target without the fuzzer, optionally measuring which
lines of its parser module they reach.

    python fuzz/python/replay.py TARGET PATH... [--coverage]

PATH is a file (a crash artifact) or a folder (a corpus). Prints how many inputs returned,
raised PcieperfError and raised anything else (with the first traceback of each kind); exit
status 1 if anything else was raised. --coverage runs the replay under coverage.py and prints
line coverage of the target's parser module(s) (`PARSER_MODULES`).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections import Counter
from pathlib import Path

# The modules whose parsing code each target exercises; coverage is reported for these.
PARSER_MODULES = {
    "counter_file": [f"measure/counters/{m}.py" for m in ("samples", "pcm_iio", "perf", "vtune")],
    "testpmd_output": ["dpdk/testpmd.py"],
    "nic_profile": ["nic/profile.py"],
    "host_toml": ["pciebench/sim.py"],
    "device_toml": ["pciebench/sim.py"],
    "calibration_toml": ["pciebench/calibration_file.py"],
    "platform_toml": ["iommu/platform.py"],
    "cli_values": ["units.py", "net/ethernet.py"],
    "bench_csv": ["pciebench/bench.py"],
    "host_facts": ["pciebench/host.py"],
}


def inputs(paths: list[Path]) -> list[Path]:
    """Every file named, and every file directly inside a named folder, sorted."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path])
    return found


def replay(name: str, files: list[Path]) -> Counter:
    """Run `name` on each file; count outcomes, print the first traceback of each bug kind."""
    from targets import TARGETS

    from pcieperf.errors import PcieperfError

    outcome: Counter = Counter()
    for file in files:
        try:
            TARGETS[name](file.read_bytes())
            outcome["returned"] += 1
        except PcieperfError:
            outcome["PcieperfError"] += 1
        except Exception as exc:  # what the fuzz targets hunt
            kind = type(exc).__name__
            if not any(k.startswith(kind) for k in outcome):
                print(f"{file}:\n{''.join(traceback.format_exception(exc))}", file=sys.stderr)
            outcome[f"{kind} (bug)"] += 1
    return outcome


def main() -> None:
    """Replay, optionally under coverage, and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=sorted(PARSER_MODULES))
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--coverage", action="store_true")
    args = parser.parse_args()
    files = inputs(args.paths)
    if args.coverage:
        import coverage

        cov = coverage.Coverage(include=["*/pcieperf/*"])
        cov.start()
        outcome = replay(args.target, files)
        cov.stop()
        for module in PARSER_MODULES[args.target]:
            _, statements, _, missing, _ = cov.analysis2(_module_file(module))
            covered = len(statements) - len(missing)
            print(
                f"coverage {module}: {covered}/{len(statements)} lines "
                f"({100 * covered / len(statements):.0f} %)"
            )
    else:
        outcome = replay(args.target, files)
    counts = ", ".join(f"{k} {v}" for k, v in outcome.items())
    print(f"{args.target}: {len(files)} inputs, {counts}")
    sys.exit(1 if any(k.endswith("(bug)") for k in outcome) else 0)


def _module_file(name: str) -> str:
    """Path of a pcieperf module file."""
    import pcieperf

    return str(Path(pcieperf.__file__).parent / name)


if __name__ == "__main__":
    main()

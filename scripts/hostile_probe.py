"""A hostile probe of the installed `pcieperf` CLI (issue 28): bad numbers in every flag, bad
values in every shipped TOML file, unreadable and endless inputs, full disks, read-only folders,
signals, concurrent runs and oversized sweeps, each run in a child process in a scratch folder
that is removed afterwards. Every run is classified; the script exits 1 if any run ended in an
internal error, left a half-written output or a temporary behind (docs/robustness.md).

    python scripts/hostile_probe.py [--quick] [--json summary.json]

It never starts DPDK (`capture run`, `dpdk run`) nor touches hugepages. Mount cases (a
read-only and a full folder) need root and are skipped without it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from probe_outputs import probe_concurrent, probe_gaps, probe_signals, probe_sweeps, probe_writers
from probe_runs import (
    Probe,
    Verdict,
    fill_store,
    preload_cli,
    scratch_probe,
)
from probe_values import EXAMPLE, probe_flags, probe_inputs, probe_toml

# --- the summary ---------------------------------------------------------------------------

FAMILIES = {
    "flags": probe_flags,
    "toml": probe_toml,
    "inputs": probe_inputs,
    "writers": probe_writers,
    "signals": probe_signals,
    "concurrent": probe_concurrent,
    "sweeps": probe_sweeps,
    "gaps": probe_gaps,
}
KINDS = ("refusal", "accepted", "internal", "half", "leftover")
FAILURES = ("internal", "half", "leftover")


def is_bad_value(verdict: Verdict) -> bool:
    """Whether a run tried a bad value (not a command's unchanged example, its baseline)."""
    family = verdict.family in ("flags", "toml", "inputs")
    return family and not verdict.name.endswith(EXAMPLE)


def summary(probe: Probe, seconds: float) -> dict:
    """The counts per family and kind, the failures, and the memory cases' peak RSS."""
    runs = [v for v in probe.verdicts if v.kind != "leftover"]
    by_family = {
        family: dict(Counter(v.kind for v in probe.verdicts if v.family == family))
        for family in dict.fromkeys(v.family for v in probe.verdicts)
    }
    totals = Counter(v.kind for v in probe.verdicts)
    return {
        "mode": "quick" if probe.quick else "full",
        "children": "fork" if probe.fork else "exec",
        "seconds": round(seconds, 1),
        "runs": len(runs),
        "bad_values_tried": sum(1 for v in runs if is_bad_value(v)),
        **{kind: totals.get(kind, 0) for kind in KINDS},
        "memory_peak_rss_mib": round(
            max((v.rss_kib for v in runs if v.family == "inputs"), default=0) / 1024, 1
        ),
        "families": by_family,
        "failures": [asdict(v) for v in probe.verdicts if v.kind in FAILURES],
        "verdicts": [asdict(v) for v in probe.verdicts],
    }


def print_table(found: dict) -> None:
    """The counts as a table, one row per family and a total."""
    print(f"\n{'family':12}" + "".join(f"{k:>10}" for k in KINDS))
    for family, counts in found["families"].items():
        print(f"{family:12}" + "".join(f"{counts.get(k, 0):>10}" for k in KINDS))
    print(f"{'total':12}" + "".join(f"{found[k]:>10}" for k in KINDS))
    print(
        f"\nbad values tried: {found['bad_values_tried']}; runs: {found['runs']}; "
        f"memory cases' peak RSS: {found['memory_peak_rss_mib']} MiB; "
        f"{found['seconds']} s ({found['mode']}, {found['children']} children)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the probe's families; 1 if any run failed (internal error, half file, leftover)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a sample of each family")
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    parser.add_argument("--exec", action="store_true", help="exec every child (slower)")
    parser.add_argument("--only", choices=list(FAMILIES), action="append", help="these only")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if not args.exec:
        preload_cli()
    with scratch_probe(fork=not args.exec, quick=args.quick) as probe:
        fill_store(probe)
        for name in args.only or FAMILIES:
            print(f"{name} ...", flush=True)
            FAMILIES[name](probe)
        found = summary(probe, time.monotonic() - started)
    print_table(found)
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1) + "\n")
    return 1 if any(found[k] for k in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())

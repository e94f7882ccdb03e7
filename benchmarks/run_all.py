"""Every benchmark in benchmarks/, each beside its peers in the same run (issue 15 item 5).

Runs each bench_*.py as its own process; those that time their commands side by side
themselves (bench_trace: capinfos, mergecap, dpkt, a libpcap pcap_dump C program built there;
bench_sweep and bench_startup: an earlier pcieperf given by --baseline-src) get --runs and
report medians; the others print their figures once per run and are run --runs times here,
their median taken per figure. Every figure is set beside the same figure of the previous
run (the results.json this run replaces). Writes benchmarks/results.json and
benchmarks/results.md (a Markdown table); --readme also puts the table into README.md between
`<!-- benchmarks:start -->` and `<!-- benchmarks:end -->`.

Peers that are missing are skipped with the reason (tshark provides capinfos and mergecap,
libpcap-dev and gcc the C program, dpkt is pip-installed by bench_trace);
--install-peers installs them first (apt-get as root, pip for dpkt).
Run: python3 benchmarks/run_all.py [--quick] [--runs 5] [--baseline-src DIR] [--readme]
(--render: only rewrite the tables from results.json)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
START, END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
Row = dict[str, object]


@dataclass(frozen=True)
class Benchmark:
    """How one benchmark script is run and read: `args` gives its options for a run, `rows`
    turns its --json-out figures into table rows; `repeat` is True when it measures once per
    process (run --runs times here), False when it takes --runs itself."""

    script: str
    args: Callable[[argparse.Namespace], list[str]]
    rows: Callable[[dict], list[Row]]
    repeat: bool
    quick: bool = True  # part of a --quick run


def _baseline(opts: argparse.Namespace) -> list[str]:
    return ["--baseline-src", opts.baseline_src] if opts.baseline_src else []


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def side_by_side_rows(figures: dict) -> list[Row]:
    """bench_trace's and bench_startup's figures: per comparison, the first contender is
    pcieperf and every other one its peer (seconds, lower is better)."""
    rows = []
    for name, contenders in figures.items():
        if "seconds" in contenders:  # one measurement, no peer (bench_trace's 4 GiB run)
            rows.append({"figure": name, "unit": "s", "peer": None, "ratio": None})
            rows[-1] |= _spread([contenders["seconds"]]) | _peak(contenders, None)
            continue
        labels = list(contenders)
        ours = contenders[labels[0]]
        mine = {"figure": name, "unit": "s", **_spread(ours["runs_s"])}
        for label in labels[1:] or [None]:
            peer = contenders[label] if label else None
            rows.append(
                mine
                | {"peer": label, "ratio": None}
                | ({} if peer is None else _peer(_spread(peer["runs_s"]), mine, lower=True))
                | _peak(ours, peer)
            )
    return rows


def startup_rows(figures: dict) -> list[Row]:
    """bench_startup's processes: every pcieperf command with its baseline as the peer, and
    the interpreter's own floor as rows of their own."""
    runs = figures["startup"]
    rows = []
    for label, entry in runs.items():
        if label.endswith("(baseline)"):
            continue
        row = {
            "figure": label,
            "unit": "s",
            "peer": None,
            "ratio": None,
            **_spread(entry["runs_s"]),
        }
        old = runs.get(f"{label} (baseline)")
        if old is not None:
            row |= {"peer": "pcieperf --baseline-src"} | _peer(_spread(old["runs_s"]), row, True)
        if label.startswith("pcieperf"):
            row["target"] = "< 0.120 s"
        rows.append(row)
    return rows


def devices_rows(figures: dict) -> list[Row]:
    """bench_devices: `pcieperf devices` beside `lspci -vv` (seconds, lower is better), the
    machine's run with issue 42's target."""
    rows = side_by_side_rows(figures)
    for row in rows:
        if "sysfs" in str(row["figure"]):
            row["target"] = "< 0.3 s"
    return rows


def sweep_rows(figures: dict) -> list[Row]:
    """bench_sweep's evaluations per second (higher is better), the baseline as the peer."""
    rows = []
    for model, f in figures["pcieperf"].items():
        row = {"figure": f"{model} model sweep", "unit": "evaluations/s", "peer": None}
        row |= {"ratio": None, **_spread(f["runs_per_s"])}
        old = figures.get("baseline", {}).get(model)
        if old is not None:
            row |= {"peer": "pcieperf --baseline-src"} | _peer(
                _spread(old["runs_per_s"]), row, False
            )
        row["target"] = ">= 1e8 /s"  # issue 15: DMA and NIC sweeps alike
        rows.append(row)
    return rows


def repeated_rows(runs: list[dict]) -> list[Row]:
    """Figures printed once per process, over the processes: median and spread per figure."""
    return [
        {"figure": name, "unit": _unit(name), "peer": None, "ratio": None}
        | _spread([run[name] for run in runs])
        for name in runs[0]
    ]


def rates_rows(figures: dict) -> list[Row]:
    """bench_sim's and bench_iommu's rates (benchmarks/_rates.py): each figure's runs, median
    and spread, with its target (items per second, higher is better)."""
    rows = []
    for name, figure in figures.items():
        row = {"figure": name, "unit": "/s", "peer": None, "ratio": None}
        row |= _spread(figure["runs_per_s"])
        if figure.get("target_per_s"):
            row["target"] = f">= {figure['target_per_s']:.0e} /s"
        rows.append(row)
    return rows


def iommu_rows(figures: dict) -> list[Row]:
    """bench_iommu's model rates, then its whole processes: seconds (lower is better) or, for
    the sweep, points per second (higher), the --baseline-src code as the peer (issue 29)."""
    commands = figures.pop("commands", {})
    rows = rates_rows(figures)
    for name, got in commands.items():
        faster = "runs_per_s" in got
        key = "runs_per_s" if faster else "runs_s"
        row = {"figure": name, "unit": "points/s" if faster else "s", "peer": None}
        row |= {"ratio": None, **_spread(got[key])}
        if f"baseline_{key}" in got:
            peer = _spread(got[f"baseline_{key}"])
            row |= {"peer": "pcieperf --baseline-src"} | _peer(peer, row, lower=not faster)
        row["target"] = ">= 100 points/s" if faster else ("< 0.3 s" if "sim" not in name else "")
        rows.append(row)
    return rows


def _unit(name: str) -> str:
    """`rows_per_s` -> rows/s, `explain_s` -> s."""
    counted = name.rsplit("_per_", 1)[0].replace(" ", "_").rsplit("_", 1)[-1]
    return f"{counted}/s" if "_per_" in name else "s"


def _peer(peer: dict[str, float], mine: Row, lower: bool) -> Row:
    """The peer's figures and how many times better pcieperf's median is."""
    ratio = peer["median"] / mine["median"] if lower else mine["median"] / peer["median"]
    return {"peer_median": peer["median"], "peer_min": peer["min"], "peer_max": peer["max"]} | {
        "ratio": ratio
    }


def _peak(ours: dict, peer: dict | None) -> Row:
    peaks = {"peak_mib": ours.get("peak_mib")}
    if peer is not None:
        peaks["peer_peak_mib"] = peer.get("peak_mib")
    return {k: v for k, v in peaks.items() if v is not None}


def memory_rows(figures: dict) -> list[Row]:
    """bench_memory's whole commands: peak resident memory (MiB) beside the input's size in the
    figure's name, then wall seconds; lower is better; the --baseline-src code as the peer."""
    rows = []
    for name, got in figures.items():
        for key, unit, what in (("peak_mib", "MiB", "peak"), ("seconds", "s", "time")):
            row = {"figure": f"{name}: {what}", "unit": unit, "peer": None, "ratio": None}
            row |= _spread(got[key])
            if f"baseline_{key}" in got:
                peer = _spread(got[f"baseline_{key}"])
                row |= {"peer": "pcieperf --baseline-src"} | _peer(peer, row, lower=True)
            if unit == "MiB":
                row["target"] = f"< {got['target_mib']} MiB"
            rows.append(row)
    return rows


def _spread_of(median: float, bounds: list[float] | None = None) -> dict[str, float]:
    """A figure reported as its median and (min, max), or as one value."""
    low, high = bounds or (median, median)
    return {"median": median, "min": low, "max": high}


def archive_rows(figures: dict) -> list[Row]:
    """bench_archive's Dask runs: archive stats per worker count against one worker, and the
    merge by time ranges against the single-process merge (seconds, lower is better)."""
    runs = figures["runs"]
    one = runs.get("1")
    rows = []
    for n, run in runs.items():
        low, high = run["wall_range_s"]
        row = {"figure": f"archive stats, {n} workers", "unit": "s", "peer": None, "ratio": None}
        row |= {"median": run["wall_s"], "min": low, "max": high}
        if one is not None and n != "1":
            peer = _spread_of(one["wall_s"], one["wall_range_s"])
            row |= {"peer": "1 worker"} | _peer(peer, row, lower=True)
            row["target"] = ">= 1.6x at 2 workers"
        rows.append(row)
        merge = _spread_of(run["merge_s"], run["merge_range_s"])
        single = _spread_of(figures["merge_single_process_s"])
        rows.append(
            {"figure": f"merge by time ranges, {n} workers", "unit": "s", **merge}
            | {"peer": "single-process merge"}
            | _peer(single, merge, lower=True)
        )
    return rows


BENCHMARKS = {
    "startup": Benchmark(
        "bench_startup.py",
        lambda o: ["--runs", str(max(o.runs, 5)), *_baseline(o)],
        startup_rows,
        repeat=False,
    ),
    "sweep": Benchmark(
        "bench_sweep.py", lambda o: ["--runs", str(o.runs), *_baseline(o)], sweep_rows, False
    ),
    "trace": Benchmark(
        "bench_trace.py",
        lambda o: (
            ["--runs", str(o.runs), *_baseline(o)]
            + (["--packets", "500000", "--skip-4gib"] if o.quick else [])
        ),
        side_by_side_rows,
        repeat=False,
    ),
    "sim": Benchmark("bench_sim.py", lambda o: ["--runs", str(o.runs)], rates_rows, False),
    "iommu": Benchmark(
        "bench_iommu.py", lambda o: ["--runs", str(o.runs), *_baseline(o)], iommu_rows, False
    ),
    "counters": Benchmark("bench_counters.py", lambda o: [], repeated_rows, repeat=True),
    "devices": Benchmark(
        "bench_devices.py", lambda o: ["--runs", str(max(o.runs, 5))], devices_rows, False
    ),
    "capture_model": Benchmark("bench_capture_model.py", lambda o: [], repeated_rows, repeat=True),
    "archive": Benchmark(
        "bench_archive.py",
        lambda o: ["--runs", str(o.runs), "--workers", "1,2,4"],
        archive_rows,
        repeat=False,
        quick=False,
    ),
    "capture": Benchmark("bench_capture.py", lambda o: [], repeated_rows, True, quick=False),
    "memory": Benchmark(
        "bench_memory.py",
        lambda o: (
            ["--runs", str(o.runs), *_baseline(o)]
            + (["--packets", "1000000", "--counter-mb", "20"] if o.quick else [])
        ),
        memory_rows,
        repeat=False,
    ),
    "dask_sweep": Benchmark(
        "bench_dask_sweep.py", lambda o: ["--workers", "1,2"], repeated_rows, True, quick=False
    ),
}


def check_complete() -> None:
    """Every bench_*.py in this folder is run here: a new benchmark cannot be forgotten."""
    scripts = {p.name for p in HERE.glob("bench_*.py")}
    missing = sorted(scripts - {b.script for b in BENCHMARKS.values()})
    if missing:
        raise SystemExit(f"run_all.py: add {', '.join(missing)} to BENCHMARKS")


def missing_peers() -> list[dict[str, str]]:
    """The peers this machine lacks, each with the reason its comparison is skipped."""
    checks = [
        ("capinfos", shutil.which("capinfos"), "no capinfos (apt-get install tshark)"),
        ("mergecap", shutil.which("mergecap"), "no mergecap (apt-get install tshark)"),
        ("libpcap pcap_dump", Path("/usr/include/pcap/pcap.h").exists(), "no libpcap-dev"),
        ("gcc", shutil.which("gcc"), "no gcc to build the libpcap program"),
    ]
    return [{"peer": name, "reason": why} for name, found, why in checks if not found]


def install_peers() -> None:
    """apt-get tshark, libpcap-dev and gcc (as root) and pip-install dpkt; failures are left
    to the benchmarks, which skip what is missing."""
    if shutil.which("apt-get") and os.geteuid() == 0:
        packages = ["tshark", "libpcap-dev", "gcc"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-q", *packages], env=env, check=False)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "dpkt"], check=False)


def run_benchmark(name: str, bench: Benchmark, opts: argparse.Namespace, tmp: Path) -> dict:
    """Runs one benchmark (once, or --runs times) and returns its figures and rows."""
    outputs = []
    started = time.perf_counter()
    for i in range(opts.runs if bench.repeat else 1):
        out = tmp / f"{name}-{i}.json"
        cmd = [sys.executable, str(HERE / bench.script), *bench.args(opts), "--json-out", str(out)]
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        done = subprocess.run(cmd, cwd=HERE.parent)
        if done.returncode != 0 or not out.exists():
            return {"error": f"{bench.script} exited with {done.returncode}"}
        outputs.append(json.loads(out.read_text()))
    figures = outputs if bench.repeat else outputs[0]
    try:
        rows = bench.rows(figures)
    except (KeyError, TypeError, IndexError) as exc:  # figures kept; only the table lacks them
        return {"figures": figures, "error": f"unreadable figures ({type(exc).__name__}: {exc})"}
    return {"seconds": time.perf_counter() - started, "figures": figures, "rows": rows}


def with_previous(results: dict, previous: dict) -> None:
    """Adds the previous run's median of every figure to its row (`previous_median`)."""
    for name, entry in results["benchmarks"].items():
        before = {
            (r["figure"], r.get("peer")): r["median"]
            for r in previous.get("benchmarks", {}).get(name, {}).get("rows", [])
        }
        for row in entry.get("rows", []):
            old = before.get((row["figure"], row.get("peer")))
            if old is not None:
                row["previous_median"] = old


def _scale(x: float, unit: str) -> tuple[float, str]:
    """A divisor and the unit to show `x` with: ms or s for seconds, MiB as they are, k/M/G
    per second."""
    if unit == "MiB":
        return 1.0, unit
    if unit == "s":
        return (1e-3, "ms") if x < 1 else (1.0, "s")
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return scale, f"{prefix} {unit}"
    return 1.0, unit


def _value(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    scale, shown = _scale(x, unit)
    return f"{x / scale:.4g} {shown}"


def _cell(row: Row, key: str = "") -> str:
    """median [min-max] of pcieperf's figure (key "") or the peer's (key "peer_")."""
    med, low, high = (row.get(f"{key}{k}") for k in ("median", "min", "max"))
    if med is None:
        return "-"
    scale, shown = _scale(med, str(row["unit"]))
    peak = row.get(f"{key}peak_mib")
    memory = f", {peak:.1f} MiB peak" if peak is not None else ""
    return f"{med / scale:.4g} {shown} [{low / scale:.4g}-{high / scale:.4g}]{memory}"


def markdown(results: dict) -> str:
    """The results as one Markdown table (median [min-max]), then the skipped peers."""
    head = (
        f"Measured by `benchmarks/run_all.py` on {results['date']} ({results['machine']}, "
        f"load average {results['load_before']:.2f} before), median of {results['runs']} runs "
        f"[min-max]; ratio = how many times better pcieperf is than the peer."
    )
    lines = [
        head,
        "",
        "| benchmark | figure | pcieperf | peer | peer's | ratio | target | previous run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results["benchmarks"].items():
        if "error" in entry:
            lines.append(f"| {name} | not run: {entry['error']} | | | | | | |")
            continue
        for row in entry["rows"]:
            ratio = f"{row['ratio']:.2f}x" if row.get("ratio") else "-"
            peer = str(row.get("peer") or "-").replace("|", "/")
            previous = _value(row.get("previous_median"), str(row["unit"]))
            lines.append(
                f"| {name} | {row['figure']} | {_cell(row)} | {peer} | {_cell(row, 'peer_')} "
                f"| {ratio} | {row.get('target', '')} | {previous} |"
            )
    for skipped in results["skipped"]:
        lines.append(f"\nSkipped: {skipped['peer']}: {skipped['reason']}.")
    return "\n".join(lines) + "\n"


def update_readme(table: str) -> None:
    """Replace the README's marked benchmark section with `table`."""
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"run_all.py: README.md has no {START} ... {END} section to update")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    README.write_text(f"{before}{START}\n{table}{END}{after}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true", help="3 runs, small inputs, no Dask")
    parser.add_argument("--only", default=None, help=f"comma-separated: {', '.join(BENCHMARKS)}")
    parser.add_argument("--baseline-src", default=None, help="an earlier pcieperf's src folder")
    parser.add_argument("--install-peers", action="store_true", help="apt-get/pip the peers")
    parser.add_argument("--out", default=str(HERE / "results.json"), help="results file")
    parser.add_argument("--readme", action="store_true", help="update README.md's table")
    parser.add_argument(
        "--render", action="store_true", help="only write the tables from the results file"
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.runs = min(opts.runs, 3)
    if opts.runs < 1:
        parser.error(f"--runs {opts.runs} is not allowed; use 1 or more")
    chosen = opts.only.split(",") if opts.only else list(BENCHMARKS)
    unknown = [n for n in chosen if n not in BENCHMARKS]
    if unknown:
        parser.error(f"--only {unknown[0]!r} is not a benchmark; use {', '.join(BENCHMARKS)}")
    opts.chosen = [n for n in chosen if BENCHMARKS[n].quick or not opts.quick]
    return opts


def main() -> None:
    check_complete()
    opts = parse_args()
    if opts.install_peers:
        install_peers()
    out = Path(opts.out)
    previous = json.loads(out.read_text()) if out.exists() else {}
    if opts.render:
        if not previous:
            raise SystemExit(f"run_all.py: no {out} to render; run the benchmarks first")
        publish(previous, out, opts.readme)
        return
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "load_before": os.getloadavg()[0],
        "runs": opts.runs,
        "quick": opts.quick,
        "baseline_src": opts.baseline_src,
        "skipped": missing_peers()
        + (
            []
            if opts.baseline_src
            else [{"peer": "earlier pcieperf", "reason": "no --baseline-src"}]
        ),
        "benchmarks": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name in opts.chosen:
            results["benchmarks"][name] = run_benchmark(name, BENCHMARKS[name], opts, Path(tmp))
    results["load_after"] = os.getloadavg()[0]
    with_previous(results, previous)
    out.write_text(json.dumps(results, indent=2) + "\n")
    publish(results, out, opts.readme)


def publish(results: dict, out: Path, readme: bool) -> None:
    """Write the Markdown table beside the results file (and into README.md)."""
    table = markdown(results)
    out.with_suffix(".md").write_text(table)
    print(table)
    if readme:
        update_readme(table)


if __name__ == "__main__":
    main()

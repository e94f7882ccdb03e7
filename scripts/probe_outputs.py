"""The hostile probe's output cases (issue 28, sections 1-3, 6-8, 10): writers on full and
read-only disks, signals, concurrent runs, oversized sweeps and smaller gaps."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from probe_runs import (
    CAPTURE,
    FSIZE_LIMIT,
    HOST,
    PACKAGE,
    PCM,
    SHARED,
    TEMPORARY,
    TIMEOUT_S,
    Probe,
    Result,
    check_leftovers,
    finish,
    out_path,
    record,
    run,
    snapshot,
    spawn,
    unchanged_unless_accepted,
)
from probe_values import SIMULATE, clear_outputs, sample

# --- 1, 2, 3: every writer on a full disk, a read-only folder, an existing output -------------

RUNS_CSV = str(PACKAGE / "capture" / "calibrations" / "debian12-dpdk22.11-2core-runs.csv")
WRITERS = {  # a writer, its command line (OUT: the output), and the output's name
    "trace convert": (["trace", "convert", CAPTURE, "OUT"], "c.pcapng"),
    "trace merge": (["trace", "merge", CAPTURE, CAPTURE, "-o", "OUT"], "m.pcapng"),
    "trace synth": (["trace", "synth", "--duration", "1ms", "-o", "OUT"], "s.pcap"),
    "capture calibrate": (["capture", "calibrate", "--csv", RUNS_CSV, "-o", "OUT"], "c.toml"),
    "iommu advise --plot": (["iommu", "advise", "--packets", "20000", "--plot", "OUT"], "a.png"),
    "nic --plot": (["nic", "--trace", CAPTURE, "--plot", "OUT"], "n.svg"),
    "report": (["report", "-o", "OUT"], "report"),
    "iommu fit -o": (["iommu", "fit", "--counters", PCM, "--pps", "7M", "-o", "OUT"], "f.toml"),
    "explain --fit-out": (
        [
            "explain",
            "--counters",
            PCM,
            "--pps",
            "7M",
            "--frame",
            "64",
            "--page",
            "4k",
            "--fit-out",
            "OUT",
        ],
        "e.toml",
    ),
    "bench predict --out": (["bench", "predict", "--host", HOST, "--out", "OUT"], "predicted"),
    "bench calibrate": (["bench", "calibrate", HOST, "-o", "OUT"], "cal.toml"),
    "bench host": (["bench", "host", HOST, "-o", "OUT"], "host.toml"),
    "sweep": (["sweep", "tests/data/sweep-dma.toml", "-o", "OUT"], "s.parquet"),
    "data plot": (["data", "plot", "--view", "window", "-o", "OUT"], "d.png"),
    "validate --plot": (
        ["validate", "--measured", HOST, "--predicted", "predicted", "--plot", "OUT"],
        "v.png",
    ),
}


def writer_argv(writer: str, out: Path, *extra: str) -> list[str]:
    """The writer's command line writing `out`."""
    argv, _ = WRITERS[writer]
    return [*(str(out) if w == "OUT" else w for w in argv), *extra]


def try_writer(probe: Probe, name: str, out: Path, extra: tuple, limits: dict | None = None):
    """Run a writer to `out`, and record it: a failure must leave `out` as it was."""
    checks = [unchanged_unless_accepted(out, snapshot(out))]
    result = run(probe, writer_argv(name.split(":")[0], out, *extra), limits)
    return record(probe, "writers", name, result, checks=checks)


@contextmanager
def mounted(probe: Probe, name: str, options: str) -> Iterator[Path | None]:
    """A tmpfs in the scratch folder mounted with `options` (None: cannot mount, not root)."""
    point = probe.scratch / f"mnt-{name}"
    point.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    try:
        yield point if done.returncode == 0 else None
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def fill(folder: Path) -> None:
    """Write into `folder` until its file system is full."""
    with suppress(OSError), (folder / "filler").open("wb") as fh:
        while True:
            fh.write(b"\0" * (1 << 20))
            fh.flush()


def probe_writers(probe: Probe) -> None:
    """Each writer: a first run, again without --force, cut short by a file size limit
    (RLIMIT_FSIZE), on a full disk, into a read-only folder and a missing one (sections 1-3)."""
    fsize = {resource.RLIMIT_FSIZE: FSIZE_LIMIT}
    for writer, (_, target) in sample(list(WRITERS.items()), probe.quick, 7):
        out = out_path(probe, target)
        try_writer(probe, f"{writer}: first", out, ())
        try_writer(probe, f"{writer}: exists, no --force", out, ())
        try_writer(probe, f"{writer}: full at 1 KiB, --force", out, ("--force",), fsize)
        try_writer(probe, f"{writer}: missing folder", out.parent / "none" / target, ())
        writer_on_mounts(probe, writer, out)
        check_leftovers(probe, "writers", writer)
        clear_outputs(probe)


def writer_on_mounts(probe: Probe, writer: str, made: Path) -> None:
    """The writer into a read-only file system, and over its output on a full one."""
    with mounted(probe, "ro", "ro,size=1m") as ro:
        if ro is not None:
            try_writer(probe, f"{writer}: read-only folder", ro / made.name, ())
    with mounted(probe, "full", "size=64m") as full:
        if full is not None and made.exists():
            copy = full / made.name
            (shutil.copytree if made.is_dir() else shutil.copy2)(made, copy)
            fill(full)
            try_writer(probe, f"{writer}: disk full, --force", copy, ("--force",))
            check_leftovers(probe, "writers", f"{writer} full disk")


# --- 6: signals mid-write, and a killed run's temporary ------------------------------------------


def wait_for_temporary(pid: int, folder: Path) -> bool:
    """Wait until the child has a temporary in `folder` (False: it ended first)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if any(TEMPORARY.search(p.name) for p in folder.iterdir()):
            return True
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return False
        time.sleep(0.01)
    return False


def stopped_mid_write(probe: Probe, argv: list[str], out: Path, stop: int) -> Result:
    """Start a long write to `out`, send it `stop` once its temporary exists, wait for it."""
    pid = spawn(probe, argv, {}, None, exec_=True)
    if wait_for_temporary(pid, out.parent):
        os.kill(pid, stop)
    return finish(probe, pid)


def probe_signals(probe: Probe) -> None:
    """SIGTERM, SIGHUP, SIGINT mid-write: exit 128+n, no output, no temporary; SIGKILL: the
    next run removes the temporary and says so (section 6)."""
    long_synth = ["trace", "synth", "--pps", "1M", "--duration", "20s", "-q", "-o"]
    for stop in sample([signal.SIGTERM, signal.SIGHUP, signal.SIGINT], probe.quick, 3):
        out = out_path(probe, "synth.pcap")
        result = stopped_mid_write(probe, [*long_synth, str(out)], out, stop)
        gone = unchanged_unless_accepted(out, None)
        record(probe, "signals", f"trace synth {stop.name}", result, signalled=stop, checks=[gone])
        check_leftovers(probe, "signals", f"trace synth {stop.name}")
        out = out_path(probe, "report")
        result = stopped_mid_write(probe, ["report", "-q", "-o", str(out)], out, stop)
        gone = unchanged_unless_accepted(out, None)
        record(probe, "signals", f"report {stop.name}", result, signalled=stop, checks=[gone])
        check_leftovers(probe, "signals", f"report {stop.name}")
    out = out_path(probe, "killed.pcap")
    stopped_mid_write(probe, [*long_synth, str(out)], out, signal.SIGKILL)
    rerun = run(probe, ["trace", "synth", "--duration", "1ms", "-o", str(out)], exec_=True)
    said = None if "removed" in rerun.stderr else ("leftover", "the stale temporary not reported")
    record(probe, "signals", "SIGKILL, then a rerun", rerun, checks=[lambda _: said])
    check_leftovers(probe, "signals", "SIGKILL, then a rerun")
    clear_outputs(probe)


# --- 2, 7, 8: concurrent writers, sweeps, the store -------------------------------------------


def together(probe: Probe, first: list[str], second: list[str]) -> tuple[Result, Result]:
    """Two commands started at once; both their ends."""
    pids = [spawn(probe, argv, {}, None, exec_=True) for argv in (first, second)]
    return finish(probe, pids[0]), finish(probe, pids[1])


def one_wins(results: tuple[Result, Result]) -> Callable:
    """A check: of two writers of one output, one succeeded and the other refused."""
    codes = sorted(r.code for r in results)
    return lambda _: None if codes == [0, 2] else ("half", f"exit codes {codes}: one result lost")


def probe_concurrent(probe: Probe) -> None:
    """Two writers of one output (one wins, one refuses); the store read during an import
    (it waits); two sweeps of one output (sections 2, 7, 8)."""
    for writer in sample(["trace convert", "sweep"], probe.quick, 2):
        out = out_path(probe, WRITERS[writer][1])
        pair = together(probe, writer_argv(writer, out), writer_argv(writer, out))
        for n, result in enumerate(pair):
            record(
                probe,
                "concurrent",
                f"two {writer} -o one, #{n + 1}",
                result,
                checks=[one_wins(pair)],
            )
        check_leftovers(probe, "concurrent", writer)
    db = str(probe.scratch / "fixtures" / "busy.duckdb")
    dirs = sorted(str(p) for p in (SHARED / "pcie-bench").glob("*/"))
    pair = together(probe, ["data", "import", "--db", db, *dirs], ["data", "ls", "--db", db])
    record(probe, "concurrent", "data import", pair[0])
    record(probe, "concurrent", "data ls during the import", pair[1])
    clear_outputs(probe)


SPECS = {  # a sweep spec, as TOML text
    "a bad later point": 'command = "dma"\n[axes]\nsizes = [64, 128, 256, -1]\n',
    "2e9 points": 'command = "dma"\n[axes]\nsizes = { from = 1, to = 2000000000, step = 1 }\n',
    "1e7 iommu sim points": 'command = "iommu sim"\n[axes]\n'
    "packets = { from = 1000, to = 10001000, step = 1 }\n",
    "an unknown option": 'command = "dma"\n[axes]\nno_such_option = [1, 2]\n',
    "a NaN option": 'command = "dma"\n[options]\noffset = nan\n[axes]\nsizes = [64, 128]\n',
}


def probe_sweeps(probe: Probe) -> None:
    """Sweeps whose later point is bad or whose size is absurd: refused before any chunk, no
    parts left (section 7); a CSV name for the Parquet output (section 10)."""
    for label, text in SPECS.items():
        spec = probe.scratch / "fixtures" / "spec.toml"
        spec.write_text(text)
        out = out_path(probe, "s.parquet")
        result = run(probe, ["sweep", str(spec), "-o", str(out)])
        record(probe, "sweeps", label, result, checks=[unchanged_unless_accepted(out, None)])
        check_leftovers(probe, "sweeps", label)
    csv = out_path(probe, "s.csv")
    result = run(probe, ["sweep", "tests/data/sweep-dma.toml", "-o", str(csv)])
    record(probe, "sweeps", "-o x.csv", result)
    clear_outputs(probe)


# --- 10: smaller gaps ----------------------------------------------------------------------


def probe_gaps(probe: Probe) -> None:
    """The smaller gaps of section 10 the other families do not reach."""
    bom = probe.scratch / "fixtures" / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (probe.work / PCM).read_bytes())
    missing = str(probe.scratch / "none" / "s.duckdb")
    cases = {
        "pcm-iio CSV with a BOM": ["counters", "import", str(bom), "--force"],
        "trace demand --window 1ns": ["trace", "demand", CAPTURE, "--window", "1ns"],
        "--db in a missing folder": ["data", "ls", "--db", missing],
        "missing --platform file": [*SIMULATE, "--platform", "no-such-platform.toml"],
        "validate --worst=-1": [
            "validate",
            "--measured",
            HOST,
            "--predicted",
            "predicted",
            "--worst=-1",
        ],
    }
    for label, argv in cases.items():
        record(probe, "gaps", label, run(probe, argv))
    check_leftovers(probe, "gaps", "all")

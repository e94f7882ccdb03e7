"""Every long-running command stops on the first Ctrl-C, SIGTERM or SIGHUP (issue 46 F7 and
item 3): sent to its process group mid-work, as a terminal sends it to a job, each exits
within 2 s with 128 + the signal, says so in one line (no traceback, no panic), publishes
nothing and leaves no temporary. Long reads are stopped too: a capture fed endlessly on
standard input, a capture of 4 M packets (whose reading ignored SIGTERM until done, or
crashed the Rust core), a counter file of 31 MB."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import PCIE_BENCH, signals
from tests.helpers.counters import repeated

pytestmark = pytest.mark.slow
STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
HOST = PCIE_BENCH / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"


@dataclass(frozen=True)
class Case:
    """A command (its arguments; {names} are the inputs), when it is mid-work, and what it
    would publish."""

    argv: str
    mid_work: Callable[[subprocess.Popen, Path], bool]
    published: tuple[str, ...] = ()
    endless_stdin: bool = False


def cpu_over(ms: float) -> Callable[[subprocess.Popen, Path], bool]:
    return lambda proc, _: signals.cpu_ms(proc.pid) > ms


def read_over(mb: float) -> Callable[[subprocess.Popen, Path], bool]:
    return lambda proc, _: signals.read_mb(proc.pid) > mb


def written(name: str) -> Callable[[subprocess.Popen, Path], bool]:
    """Once the output's temporary, or a file in it (a folder), holds data."""
    return lambda _, folder: signals.temporary_bytes(folder, name) > 0


CASES = {
    "trace stats -": Case("trace stats -", read_over(64), endless_stdin=True),
    "trace convert -": Case(
        "trace convert - -o c.pcapng", written("c.pcapng"), ("c.pcapng",), endless_stdin=True
    ),
    "trace merge": Case("trace merge {a} {b} -o m.pcapng", written("m.pcapng"), ("m.pcapng",)),
    "trace demand": Case("trace demand {a} {b}", read_over(64)),
    "nic --trace": Case("nic --trace {a} --plot n.png", read_over(64), ("n.png",)),
    "dpdk-fwd --trace": Case("dpdk-fwd --trace {a} --plot d.png", read_over(64), ("d.png",)),
    "sweep": Case("sweep {spec} -o s.parquet", written("s.parquet.parts"), ("s.parquet",)),
    "report": Case("report -o r", cpu_over(1500), ("r",)),
    "counters import": Case("counters import {counters} --db c.duckdb", cpu_over(1500)),
    "explain": Case(
        "explain --counters {counters} --pps 10M --frame 64 --plot e.png",
        cpu_over(1500),
        ("e.png",),
    ),
    "bench calibrate": Case("bench calibrate {hosts} -o cal.toml", cpu_over(1500), ("cal.toml",)),
    "bench predict": Case(
        f"bench predict --host {HOST} --transactions 200000 --out p", cpu_over(1500), ("p",)
    ),
    "data import": Case("data import {hosts} --db d.duckdb", cpu_over(800)),
}
SHARED_DATA = {"bench calibrate", "bench predict", "data import"}
SWEEP_SPEC = """# 240 `iommu sim` points, a chunk each: 20 s of work
command = "iommu sim"
chunk = 1
[axes]
rxd = [128, 256, 512, 1024]
frame = [64, 128, 256, 512, 1024, 1518]
page = ["4k", "2m"]
poll_delay = [0, 1, 2, 4, 8]
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """The inputs the cases name: two captures of 2 M 64-byte frames, a 30 MB pcm-iio file,
    a sweep spec, the shared pcie-bench folders."""
    folder = tmp_path_factory.mktemp("inputs")
    a, b = signals.synth_captures(folder)
    counters = repeated(folder / "pcm-iio.csv", 30_000)  # 31 MB
    spec = folder / "sweep.toml"
    spec.write_text(SWEEP_SPEC)
    hosts = " ".join(str(p) for p in sorted(PCIE_BENCH.glob("nfp*")))
    return {"a": str(a), "b": str(b), "counters": str(counters), "spec": str(spec), "hosts": hosts}


def _feed_forever(proc: subprocess.Popen, capture: Path) -> None:
    """Write `capture` to the command's standard input, then its records again and again,
    until the command goes away."""
    data = capture.read_bytes()
    header, records = data[:24], data[24 : 24 + (8 << 20) // 76 * 76]  # whole 76-byte records
    try:
        proc.stdin.write(header)
        while True:
            proc.stdin.write(records)
    except (BrokenPipeError, ValueError, OSError):  # it exited, or the pipe was closed
        pass


@pytest.mark.parametrize("stop", STOPS, ids=[s.name for s in STOPS])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_signal_stops_the_command(tmp_path, inputs, name, stop):
    if name in SHARED_DATA and not HOST.is_dir():
        pytest.skip("../shared/data/pcie-bench is absent")
    case = CASES[name]
    argv = case.argv.format(**inputs).split()
    if case.endless_stdin:
        proc = signals.start(argv, tmp_path, stdin=subprocess.PIPE)
        feeder = threading.Thread(target=_feed_forever, args=(proc, Path(inputs["a"])))
        feeder.start()
    else:
        proc = signals.start(argv, tmp_path)
    signals.wait_for(proc, lambda: case.mid_work(proc, tmp_path), f"{name} mid-work")
    unpublished = lambda: not any((tmp_path / p).exists() for p in case.published)  # noqa: E731
    seconds, err = signals.stop(proc, stop, unpublished)
    if case.endless_stdin:
        feeder.join()
    lines = err.strip().splitlines()
    assert proc.returncode == 128 + stop, err
    by = "" if stop == signal.SIGINT else f" by {stop.name}"
    assert lines[-1] == f"pcieperf: interrupted{by}"
    assert not [line for line in lines if "Traceback" in line or "panicked" in line], err
    assert seconds < signals.STOP_S, f"{name} took {seconds:.2f} s to stop"
    left = signals.leftovers(tmp_path, ("s.parquet.parts",))
    assert left in ([], ["c.duckdb"], ["d.duckdb"]), f"{name} left {left}"
    # What a stopped run keeps: a store with nothing imported; a sweep's parts, each whole
    # (it resumes from them: docs/scale.md), and no temporary among them.
    for store, listing in (("c.duckdb", "counters ls"), ("d.duckdb", "data ls")):
        if (tmp_path / store).exists():
            shown = subprocess.run(
                [sys.executable, "-m", "pcieperf.cli", *listing.split(), "--db", store, "--json"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout.strip() == "[]", f"{name} imported {shown.stdout}"
    parts = tmp_path / "s.parquet.parts"
    if parts.exists():
        kept = sorted(p.name for p in parts.iterdir())
        assert all(p.endswith((".parquet", ".json")) for p in kept), kept
    shutil.rmtree(tmp_path)

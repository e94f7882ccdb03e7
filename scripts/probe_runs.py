"""The hostile probe's runs (scripts/hostile_probe.py): a child process per case, in a
scratch folder laid out as a clone, each ending classified as a refusal, accepted, an internal
error, a half file or a leftover (docs/robustness.md)."""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy  # noqa: F401  (preloaded: a forked child starts with it)

from pcieperf import cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "pcieperf"
SHARED = Path(os.environ.get("PCIEPERF_SHARED_DATA") or ROOT.parent / "shared" / "data")
HOST = "../shared/data/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
PCM = "tests/data/counters/pcm-iio-skx.csv"
CAPTURE = "tests/data/dpdk2211/one-lcore-640.pcap"
TEMPORARY = re.compile(r"\.part$|^\.[^/]*\.DIR\.|pcieperf-\d+-")
NOT_FINITE = re.compile(r"\b(nan|inf|-inf)\b", re.IGNORECASE)
DASK_SCRATCH = "dask-scratch-space"  # distributed's temporary-directory
TIMEOUT_S = 120.0
PROGRESS_EVERY = 250
AS_LIMIT = 3 << 30  # every child's address space: bounded memory, or it fails
FSIZE_LIMIT = 1024  # a full disk after 1 KiB


@dataclass
class Result:
    """One child's end: exit code (negative: killed by that signal), output, peak RSS."""

    code: int
    stdout: str
    stderr: str
    rss_kib: int
    seconds: float


@dataclass
class Verdict:
    """How one case ended, and why where it is a failure."""

    family: str
    name: str
    kind: str  # refusal, accepted, internal, half, leftover
    detail: str = ""
    rss_kib: int = 0


@dataclass
class Probe:
    """The scratch folder, how children start, and the verdicts so far."""

    scratch: Path
    fork: bool
    quick: bool
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def work(self) -> Path:
        """The folder runs start in: laid out as a clone's root (tests/, ../shared/data)."""
        return self.scratch / "pcieperf"

    @property
    def tmp(self) -> Path:
        """The children's TMPDIR: anything pcieperf leaves there is a leftover."""
        return self.scratch / "tmp"

    def env(self) -> dict[str, str]:
        """The children's environment: their store and temporaries in the scratch folder."""
        store = str(self.scratch / "store.duckdb")
        return os.environ | {"PCIEPERF_DB": store, "TMPDIR": str(self.tmp), "COLUMNS": "100"}


# --- running children ------------------------------------------------------------------------


def preload_cli() -> None:
    """Import every command module once, building the full parser (numpy comes with this
    module): a forked child then starts in milliseconds, not a start-up."""
    cli.build_parser()


def spawn(
    probe: Probe, argv: list[str], limits: dict[int, int], stdin: str | None, exec_: bool = False
) -> int:
    """Start `pcieperf ARGV` in the scratch work folder under `limits` (exec'd where `exec_` or
    the probe execs every child, else the preloaded CLI in a fork); returns its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    logs = probe.scratch / "logs"
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: never returns
        _child(probe, argv, limits, stdin, logs / f"{os.getpid()}", exec_ or not probe.fork)
    finally:
        os._exit(70)


def _child(
    probe: Probe, argv: list[str], limits: dict, stdin: str | None, log: Path, exec_: bool
) -> None:
    """Set up the child's files, limits and signals, then run the CLI in it."""
    os.chdir(probe.work)
    os.setpgid(0, 0)
    fds = [os.open(stdin or os.devnull, os.O_RDONLY)]
    fds += [os.open(f"{log}.{n}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC) for n in ("out", "err")]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for kind, value in limits.items():
        resource.setrlimit(kind, (value, value))
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
    os.environ.clear()
    os.environ.update(probe.env())
    if exec_:
        exe = Path(sys.executable).with_name("pcieperf")
        os.execv(exe, [str(exe), *argv])
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's exit
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def finish(probe: Probe, pid: int, timeout: float = TIMEOUT_S) -> Result:
    """Wait for child `pid` (killed past `timeout`: code -9 and a note on stderr)."""
    start, timed_out = time.monotonic(), False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout and not timed_out:
            timed_out = True
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    log = probe.scratch / "logs" / f"{pid}"
    out, err = (_read_and_remove(Path(f"{log}.{n}")) for n in ("out", "err"))
    err += f"\n[probe: killed after {timeout:.0f} s]" if timed_out else ""
    return Result(code, out, err, usage.ru_maxrss, time.monotonic() - start)


def _read_and_remove(path: Path) -> str:
    """A child's output file's text, the file removed."""
    text = path.read_text(errors="replace") if path.exists() else ""
    path.unlink(missing_ok=True)
    return text


def run(
    probe: Probe,
    argv: list[str],
    limits: dict | None = None,
    stdin: str | None = None,
    exec_: bool = False,
) -> Result:
    """Run `pcieperf ARGV` to its end under the address-space limit and `limits`."""
    every = {resource.RLIMIT_AS: AS_LIMIT} | (limits or {})
    return finish(probe, spawn(probe, argv, every, stdin, exec_))


# --- classifying -----------------------------------------------------------------------------


def classify(result: Result, signalled: int = 0) -> tuple[str, str]:
    """Refusal (exit 2, one line, no traceback), accepted (exit 0, finite output) or internal
    (anything else: a traceback, exit 1, a killed child, a messy refusal)."""
    lines = [ln for ln in result.stderr.strip().splitlines() if "warning:" not in ln]
    last = lines[-1] if lines else ""
    if "Traceback" in result.stderr or "internal error" in result.stderr:
        return "internal", last
    if signalled and result.code == 128 + signalled:
        return "refusal", last
    if result.code == 0:
        return "accepted", ""
    if result.code == 2:
        return ("refusal", last) if len(lines) == 1 else ("internal", f"{len(lines)} lines")
    return "internal", f"exit {result.code}: {last}"


def tokens(text: str) -> frozenset[str]:
    """The NaN and infinity words in `text`."""
    return frozenset(found.lower() for found in NOT_FINITE.findall(text))


def non_finite(allowed: frozenset[str]) -> Callable:
    """A check: an accepted run printed no NaN or infinity beyond `allowed` (those its
    unchanged example prints, or the value given echoed back)."""

    def check(result: Result) -> tuple[str, str] | None:
        found = tokens(result.stdout) - allowed
        return (
            ("internal", f"non-finite output {sorted(found)}")
            if result.code == 0 and found
            else None
        )

    return check


def record(probe: Probe, family: str, name: str, result: Result, **kw) -> Verdict:
    """Classify `result`, add the verdict, and print failures as they come."""
    kind, detail = classify(result, kw.pop("signalled", 0))
    for check in [non_finite(kw.pop("allowed", frozenset())), *kw.pop("checks", ())]:
        failure = check(result)
        if failure:
            kind, detail = failure
    verdict = Verdict(family, name, kind, detail, result.rss_kib)
    probe.verdicts.append(verdict)
    if kind not in ("refusal", "accepted"):
        print(f"  {kind:9} {family}: {name}: {detail}", flush=True)
    if len(probe.verdicts) % PROGRESS_EVERY == 0:
        print(f"  ... {len(probe.verdicts)} runs", flush=True)
    return verdict


def leftovers(probe: Probe) -> list[Path]:
    """Pcieperf temporaries anywhere in the scratch folder or the children's TMPDIR."""
    found = [p for p in probe.scratch.rglob("*") if TEMPORARY.search(p.name)]
    return [p for p in found if "logs" not in p.parts and p.parent != probe.scratch / "fixtures"]


def check_leftovers(probe: Probe, family: str, name: str) -> None:
    """Count (then remove) every temporary left since the last check, as one verdict each."""
    for path in leftovers(probe):
        probe.verdicts.append(Verdict(family, name, "leftover", str(path)))
        print(f"  leftover  {family}: {name}: {path}", flush=True)
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    for path in probe.tmp.iterdir():
        if not dask_locks_only(path):
            probe.verdicts.append(Verdict(family, name, "leftover", f"TMPDIR: {path.name}"))
            print(f"  leftover  {family}: {name}: TMPDIR: {path.name}", flush=True)
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def dask_locks_only(path: Path) -> bool:
    """Whether `path` is dask's shared scratch folder holding only its empty lock files
    (distributed's WorkSpace keeps global.lock and purge.lock there for every later cluster,
    by design): no worker's folder, nothing of pcieperf's."""
    if path.name != DASK_SCRATCH:
        return False
    inside = list(path.rglob("*"))
    return all(p.is_file() and p.suffix == ".lock" and not p.stat().st_size for p in inside)


def snapshot(path: Path) -> dict[str, bytes] | None:
    """A file's or folder's bytes (None: absent), to see whether a failed run changed it."""
    if not path.exists():
        return None
    if path.is_file():
        return {"": path.read_bytes()}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def unchanged_unless_accepted(target: Path, before: dict | None) -> Callable:
    """A check: a run that did not succeed left `target` as it was (a half file otherwise)."""

    def check(result: Result) -> tuple[str, str] | None:
        if result.code != 0 and snapshot(target) != before:
            return "half", f"{target.name} changed by a run that failed ({result.code})"
        if result.code == 0 and snapshot(target) in (None, {}):
            return "half", f"{target.name} missing or empty after exit 0"
        return None

    return check


# --- the scratch folder ----------------------------------------------------------------------


@contextmanager
def scratch_probe(fork: bool, quick: bool) -> Iterator[Probe]:
    """A probe in a fresh scratch folder laid out as a clone, removed (mounts too) at the end."""
    top = Path(tempfile.mkdtemp(prefix="pcieperf-probe."))
    probe = Probe(top, fork, quick)
    try:
        for sub in ("pcieperf", "tmp", "logs", "out", "fixtures", "shared"):
            (top / sub).mkdir()
        (probe.work / "tests").symlink_to(ROOT / "tests")
        if SHARED.is_dir():
            (top / "shared" / "data").symlink_to(SHARED)
        yield probe
    finally:
        for mount in sorted(top.glob("mnt-*")):
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def fill_store(probe: Probe) -> None:
    """What the help examples read: the store's pcie-bench results and one counter import,
    and a host's predicted pcie-bench files."""
    dirs = sorted(str(p) for p in (SHARED / "pcie-bench").glob("*/"))
    predict = ["bench", "predict", "--host", HOST, "--out", "predicted", "--transactions", "2000"]
    for argv in (["data", "import", *dirs], ["counters", "import", PCM], predict):
        result = run(probe, argv)
        if result.code != 0:
            raise SystemExit(f"setup failed: pcieperf {' '.join(argv)}: {result.stderr}")


def out_path(probe: Probe, name: str) -> Path:
    """A fresh output name in the scratch output folder."""
    return probe.scratch / "out" / f"{len(probe.verdicts)}-{name}"

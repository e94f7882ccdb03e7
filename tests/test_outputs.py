"""Every output is published whole or not at all (issue 28): pcieperf.outputs itself, and the
commands that write files run as a user runs them, with a write that fails part-way (a file
size limit, RLIMIT_FSIZE, as a full disk fails it) and with SIGTERM/SIGHUP mid-work. The old
output must be byte-identical afterwards, no temporary may be left, and the failure is one
line, exit 2 (128 + the signal for a signal)."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pcieperf import outputs
from pcieperf.capture.calibration import runs_file
from pcieperf.errors import PcieperfWarning, UsageError
from tests.helpers import TESTS_DATA

CAPTURE = TESTS_DATA / "dpdk2211" / "one-lcore-640.pcapng"
SHIPPED_RUNS = runs_file(
    Path(outputs.__file__).parent / "capture" / "calibrations" / "debian12-dpdk22.11-2core.toml"
)
PCM = TESTS_DATA / "counters" / "pcm-iio-skx.csv"  # a pcm-iio sample
DMA_SPEC = TESTS_DATA / "sweep-dma.toml"
WAIT_S = 120.0  # generous: a loaded 2-core CI machine


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


# --- the module ------------------------------------------------------------------------------


def test_an_output_that_appears_meanwhile_is_kept(tmp_path):
    # The check before the work passed; another program made the file since: no clobbering.
    out = tmp_path / "o.txt"

    def theirs_meanwhile(tmp: Path) -> None:
        tmp.write_text("new")
        out.write_text("theirs")

    with pytest.raises(UsageError, match="exists; pass `force`"):
        outputs.write_with(out, False, theirs_meanwhile)
    assert out.read_text() == "theirs"
    assert _temporaries(tmp_path) == []


def test_force_replaces_a_file_and_adds_to_an_existing_folder(tmp_path):
    out = tmp_path / "o.txt"
    out.write_text("old")
    outputs.write_text(out, "new", force=True)
    assert out.read_text() == "new"
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "old.csv").write_text("old")
    with outputs.folder(folder, force=True) as work:
        (work / "new.csv").write_text("new")
    assert sorted(p.name for p in folder.iterdir()) == ["new.csv", "old.csv"]
    assert _temporaries(tmp_path) == []


def test_a_new_folder_is_published_in_one_step(tmp_path):
    out = tmp_path / "new"
    with outputs.folder(out, force=False) as work:
        (work / "a.csv").write_text("a")
        assert not out.exists()  # nothing visible until the block ends
    assert [p.name for p in out.iterdir()] == ["a.csv"]


def test_a_failed_write_names_the_output_and_the_reason(tmp_path):
    out = tmp_path / "o.txt"
    out.write_text("old")

    def full(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(UsageError, match=f"cannot write {out}: No space left on device"):
        outputs.write_with(out, True, full)
    assert out.read_text() == "old"
    assert _temporaries(tmp_path) == []


def test_a_read_only_folder_is_named_not_masked_by_the_cleanup(tmp_path, monkeypatch):
    # On a read-only mount Linux refuses unlink(2) with EROFS even for a name that does not
    # exist (do_unlinkat asks for write access before the lookup): the cleanup of a temporary
    # that was never made raised that OSError over the one-line error (scripts/hostile_probe.py
    # found `bench predict --out` on a read-only tmpfs ending in an internal error).
    def read_only(*_args, **_kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(Path, "mkdir", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    message = f"cannot write {tmp_path / 'p'}: Read-only file system"
    with pytest.raises(UsageError, match=message), outputs.folder(tmp_path / "p", force=False):
        pass


def test_a_killed_writers_temporary_is_removed_by_the_next(tmp_path):
    # A pid that cannot be running (above pid_max): what SIGKILL leaves.
    stale = tmp_path / f".o.txt.{outputs.MARK}-4194999-abcd.part"
    stale.write_text("half")
    theirs = tmp_path / f".o.txt.{outputs.MARK}-{os.getpid()}-beef.part"  # alive: kept
    theirs.write_text("busy")
    with pytest.warns(PcieperfWarning, match="left by pcieperf process 4194999"):
        outputs.write_text(tmp_path / "o.txt", "new", force=False)
    assert _temporaries(tmp_path) == [theirs.name]


def test_texts_published_together_are_undone_together(tmp_path, monkeypatch):
    # write_texts (capture calibrate's pair): the second cannot be published (a file of its
    # name appeared meanwhile), so the first, published already over an older one with force,
    # is put back as it was; no temporary stays.
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a")
    publish = outputs.publish

    def racing(tmp: Path, output: Path, force: bool) -> None:
        if output == second:
            second.write_text("theirs")
        publish(tmp, output, force)

    monkeypatch.setattr(outputs, "publish", racing)
    with pytest.raises(UsageError, match=r"b\.txt exists"):
        outputs.write_texts([(first, "new a", True), (second, "new b", False)])
    assert (first.read_text(), second.read_text()) == ("old a", "theirs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


# --- the commands, run as a user runs them ---------------------------------------------------


def _cli(args: list[str], limit: int | None = None, **kw) -> subprocess.CompletedProcess:
    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", *args],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=WAIT_S,
        **kw,
    )


WRITERS = {
    "trace convert": (["trace", "convert", str(CAPTURE), "-o"], "c.pcapng"),
    "capture calibrate": (["capture", "calibrate", "--csv", str(SHIPPED_RUNS), "-o"], "c.toml"),
    "iommu advise --plot": (["iommu", "advise", "--packets", "20000", "--plot"], "a.png"),
    "report": (["report", "-o"], "report"),
    "iommu fit -o": (
        ["iommu", "fit", "--counters", str(PCM), "--pps", "7M", "--packets", "20000", "-o"],
        "fit.toml",
    ),
    "sweep": (["sweep", str(DMA_SPEC), "-o"], "s.parquet"),
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_write_cut_short_leaves_the_old_output(tmp_path, name):
    # 1 KiB is far below each output (the smallest, c.toml, is ~2.3 KiB): every command hits
    # the limit mid-file, as on a full disk.
    argv, target = WRITERS[name]
    out = tmp_path / target
    first = _cli([*argv, str(out)])
    assert first.returncode == 0, first.stderr
    before = _snapshot(out)
    cut = _cli([*argv, str(out), "--force"], limit=1024)
    assert cut.returncode == 2, cut.stderr
    assert "File too large" in cut.stderr.strip().splitlines()[-1], cut.stderr
    assert "Traceback" not in cut.stderr
    assert _snapshot(out) == before
    assert _temporaries(tmp_path) == []


def _snapshot(out: Path) -> dict[str, bytes]:
    paths = sorted(out.rglob("*")) if out.is_dir() else [out]
    return {str(p.relative_to(out.parent)): p.read_bytes() for p in paths if p.is_file()}


def _as_from_a_terminal() -> None:
    """A child that takes SIGTERM and SIGHUP as a command started from a terminal does: the
    test runner may run with them ignored (nohup) or blocked (a worker thread's mask), and
    both are inherited."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGHUP])


MID_WRITE_BYTES = 1 << 20


def _written(folder: Path) -> int:
    """Bytes in the temporaries in `folder` (0 while there are none, or one was just renamed)."""
    try:
        return sum((folder / name).stat().st_size for name in _temporaries(folder))
    except FileNotFoundError:
        return 0


def _synth_signalled(folder: Path, seconds: str, stop: int, start=_as_from_a_terminal):
    """Run `trace synth` of `seconds` into `folder`, send it `stop` once its temporary exists
    (or it has ended), and return the process and what it printed on stderr."""
    out = folder / "synth.pcap"
    argv = ["trace", "synth", "--pps", "1M", "--duration", seconds, "-o", str(out), "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", *argv],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=start,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        # Mid-write: past the first MiB, once what the first chunk imports is in (a signal that
        # lands inside a module's import can be lost or cut it short: docs/robustness.md).
        while _written(folder) < MID_WRITE_BYTES and proc.poll() is None:
            assert time.monotonic() < deadline, "the temporary never grew"
            time.sleep(0.02)
        # Frozen where it is, so that the signal lands mid-write however fast the write runs
        # and however late this (loaded) process looked: its temporary must still be there.
        proc.send_signal(signal.SIGSTOP)
        assert _temporaries(folder) or proc.poll() is not None, "stopped after its publish"
        proc.send_signal(stop)
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc, err


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_signal_mid_write_leaves_nothing(tmp_path, stop):
    # trace synth streams 20 M packets (1.5 GB) into its temporary: stopped once it exists.
    proc, err = _synth_signalled(tmp_path, "20s", stop)
    assert proc.returncode == 128 + stop, err
    assert err.strip().splitlines()[-1] == f"pcieperf: interrupted by {stop.name}"
    assert not (tmp_path / "synth.pcap").exists()
    assert _temporaries(tmp_path) == []


def test_a_second_sweep_to_the_same_output_refuses(tmp_path):
    from pcieperf.sweep.run import _owned, parts_dir

    out = tmp_path / "s.parquet"
    with _owned(parts_dir(out)):  # a first sweep, still running
        second = _cli(["sweep", str(DMA_SPEC), "-o", str(out)])
    assert second.returncode == 2, second.stderr
    assert second.stderr == (
        f"pcieperf: error: another sweep is writing {out}.parts; wait for it or give another "
        "--output\n"
    )
    assert not out.exists()


def test_an_ignored_hangup_stays_ignored(tmp_path):
    # `nohup pcieperf ...`: SIGHUP ignored at the start must not stop the command.
    def nohup() -> None:
        _as_from_a_terminal()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc, err = _synth_signalled(tmp_path, "1s", signal.SIGHUP, nohup)
    assert proc.returncode == 0, err
    # pcap header, then 1 M records of 16 + 60 B (64 B frames without their FCS)
    assert (tmp_path / "synth.pcap").stat().st_size == 24 + 1_000_000 * (16 + 60)

"""Run one Python fuzz target under atheris (libFuzzer) with pcieperf instrumented.

    python fuzz/python/fuzz.py TARGET [--keep-going] [libFuzzer options] [CORPUS_DIR | FILE ...]
    python fuzz/python/fuzz.py --list

A target raising anything but PcieperfError is a crash. By default libFuzzer stops at the
first one and writes it to `<artifact_prefix>crash-<sha1>` (replay: pass that file instead of
the corpus). With --keep-going the harness records the first input of each distinct crash
(exception type and the pcieperf line it came from) as `<artifact_prefix>bug-<hash>` plus a
`.txt` traceback, and fuzzing goes on: a long campaign then finds more than one bug per run.
TOML targets mutate the document's structure as well as its bytes (toml_mutator.py).
"""

from __future__ import annotations

import hashlib
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["pcieperf"]):
    from targets import TARGETS, TOML_TARGETS

    from pcieperf.errors import PcieperfError
from toml_mutator import mutate


def signature(exc: BaseException) -> str:
    """Exception type and the innermost pcieperf frame: one line per distinct bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/pcieperf/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__} at {where}"


def artifact_prefix(argv: list[str]) -> str:
    """LibFuzzer's -artifact_prefix= value (default: the current directory)."""
    given = [a.split("=", 1)[1] for a in argv if a.startswith("-artifact_prefix=")]
    return given[-1] if given else "./"


def keep_going(target: Callable[[bytes], None], prefix: str) -> Callable[[bytes], None]:
    """`target` that records each distinct crash once instead of stopping the fuzzer."""
    seen: set[str] = set()

    def run(data: bytes) -> None:
        try:
            target(data)
        except PcieperfError:
            return
        except Exception as exc:  # the bug class under test: anything not ours
            sig = signature(exc)
            if sig in seen:
                return
            seen.add(sig)
            name = f"{prefix}bug-{hashlib.sha1(sig.encode()).hexdigest()[:12]}"
            Path(name).write_bytes(data)
            Path(f"{name}.txt").write_text(f"{sig}\n{''.join(traceback.format_exception(exc))}")
            print(f"#keep-going: NEW {sig} -> {name}", flush=True)

    return run


def strict(target: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """`target` with PcieperfError allowed; anything else reaches libFuzzer as a crash."""

    def run(data: bytes) -> None:
        try:
            target(data)
        except PcieperfError:
            return

    return run


def main(argv: list[str]) -> None:
    """Parse our two options, hand the rest to libFuzzer."""
    if "--list" in argv or len(argv) < 2 or argv[1] not in TARGETS:
        print("targets: " + " ".join(TARGETS))
        sys.exit(0 if "--list" in argv else 2)
    name, rest = argv[1], argv[2:]
    going = "--keep-going" in rest
    rest = [a for a in rest if a != "--keep-going"]
    target = keep_going(TARGETS[name], artifact_prefix(rest)) if going else strict(TARGETS[name])
    typed = {"custom_mutator": mutate} if name in TOML_TARGETS else {}
    atheris.Setup([argv[0], *rest], target, **typed)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)

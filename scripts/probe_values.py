"""The hostile probe's bad values (issue 28, sections 4, 5, 9, 10): every flag of every
command, every number of the TOML files the tool reads, every input path."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from functools import cache
from pathlib import Path

from pcieperf.cli import build_parser
from pcieperf.cli.examples import EXAMPLES
from probe_runs import (
    HOST,
    PACKAGE,
    TEMPORARY,
    Probe,
    Result,
    check_leftovers,
    out_path,
    record,
    run,
    tokens,
)

# --- 4, 10: bad numbers and enums in every flag ----------------------------------------------

BAD_VALUES = ("nan", "inf", "-1", "0", "1e30", str(10**20), "", "text")
BAD_TOML = (math.nan, math.inf, -1, "text")
NEVER = {"dpdk run", "capture run"}  # they start dpdk-testpmd/dpdk-dumpcap
PATH_DESTS = {"db", "host", "calibration", "platform", "setup", "counters", "trace", "csv"}
PATH_DESTS |= {"measured", "predicted", "output", "out", "plot", "fit_out", "stack", "points"}
OUTPUT_FLAGS = ("-o", "--out", "--plot", "--fit-out")
EXAMPLE = "(its example)"  # a command's unchanged help example: the baseline of its flags
SMALL = {"--packets": "2000", "--transactions": "2000"}  # keeps accepted runs short


@cache
def leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command the CLI has, with its parser, from `pcieperf.cli.build_parser`."""

    def walk(parser: argparse.ArgumentParser, path: str) -> Iterator:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, parser
        for action in subs:
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}".strip())

    return dict(walk(build_parser(), ""))


def value_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The options of `parser` that take a number or a word (not a path, not a switch)."""
    return [
        action.option_strings[-1]
        for action in parser._actions
        if action.option_strings
        and action.nargs != 0
        and action.dest not in PATH_DESTS | {"help", "output_format"}
    ]


def base_argv(probe: Probe, command: str) -> list[str]:
    """The command's help example (it runs as pasted), its outputs renamed fresh, globs
    expanded, its work shrunk (fewer simulated packets, no Dask cluster)."""
    words = [w.strip("'") for w in EXAMPLES[command].split()[1:]]
    fresh = []
    for i, word in enumerate(words):
        if i and (words[i - 1] in OUTPUT_FLAGS or (command == "trace convert" and i == 3)):
            word = str(out_path(probe, Path(word).name))
        fresh += sorted(str(p) for p in probe.work.glob(word)) if "*" in word else [word]
    flags = leaf_parsers()[command]._option_string_actions
    small = [w for k, v in SMALL.items() if k in flags and k not in fresh for w in (k, v)]
    return _without(fresh, "--scheduler") + small


def _without(words: list[str], option: str) -> list[str]:
    """`words` less `option` and its value."""
    if option not in words:
        return words
    at = words.index(option)
    return words[:at] + words[at + 2 :]


def with_flag(words: list[str], flag: str, value: str) -> list[str]:
    """`words` with `flag` set to `value` (replacing a value the example gives)."""
    return [*_without(words, flag), f"{flag}={value}"]


def sample(items: list, quick: bool, every: int) -> list:
    """All of `items`, or every `every`-th in quick mode."""
    return items[::every] if quick else items


def probe_flags(probe: Probe) -> None:
    """Every value-taking flag of every command given each bad value (section 4, 9, 10)."""
    cases = [
        (command, flag, value)
        for command, parser in leaf_parsers().items()
        if command not in NEVER
        for flag in value_flags(parser)
        for value in BAD_VALUES
    ]
    examples = {}
    for command, flag, value in sample(cases, probe.quick, 29):
        if command not in examples:
            example = run(probe, base_argv(probe, command))
            examples[command] = tokens(example.stdout)  # the baseline: as designed
            record(probe, "flags", f"{command} {EXAMPLE}", example, allowed=examples[command])
            clear_outputs(probe)
        argv = with_flag(base_argv(probe, command), flag, value)
        checks = [nothing_new_on_failure(probe)]
        allowed = examples[command] | tokens(value)
        result = run(probe, argv)
        record(probe, "flags", f"{command} {flag}={value}", result, checks=checks, allowed=allowed)
        clear_outputs(probe)
    check_leftovers(probe, "flags", "all")


def nothing_new_on_failure(probe: Probe) -> Callable:
    """A check: a run that failed created nothing in the output folder."""
    before = set((probe.scratch / "out").iterdir())

    def check(result: Result) -> tuple[str, str] | None:
        new = set((probe.scratch / "out").iterdir()) - before
        if result.code != 0 and new:
            return "half", f"created {sorted(p.name for p in new)} and failed ({result.code})"
        return None

    return check


def clear_outputs(probe: Probe) -> None:
    """Remove what accepted runs wrote (after their checks)."""
    for path in (probe.scratch / "out").iterdir():
        if not TEMPORARY.search(path.name):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


# --- 9: bad values in the TOML files the tool ships --------------------------------------------

SIMULATE = ["iommu", "sim", "--packets", "2000"]
TOML_USERS = {  # a file, and a command line that reads it in place of FILE
    "nic/profiles/testpmd-fwd.toml": ["dpdk-fwd", "--pps", "1M", "--frame", "64", "--profile"],
    "nic/profiles/bypass.toml": ["latency", "--sizes", "64", "--profile"],
    "pciebench/calibrations/nfp6000.toml": [*SIMULATE, "--calibration"],
    "iommu/platforms/e5-v4.toml": [*SIMULATE, "--platform"],
    "iommu/setups/talk.toml": [*SIMULATE, "--setup"],
    "capture/calibrations/debian12-dpdk22.11-2core.toml": ["capture", "model", "--calibration"],
    "../../tests/data/sweep-dma.toml": ["sweep", "-o", "OUT", "--"],
    "host.toml": ["bench", "sim", "--device", "nfp6000", "--transactions", "2000", "--host"],
}


def toml_value(value: object) -> str:
    """`value` written as TOML (tables inline): enough for the shipped files' types."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def dump_toml(tables: dict) -> str:
    """A whole TOML document: one `key = value` line per top-level key."""
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in tables.items())


def numeric_keys(tables: dict, path: tuple = ()) -> Iterator[tuple]:
    """The key path of every number in `tables` (inside tables; lists are left whole)."""
    for key, value in tables.items():
        if isinstance(value, dict):
            yield from numeric_keys(value, (*path, key))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield (*path, key)


def mutated(tables: dict, path: tuple, value: object) -> dict:
    """A deep copy of `tables` with the key at `path` set to `value`."""
    copy = json.loads(json.dumps(tables))
    inner = copy
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return copy


def toml_cases(source: Path) -> Iterator[tuple[str, dict]]:
    """Each numeric key of a file set to each bad value, and an unknown key."""
    tables = tomllib.loads(source.read_text())
    for path in numeric_keys(tables):
        for value in BAD_TOML:
            yield f"{'.'.join(path)}={value}", mutated(tables, path, value)
    yield "unknown top-level key", tables | {"no_such_key": 1}


def probe_toml(probe: Probe) -> None:
    """Every numeric key of every kind of TOML file made bad, read by its command (section
    9): NIC and forwarding profiles, calibrations, platforms, setups, sweep specs, hosts."""
    run(probe, ["bench", "host", HOST, "-o", str(probe.scratch / "fixtures" / "host.toml")])
    for name, argv in TOML_USERS.items():
        source = (PACKAGE / name) if "/" in name else probe.scratch / "fixtures" / name
        cases = sample(list(toml_cases(source)), probe.quick, 25)
        for label, tables in cases:
            path = probe.scratch / "fixtures" / f"bad-{source.name}"
            path.write_text(dump_toml(tables))
            line = [str(out_path(probe, "o.parquet")) if w == "OUT" else w for w in argv]
            result = run(probe, [*line, str(path)])
            record(probe, "toml", f"{source.name}: {label}", result)
            clear_outputs(probe)
    check_leftovers(probe, "toml", "all")


# --- 4, 5: unreadable, wrong-kind and endless inputs -------------------------------------------

INPUTS = {  # an input, and a command line that reads it in place of FILE
    "latency --host": ["latency", "--profile", "bypass", "--sizes", "64", "--host", "FILE"],
    "bench sim --host": ["bench", "sim", "--device", "nfp6000", "--transactions", "2000", "--host"],
    "bench predict --host": ["bench", "predict", "--out", "OUT", "--host", "FILE"],
    "data import": ["data", "import", "FILE"],
    "bench calibrate": ["bench", "calibrate", "-o", "OUT", "FILE"],
    "bench host": ["bench", "host", "-o", "OUT", "FILE"],
    "validate --measured": ["validate", "--predicted", "predicted", "--measured", "FILE"],
    "validate --predicted": ["validate", "--measured", HOST, "--predicted", "FILE"],
    "iommu sim --calibration": [*SIMULATE, "--calibration", "FILE"],
    "iommu sim --platform": [*SIMULATE, "--platform", "FILE"],
    "iommu sim --setup": [*SIMULATE, "--setup", "FILE"],
    "latency --profile": ["latency", "--sizes", "64", "--profile", "FILE"],
    "capture model --calibration": ["capture", "model", "--calibration", "FILE"],
    "capture calibrate --csv": ["capture", "calibrate", "-o", "OUT", "--csv", "FILE"],
    "explain --counters": ["explain", "--pps", "10M", "--frame", "64", "--counters", "FILE"],
    "counters import": ["counters", "import", "FILE"],
    "sweep": ["sweep", "-o", "OUT", "FILE"],
    "trace stats": ["trace", "stats", "FILE"],
    "trace convert": ["trace", "convert", "FILE", "OUT"],
    "nic --trace": ["nic", "--trace", "FILE"],
}
INPUTS["bench sim --host"].append("FILE")
OUT_NAMES = {"trace convert": "o.pcapng", "sweep": "o.parquet", "bench predict --host": "out"}


def bad_inputs(probe: Probe) -> dict[str, str]:
    """Paths no command can read as its input: missing, a folder, a device, a pipe, empty,
    through a file, a symbolic link loop, a name too long."""
    fixtures = probe.scratch / "fixtures"
    (fixtures / "a-folder").mkdir(exist_ok=True)
    (fixtures / "empty").write_bytes(b"")
    (fixtures / "text").write_text("not what any command reads\n")
    with suppress(FileExistsError):
        (fixtures / "loop").symlink_to(fixtures / "loop")
    with suppress(FileExistsError):
        os.mkfifo(fixtures / "fifo")
    return {
        "missing": str(fixtures / "missing.toml"),
        "folder": str(fixtures / "a-folder"),
        "/dev/zero": "/dev/zero",
        "fifo": str(fixtures / "fifo"),
        "empty": str(fixtures / "empty"),
        "text": str(fixtures / "text"),
        "through a file": str(fixtures / "text" / "x.toml"),
        "link loop": str(fixtures / "loop"),
        "name too long": str(fixtures / ("n" * 300)),
    }


@contextmanager
def fifo_writer(path: str) -> Iterator[None]:
    """A writer that feeds the pipe 64 KiB of zeros and closes it (a reader never blocks
    forever on opening it)."""
    writer = subprocess.Popen(
        ["dd", "if=/dev/zero", f"of={path}", "bs=64k", "count=1"], stderr=subprocess.DEVNULL
    )
    try:
        yield
    finally:
        writer.kill()
        writer.wait()


def probe_inputs(probe: Probe) -> None:
    """Every input given every unreadable or endless path (sections 4, 5): peak RSS kept."""
    cases = [(use, kind, path) for use in INPUTS for kind, path in bad_inputs(probe).items()]
    for use, kind, path in sample(cases, probe.quick, 13):
        argv = [
            str(out_path(probe, OUT_NAMES.get(use, "o.toml")))
            if w == "OUT"
            else path
            if w == "FILE"
            else w
            for w in INPUTS[use]
        ]
        checks = [nothing_new_on_failure(probe)]
        with fifo_writer(path) if kind == "fifo" else nullcontext():
            result = run(probe, argv, exec_=True)
        record(probe, "inputs", f"{use} {kind}", result, checks=checks)
        clear_outputs(probe)
    stdin = run(probe, ["trace", "stats", "-"], stdin="/dev/zero", exec_=True)
    record(probe, "inputs", "trace stats - < /dev/zero", stdin)
    tlps = run(probe, ["dma", "--sizes", "1000000000", "--tlps"], exec_=True)
    record(probe, "inputs", "dma --sizes 1000000000 --tlps", tlps)
    check_leftovers(probe, "inputs", "all")

"""Helpers shared by the tests."""

import subprocess

from pcieperf.cli import main


def run_cli(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr). argparse's own exits
    (usage errors, --help) arrive as SystemExit and are turned into the code too."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def tshark_fields(path, fields):
    """Every packet record of a capture as tshark reads it: one list of `fields` per record."""
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", *(a for f in fields for a in ("-e", f))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("\t") for line in out.splitlines()]


def epoch_ns(text):
    """tshark's frame.time_epoch ("seconds.fraction") as whole nanoseconds."""
    seconds, _, frac = text.partition(".")
    return int(seconds) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])

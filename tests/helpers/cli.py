"""The CLI as the tests run it: in-process with its exit code and output, and every command and
command group walked from its parser."""

import argparse
from collections.abc import Iterator

from pcieperf.cli import build_parser, main


def run_cli(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr). argparse's own exits
    (usage errors, --help) arrive as SystemExit and are turned into the code too."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv) -> str:
    """Run the CLI on input it must refuse: exit code 2, nothing on stdout and one line on
    stderr, which is returned."""
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1, err
    return err


def command_paths(
    parser: argparse.ArgumentParser | None = None, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and command group as its words after `pcieperf`, walked from the parser."""
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from command_paths(sub, (*prefix, name))


ALL = sorted(command_paths(), key=lambda item: item[0])

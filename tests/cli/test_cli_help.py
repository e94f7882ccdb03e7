"""First contact: `pcieperf`, `pcieperf --help` and every command's and group's --help print
help (exit 0, no traceback), name the main options and show one example line."""

import subprocess
import sys

import pytest

from pcieperf.cli import build_parser
from pcieperf.cli.examples import EXAMPLES
from tests.helpers.cli import ALL, run_cli


def test_every_command_is_walked():
    # 17 top-level commands and groups plus the 22 subcommands of the six groups (README list;
    # `platforms` and `iommu fit` added with the platform profiles, `sweep` with the engine,
    # `latency` with issue 18, `trace demand` with the archives, `dpdk fwd` with issue 16,
    # the `capture` group and its run, runs and show with issue 26, `bench host` and
    # `counters show|rm` with 27, `devices` with 42, `capture probe` with 43).
    names = {" ".join(path) for path, _ in ALL}
    assert {"link", "trace stats", "dpdk run", "iommu advise", "bench predict"} <= names
    assert len(names) == 50 == len(EXAMPLES)


@pytest.mark.parametrize(("argv", "status"), [([], 2), (["--help"], 0)], ids=["bare", "help"])
def test_pcieperf_alone_and_help(capsys, argv, status):
    # `pcieperf` alone lacks its command: the help, on stderr, and argparse's usage status 2.
    code, out, err = run_cli(capsys, *argv)
    assert code == status, err
    shown = out if status == 0 else err
    assert "usage: pcieperf" in shown
    assert "Traceback" not in out + err
    for path, _ in ALL:
        if len(path) == 1:
            assert path[0] in shown


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=[" ".join(p) for p, _ in ALL])
def test_help_of_every_command(capsys, path):
    code, out, err = run_cli(capsys, *path, "--help")
    assert code == 0, err
    assert "Traceback" not in out + err
    assert f"usage: pcieperf {' '.join(path)}" in out
    assert f"example:\n  {EXAMPLES[' '.join(path)]}" in out
    parser = dict(ALL)[path]
    for action in parser._actions:  # every option the command takes is described
        for flag in action.option_strings:
            assert flag in out, flag


@pytest.mark.parametrize("group", sorted({p[0] for p, _ in ALL if len(p) == 2}))
def test_a_group_alone_lists_its_commands(capsys, group):
    code, _, err = run_cli(capsys, group)
    assert code == 2  # a command is missing: a usage error
    subcommands = [p[1] for p, _ in ALL if len(p) == 2 and p[0] == group]
    assert all(name in err for name in subcommands)


def test_examples_parse():
    # Every example line is a valid command line for the parser (its files aside).
    parser = build_parser()
    for example in EXAMPLES.values():
        words = example.split()[1:]
        args = parser.parse_args(words)
        assert args.command == words[0]


def test_help_from_a_fresh_process():
    # The first command a newcomer types, in a process of its own (the entry point as installed).
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "explain" in done.stdout
    assert done.stderr == ""


def test_the_summaries_in_pcieperf_help_are_the_commands_own():
    # `pcieperf --help` lists each top-level command without importing its module, from
    # _COMMANDS (start-up, issue 15); each entry must be its docstring's first sentence, the
    # text `pcieperf COMMAND --help` shows, or the two would drift apart.
    from pcieperf.cli._parser import _COMMANDS

    top = {path[0]: parser for path, parser in ALL if len(path) == 1}
    assert set(_COMMANDS) == {name for name, p in top.items() if "func" in p._defaults}
    for name, summary in _COMMANDS.items():
        doc = " ".join(top[name]._defaults["func"].__doc__.split())
        assert doc.split(". ")[0].rstrip(".") == summary, name


def test_pcieperf_help_imports_no_command_module():
    # Start-up (issue 15): `pcieperf --help` builds every command's name and summary, not its
    # options, so no module that registers a command is imported (nor traceback: --debug only);
    # examples holds the example lines of the epilogs, a table only; _words how errors name
    # flags, a table and two functions.
    probe = (
        "import sys\nfrom pcieperf.cli import main\n"
        "try: main(['--help'])\nexcept SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('pcieperf.cli.') or m == 'traceback'))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(
        [
            "pcieperf.cli._common",
            "pcieperf.cli._parser",
            "pcieperf.cli._words",
            "pcieperf.cli.examples",
        ]
    )


@pytest.mark.parametrize("columns", [None, "60", "250", "0", "-3", "wide"])
def test_help_is_as_wide_as_argparse_would_make_it(monkeypatch, columns):
    # The CLI's formatter reads the terminal width itself (no shutil import, issue 15); it
    # must be argparse's own width: shutil.get_terminal_size().columns ($COLUMNS when a
    # positive integer, else stdout's terminal, else 80), whatever $COLUMNS holds.
    import shutil

    from pcieperf.cli._parser import _terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("LINES", "40")
    assert _terminal_columns() == shutil.get_terminal_size().columns
    wanted = {"60": 60, "250": 250}.get(columns)  # the others: the terminal's, or 80
    assert wanted is None or _terminal_columns() == wanted

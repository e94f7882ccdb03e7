"""Helpers shared by the CLI tests."""

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

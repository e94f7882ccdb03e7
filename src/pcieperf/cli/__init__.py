"""The `pcieperf` command line: one subcommand per capability, `--json` everywhere.

Each command group lives in its own module; this one assembles the parser (only the asked-for
command's options are built: start-up stays light) and turns every error into one line on
stderr: exit code 2 for anything the user caused (an OS error on a named path included: too
long, unreadable, a link loop), 1 for an unexpected failure (with a traceback only under
`--debug`)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from pcieperf import interrupts, progress
from pcieperf.cli._parser import (
    _COMMANDS,
    _GROUPS,
    _Formatter,
    _Parser,
    _parser_options,
    _Version,
)
from pcieperf.cli.examples import EXAMPLES
from pcieperf.errors import PcieperfError, PcieperfWarning, UsageError, require_plot_file

_TOP_LEVEL: dict[str, tuple[str, str]] = {
    "link": ("link", "_add_link_command"),
    "dma": ("link", "_add_dma_command"),
    "nic": ("nic", "_add_nic_command"),
    "latency": ("latency", "_add_latency_command"),
    "profiles": ("profiles", "_add_profiles_command"),
    "dpdk-fwd": ("dpdk_fwd", "_add_dpdk_fwd_command"),
    "explain": ("explain", "_add_explain_command"),
    "dpdk": ("dpdk", "_add_dpdk_commands"),
    "capture": ("capture", "_add_capture_commands"),
    "data": ("data", "_add_data_commands"),
    "bench": ("bench", "_add_bench_commands"),
    "validate": ("predict", "_add_validate_command"),
    "iommu": ("iommu", "_add_iommu_commands"),
    "platforms": ("platforms", "_add_platforms_command"),
    "trace": ("trace", "_add_trace_commands"),
    "counters": ("counters", "_add_counters_commands"),
    "report": ("report", "_add_report_command"),
    "sweep": ("sweep", "_add_sweep_command"),
}
"""Every top-level command and group, in help order: the module under `pcieperf.cli` that
registers it and the function that does (imported only for the command asked for)."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full argument parser (also used to document the CLI and by `sweep`), or, with
    `only`, one in which every top-level command or group but `only` has its name and summary
    alone: their options name the models (numpy, duckdb, scipy), which `--help` or a light
    command such as `link` must not import (issue 15: start-up under 120 ms)."""
    parser = _Parser(
        prog="pcieperf",
        description="Predict, measure and explain the PCIe cost of packet I/O on high-speed "
        "NICs and DPDK data planes.",
        epilog="examples:\n  "
        + "\n  ".join(EXAMPLES[c] for c in ("nic", "dpdk-fwd", "trace stats", "report"))
        + "\n\n`pcieperf COMMAND --help` describes each command.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    parser.add_argument("--version", action=_Version, help="show the installed version and exit")
    parser.set_defaults(help_of=parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module, adder) in _TOP_LEVEL.items():
        if only is None or name == only:
            getattr(importlib.import_module(f"pcieperf.cli.{module}"), adder)(sub)
        else:
            summary = _COMMANDS.get(name) or _GROUPS[name]
            sub.add_parser(name, **_parser_options(sub, name, summary))
    return parser


def _top_level_word(argv: Sequence[str]) -> str:
    """The top-level command or group that `argv` names: its first word that is no option
    (`pcieperf` has no option that takes a value), or "" for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def _show_warning(message: Warning | str, category: type[Warning], *_: object) -> None:
    """One line on stderr per warning, in the CLI's voice (no file and line of the source)."""
    print(f"pcieperf: warning: {message}", file=sys.stderr)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an unusable plot file before any work starts (a long sweep or simulation must
    not end in 'file exists')."""
    plot = getattr(args, "plot", None)
    if plot is not None:
        require_plot_file(plot, getattr(args, "force", False))


def _by(exc: KeyboardInterrupt) -> str:
    """' by SIGTERM' where a signal other than Ctrl-C's stopped the work."""
    return f" by {exc}" if isinstance(exc, interrupts.Stopped) else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_top_level_word(argv))
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:  # `pcieperf` or a group alone: show what it offers
        args.help_of.print_help()
        return 0
    progress.configure(quiet=args.quiet or args.output_format != "table")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", PcieperfWarning)
            warnings.showwarning = _show_warning
            _check_outputs(args)
            with interrupts.stop_as_interrupt():
                args.func(args)
    except KeyboardInterrupt as exc:
        print(f"pcieperf: interrupted{_by(exc)}", file=sys.stderr)
        return interrupts.exit_code(exc)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Python's docs recommend.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except UsageError as exc:
        print(f"pcieperf: error: {exc}", file=sys.stderr)
        return 2
    except PcieperfError as exc:
        print(f"pcieperf: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno is None or exc.filename is None:
            return _internal_error(exc, args.debug)
        # A path the system refuses wherever it is first touched (is_dir, stat, open): too
        # long, unreadable, a link loop, a full or read-only disk; the user's to fix.
        print(f"pcieperf: error: {exc.filename}: {os.strerror(exc.errno)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the one place that catches everything, by design
        return _internal_error(exc, args.debug)
    return 0


def _internal_error(exc: Exception, debug: bool) -> int:
    """Report a failure pcieperf did not foresee (a bug): one line, the traceback with
    --debug; exit code 1."""
    if debug:
        import traceback  # only here: it costs every start-up ~4 ms

        traceback.print_exc()
    print(
        f"pcieperf: internal error: {type(exc).__name__}: {exc} "
        "(rerun with --debug for a traceback)",
        file=sys.stderr,
    )
    return 1

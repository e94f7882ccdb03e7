"""The `pcieperf` command line: one subcommand per capability, `--json` everywhere.

Each command group lives in its own module; this one assembles the parser (only the asked-for
command's options are built: start-up stays light) and turns every error into one line on
stderr: exit code 2 for anything the user caused (an OS error on a named path included: too
long, unreadable, a link loop), 1 for an unexpected failure (with a traceback only under
`--debug`)."""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

from pcieperf import interrupts, progress, text
from pcieperf.cli._parser import (
    _COMMANDS,
    _GROUPS,
    _Formatter,
    _Parser,
    _parser_options,
    _Version,
)
from pcieperf.cli._words import flag_namer
from pcieperf.cli.examples import EXAMPLES
from pcieperf.errors import PcieperfError, PcieperfWarning, UsageError, Worded, require_plot_file

_TOP_LEVEL = (
    "link",
    "dma",
    "nic",
    "latency",
    "profiles",
    "devices",
    "dpdk-fwd",
    "explain",
    "dpdk",
    "capture",
    "data",
    "bench",
    "validate",
    "iommu",
    "platforms",
    "trace",
    "counters",
    "report",
    "sweep",
)
"""Every top-level command and group, in help order."""


def _add_top_level(name: str, sub: argparse._SubParsersAction) -> None:
    """Register command or group `name` with its options; only its own module is imported."""
    match name:
        case "link":
            from pcieperf.cli.link import _add_link_command as add
        case "dma":
            from pcieperf.cli.link import _add_dma_command as add
        case "nic":
            from pcieperf.cli.nic import _add_nic_command as add
        case "latency":
            from pcieperf.cli.latency import _add_latency_command as add
        case "profiles":
            from pcieperf.cli.profiles import _add_profiles_command as add
        case "devices":
            from pcieperf.cli.devices import _add_devices_command as add
        case "dpdk-fwd":
            from pcieperf.cli.dpdk_fwd import _add_dpdk_fwd_command as add
        case "explain":
            from pcieperf.cli.explain import _add_explain_command as add
        case "dpdk":
            from pcieperf.cli.dpdk import _add_dpdk_commands as add
        case "capture":
            from pcieperf.cli.capture import _add_capture_commands as add
        case "data":
            from pcieperf.cli.data import _add_data_commands as add
        case "bench":
            from pcieperf.cli.bench import _add_bench_commands as add
        case "validate":
            from pcieperf.cli.predict import _add_validate_command as add
        case "iommu":
            from pcieperf.cli.iommu import _add_iommu_commands as add
        case "platforms":
            from pcieperf.cli.iommu import _add_platforms_command as add
        case "trace":
            from pcieperf.cli.trace import _add_trace_commands as add
        case "counters":
            from pcieperf.cli.counters import _add_counters_commands as add
        case "report":
            from pcieperf.cli.report import _add_report_command as add
        case "sweep":
            from pcieperf.cli.sweep import _add_sweep_command as add
        case _:
            raise ValueError(f"no top-level command {name!r}")
    add(sub)


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
    for name in _TOP_LEVEL:
        if only is None or name == only:
            _add_top_level(name, sub)
        else:
            summary = _COMMANDS.get(name) or _GROUPS[name]
            sub.add_parser(name, **_parser_options(sub, name, summary))
    return parser


def _top_level_word(argv: Sequence[str]) -> str:
    """The top-level command or group that `argv` names: its first word that is no option
    (`pcieperf` has no option that takes a value), or "" for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def _warning_printer(flag: Callable[[str], str]) -> Callable[..., None]:
    """Print each warning as one line on stderr, in the CLI's voice (its flags; no file and
    line of the source); the signature `warnings.showwarning` has."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = message.worded(flag) if isinstance(message, Worded) else message
        print(f"pcieperf: warning: {text}", file=sys.stderr)

    return show


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an unusable plot file before any work starts (a long sweep or simulation must
    not end in 'file exists')."""
    plot = getattr(args, "plot", None)
    if plot is not None:
        require_plot_file(plot, getattr(args, "force", False))


def _by(exc: KeyboardInterrupt) -> str:
    """' by SIGTERM' where a signal other than Ctrl-C's stopped the work."""
    return f" by {exc}" if isinstance(exc, interrupts.Stopped) else ""


def run() -> NoReturn:
    """The `pcieperf` command: `main`, its output flushed and the exit handlers run (logging,
    Dask's, temporary files'), then an exit without the interpreter's teardown of every module
    it loaded (~40 ms with numpy and DuckDB: an eighth of `explain`). Callers in Python use
    `main`, which returns."""
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away, or the stream is closed
            code = code or 1
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_top_level_word(argv))
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:  # `pcieperf` or a group alone: a command is missing
        args.help_of.print_help(sys.stderr)
        return 2
    progress.configure(quiet=args.quiet or args.output_format != "table")
    text.configure(wide=args.wide)
    flag = flag_namer(args.command_parser)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", PcieperfWarning)
            warnings.showwarning = _warning_printer(flag)
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
        print(f"pcieperf: error: {exc.worded(flag)}", file=sys.stderr)
        return 2
    except PcieperfError as exc:
        print(f"pcieperf: error: {exc.worded(flag)}", file=sys.stderr)
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

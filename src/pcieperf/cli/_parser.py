"""Registering commands: help from each command's docstring, an example per command, the
options every command has (`--format`/`--json`, `--quiet`), and `--version`."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from pcieperf.cli._common import _add_link_options
from pcieperf.cli.examples import EXAMPLES


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help layout (descriptions kept as written) at the terminal's width as argparse
    finds it, without importing shutil for it: shutil brings bz2 and lzma, ~16 M instructions
    of every command's start-up (argparse makes a formatter for each option it adds). Every
    option that takes a value shows its default, where its help does not say it."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or action.nargs == 0
            or default in (None, argparse.SUPPRESS)
            or "default" in text
        ):
            return action.help
        shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else default
        return f"{text} (default: {_help_text(str(shown))})"


def _terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` gives: $COLUMNS if a positive integer, else
    the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    if sys.__stdout__ is None:  # no standard output at all (pythonw)
        return 80
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line and exits 2, and takes a value that
    starts with a minus and a digit (`--pps -5M`) as a value, for its option to refuse."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# ---------------------------------------------------------------------------------------------
# Parser and entry point


def _help_text(text: str) -> str:
    """Double every literal % (as in "15 %"): argparse %-formats help strings."""
    return text.replace("%", "%%")


def _parser_options(subparsers: argparse._SubParsersAction, name: str, summary: str) -> dict:
    """The help, description and example epilog of one (sub)command or command group."""
    path = f"{subparsers._prog_prefix} {name}".removeprefix("pcieperf ")
    first_sentence = " ".join(summary.split()).split(". ")[0].rstrip(".")
    return {
        "help": _help_text(first_sentence),
        "description": summary,  # printed as written: argparse %-formats only the help
        "epilog": f"example:\n  {EXAMPLES[path]}",
        "formatter_class": _Formatter,
    }


def _add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    func: Callable[[argparse.Namespace], None],
    *,
    link: bool = False,
    store: bool = False,
) -> argparse.ArgumentParser:
    """Register one (sub)command: its help from `func`'s docstring, `--format` (`--json`),
    `--quiet`, and optionally the link options or the store location."""
    p = subparsers.add_parser(name, **_parser_options(subparsers, name, func.__doc__ or name))
    p.add_argument(
        "--format",
        dest="output_format",
        action=_OutputFormat,
        default="table",
        metavar="{table,json,csv}",
        help="output: a table (default), JSON, or CSV of the JSON's rows (units in the header)",
    )
    p.add_argument(
        "--json",
        dest="output_format",
        action="store_const",
        const="json",
        help="the same as --format json",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars, and no line that only confirms a file written",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="tables whole, whatever the terminal's width (as when output goes to a pipe)",
    )
    p.set_defaults(command_parser=p)  # how its errors name parameters (cli._words)
    if link:
        _add_link_options(p)
    if store:
        p.add_argument(
            "--db", default=None, help="store file (default: user data dir, or $PCIEPERF_DB)"
        )
    p.set_defaults(func=func)
    return p


OUTPUT_FORMATS = ("table", "json", "csv")


class _Version(argparse.Action):
    """`--version`: the installed package's version, from its metadata (read only when asked:
    importlib.metadata would slow every start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        suppress = argparse.SUPPRESS  # `dest`: --version stores nothing
        super().__init__(option_strings, suppress, 0, **kwargs)  # type: ignore[arg-type]  # argparse

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import version

        print(f"pcieperf {version('pcieperf')}")
        parser.exit()


class _OutputFormat(argparse.Action):
    """`--format table|json|csv`. Where a command reads a counter file, its tool's name (what
    `--format` meant there before `--counters-format`) still selects the tool, with a
    deprecation line."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: object,
        option_string: str | None = None,
    ) -> None:
        tools = next((a.choices for a in parser._actions if a.dest == "format"), None) or ()
        if value in OUTPUT_FORMATS:
            setattr(namespace, self.dest, value)
        elif value in tools:
            print(
                f"pcieperf: warning: --format {value} for the counter file is deprecated; "
                f"use --counters-format {value}",
                file=sys.stderr,
            )
            namespace.format = value
        else:
            allowed = ", ".join([*OUTPUT_FORMATS, *tools])
            parser.error(f"argument --format: {value!r} is not allowed; choose one of {allowed}")


def _add_group(
    subparsers: argparse._SubParsersAction, name: str, summary: str
) -> argparse._SubParsersAction:
    """Register a command group (`trace`, `iommu`, …); given alone it prints its help."""
    group = subparsers.add_parser(name, **_parser_options(subparsers, name, summary))
    group.set_defaults(help_of=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="COMMAND", parser_class=_Parser)


_GROUPS = {
    "dpdk": "Real DPDK runs (dpdk-testpmd, no NIC needed) and the forwarding estimate",
    "capture": "DPDK packet capture (dpdk-dumpcap, pdump): real runs beside testpmd, the capture "
    "path's model and its calibration",
    "data": "The measured-data store (pcie-bench results)",
    "bench": "pcie-bench: test definitions, the simulator, calibration and prediction",
    "iommu": "IOMMU and page size in DPDK data planes",
    "counters": "Imported uncore counter measurements (pcm-iio, perf, VTune)",
    "trace": "Capture files: stats, demand, merge, synth, convert",
}
"""The summary of each command group, shown beside its name in `pcieperf --help`."""

_COMMANDS = {
    "link": "Bandwidth of a link per direction",
    "dma": "Effective bandwidth and TLP cost of device DMA per transfer size",
    "nic": "What a NIC/driver profile achieves per frame size or mix, or what a trace needs",
    "latency": "Where one packet's loopback latency goes (PCIe, device, wire, host), and the DMAs "
    "in flight that its rate needs against the device's tags, per frame size (the paper's "
    "Figure 2; docs/latency.md)",
    "profiles": "List the built-in NIC profiles, or show one",
    "devices": "Every PCI device of this machine (sysfs) or of a saved `lspci -vv` text, and "
    "what its link costs each NIC",
    "dpdk-fwd": "The VTune-recipe estimate of DPDK forwarding traffic, term by term",
    "explain": "Measured PCIe counters against the DPDK forwarding model: the rate hypothesis "
    "first (is the packet rate given the one the counters imply?), then measured, predicted and "
    "ratio per metric, and a diagnosis for each deviation beyond 15 %",
    "validate": "Compare predicted with measured pcie-bench bandwidth results (MAPE, worst points)",
    "platforms": "List the platform IOMMU profiles with their sources, or show one parameter by "
    "parameter (value, the range the evidence leaves open, kind of evidence, source)",
    "report": "Write the default report (plots, CSV, index.html)",
    "sweep": "Evaluate every combination of `nic`, `dma`, `iommu sim` or `bench sim` options that "
    "a spec declares, in chunks on Dask, into one Parquet file (pandas, DuckDB)",
}
"""The first sentence of each top-level command's docstring, shown beside its name in
`pcieperf --help` without importing the command's module (tests/cli/test_cli_help.py checks
that the two agree)."""

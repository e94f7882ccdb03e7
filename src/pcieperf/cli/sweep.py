"""`pcieperf sweep`: a declared grid of `nic`, `dma`, `iommu sim` or `bench sim` points on
Dask, written to Parquet (pcieperf.sweep)."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pcieperf import engine, sweep
from pcieperf.cli._common import _add_scheduler_option, _link
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.bench import bench_sim_result
from pcieperf.cli.iommu import iommu_options, iommu_sim_result
from pcieperf.cli.link import dma_result
from pcieperf.cli.nic import nic_result
from pcieperf.errors import PcieperfWarning
from pcieperf.iommu.api import inputs
from pcieperf.nic.api import check
from pcieperf.pciebench.api import sim_setup
from pcieperf.sweep_check import check_estimate, check_points, estimate
from pcieperf.units import parse_int_list

if TYPE_CHECKING:
    from pcieperf.results import Result

Evaluate = Callable[[argparse.Namespace], sweep.Columns]


@dataclass(frozen=True)
class _Columns:
    """A sweep point's evaluation: the command's own API call (`result_of`, what the command
    prints), its rows as columns, so that a row equals the command's --json by construction.
    `nic` points differ in two ways: Parquet holds one type per column, so `size` (a number,
    or a mix's name) is stored as text; and a --pps above what the line or link carries is
    not warned about (a warning per point, thousands of lines: the `fits_line` and
    `fits_pcie` columns say it). Module-level functions only: it is sent to workers."""

    result_of: Callable[[argparse.Namespace], Result]
    nic: bool = False

    def __call__(self, args: argparse.Namespace) -> sweep.Columns:
        """The columns of the point (or run of sizes) `args`."""
        # catch_warnings is not thread-safe: nic's filter needs one worker thread per process
        # (engine.connect: not `gil_free`); the others change no filter.
        with warnings.catch_warnings():
            if self.nic:
                warnings.simplefilter("ignore", PcieperfWarning)
            columns = dict(self.result_of(args).to_columns())
        if self.nic:
            columns["size"] = [str(size) for size in columns["size"]]
        return columns


def _check_nic(args: argparse.Namespace) -> None:
    _link(args)
    check(args.profile, args.eth, args.vlan, args.paths, args.pps, args.sizes, args.mix)


def _check_dma(args: argparse.Namespace) -> None:
    _link(args)
    parse_int_list(args.sizes, "transfer size")


def _check_iommu_sim(args: argparse.Namespace) -> None:
    inputs(**iommu_options(args))


def _check_bench_sim(args: argparse.Namespace) -> None:
    sim_setup(args.host, args.device, args.test)
    parse_int_list(args.sizes, "transfer size")
    parse_int_list(args.windows, "window")


class _Sweepable(NamedTuple):
    """How `sweep` evaluates one command: its function, points per chunk by default (about
    half a second of work per task, far above what a Dask task costs: docs/scale.md), the
    check of one point's options as the command makes it before its model runs (every point
    is checked before any work: `sweep_check`), the options that are no parameter, those
    naming a .toml file, whether sizes may be joined into one call given the fixed options,
    and whether the evaluation's time is native code that releases the GIL (then in-process
    chunks run on a thread per core: engine.connect's `gil_free`)."""

    evaluate: Evaluate
    chunk: int
    check: Callable[[argparse.Namespace], None]
    excluded: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    joinable: Callable[[argparse.Namespace], bool] = lambda _: True
    gil_free: bool = False


_SWEEPABLE = {
    "nic": _Sweepable(
        _Columns(nic_result, nic=True),
        40_000,
        _check_nic,
        ("trace", "window", "skip_bad", "plot", "force", "breakdown"),
        ("profile",),
        lambda args: not args.mix,  # --mix rows follow the sizes': joining would reorder them
    ),
    "dma": _Sweepable(_Columns(dma_result), 200_000, _check_dma, ("tlps",)),
    "iommu sim": _Sweepable(
        _Columns(iommu_sim_result), 24, _check_iommu_sim, files=("calibration",), gil_free=True
    ),
    "bench sim": _Sweepable(
        _Columns(bench_sim_result), 32, _check_bench_sim, files=("host", "device")
    ),
}


def _command_parser(command: str) -> argparse.ArgumentParser:
    """A fresh copy of the parser of `command` ("nic", "iommu sim", ...)."""
    from pcieperf.cli import build_parser  # the package assembles every command's parser

    parser: argparse.ArgumentParser = build_parser(command.split()[0])
    for word in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def sweep_plan(path: Path, evaluate: Evaluate | None = None) -> sweep.Plan:
    """The plan of a sweep spec file: its points, each checked by the command's own parser and
    checks (without its model), and the evaluation of one point (the command's, unless another
    is given: tests, benchmarks)."""
    spec = sweep.load_spec(path, _SWEEPABLE, {name: s.chunk for name, s in _SWEEPABLE.items()})
    how = _SWEEPABLE[spec.command]
    plan = sweep.plan(
        spec,
        _command_parser(spec.command),
        evaluate or how.evaluate,
        excluded=how.excluded,
        files=how.files,
        vector_ok=how.joinable,
    )
    check_points(plan, how.check)
    return plan


def cmd_sweep(args: argparse.Namespace) -> None:
    """Evaluate every combination of `nic`, `dma`, `iommu sim` or `bench sim` options that a
    spec declares, in chunks on Dask, into one Parquet file (pandas, DuckDB). A run that
    stopped resumes from the chunks it wrote (OUT.parts/)."""
    scheduler = engine.parse_scheduler(args.scheduler)
    engine.require_dask("pcieperf sweep")
    plan = sweep_plan(Path(args.spec))
    output = Path(args.output)
    sweep.check_output(output, args.force)
    found = estimate(plan)  # a spec that fails fails before a cluster starts
    check_estimate(found, output, args.yes)
    label = (
        f"sweeping {found.points:,} points (about {found.cpu_s:,.0f} CPU s, "
        f"{found.output_bytes / 1e6:,.0f} MB)"
    )
    gil_free = _SWEEPABLE[plan.spec.command].gil_free
    with engine.connect(scheduler, quiet_logs=not args.debug, gil_free=gil_free) as client:
        out = {
            "scheduler": str(scheduler),
            **sweep.run(plan, output, client, force=args.force, label=label),
        }
    out["estimate"] = {"cpu_s": found.cpu_s, "output_bytes": found.output_bytes}

    def human() -> str:
        resumed = f", {out['chunks_resumed']} resumed" if out["chunks_resumed"] else ""
        return (
            f"{out['rows']:,} rows of {out['points']:,} points -> {output} "
            f"({out['chunks_evaluated']} chunks evaluated{resumed}, {out['scheduler']}, "
            f"{out['seconds']:.1f} s)"
        )

    _emit(args, out, human)


def _add_sweep_command(sub: argparse._SubParsersAction) -> None:
    """The `sweep` command and its options."""
    p = _add_command(sub, "sweep", cmd_sweep)
    p.add_argument("spec", help="sweep spec (.toml): command, options, axes (docs/scale.md)")
    p.add_argument("-o", "--output", required=True, help="OUT.parquet")
    p.add_argument("--force", action="store_true", help="overwrite OUT, discard another's parts")
    p.add_argument(
        "--yes",
        action="store_true",
        help="start a sweep estimated above an hour of CPU (sweep_check.CONFIRM_CPU_S)",
    )
    _add_scheduler_option(p)

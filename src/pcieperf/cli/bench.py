"""The `bench` group: pcie-bench test definitions, the simulator and calibration
(pcieperf.pciebench)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcieperf import progress
from pcieperf.cli._common import _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.predict import cmd_bench_predict
from pcieperf.pciebench import api
from pcieperf.units import parse_int_list

if TYPE_CHECKING:
    from pcieperf.pciebench.api import Progress
    from pcieperf.results import Table


def cmd_bench_tests(args: argparse.Namespace) -> None:
    """List the pcie-bench tests, cache states and access patterns."""
    emit(args, api.tests())


def bench_sim_result(args: argparse.Namespace, shown: Progress | None = None) -> Table:
    """`pp.bench.sim` called with the `bench sim` options."""
    return api.sim(
        host=args.host,
        device=args.device,
        test=args.test,
        sizes=parse_int_list(args.sizes, "transfer size"),
        windows=parse_int_list(args.windows, "window"),
        cache=args.cache,
        pattern=args.pattern,
        offset=args.offset,
        dev_offset=args.dev_offset,
        transactions=args.transactions,
        progress=shown,
    )


def cmd_bench_sim(args: argparse.Namespace) -> None:
    """Simulate pcie-bench points with a host and a device profile."""
    emit(args, bench_sim_result(args, lambda grid: progress.wrap(grid, "simulating", "point")))


def cmd_bench_calibrate(args: argparse.Namespace) -> None:
    """Fit the device profile and shared host parameters to measured pcie-bench results."""
    result = api.calibrate(
        args.dirs,
        output=args.output,
        name=args.name,
        force=args.force,
        progress=lambda dirs: progress.wrap(dirs, "reading", "dir"),
    )
    emit(args, result)


def cmd_bench_host(args: argparse.Namespace) -> None:
    """Write the host profile a pcie-bench directory gives, as `bench sim --host` reads it."""
    calibrated = {"calibration": args.calibration} if args.calibration else {}
    emit(
        args,
        api.host(host=args.dir, output=args.output, force=args.force, **calibrated),
    )


def _add_calibration_option(p: argparse.ArgumentParser) -> None:
    """--calibration: a `bench calibrate` file (bench host, bench predict)."""
    p.add_argument(
        "--calibration",
        default=None,
        metavar="FILE",
        help="calibration from `bench calibrate` (default: the NFP-6000 one shipped)",
    )


def _add_bench_commands(sub: argparse._SubParsersAction) -> None:
    """The `bench` group."""
    bench_sub = _add_group(sub, "bench", _GROUPS["bench"])
    _add_command(bench_sub, "tests", cmd_bench_tests)
    p = _add_command(bench_sub, "sim", cmd_bench_sim)
    p.add_argument(
        "--host",
        required=True,
        help="the host: its pcie-bench folder (lat_*.csv, sys-*.txt; on the shipped "
        "calibration, as bench predict) or a host profile (.toml, as bench host writes)",
    )
    p.add_argument(
        "--device",
        required=True,
        help="device profile (.toml), a `bench calibrate` file (its device), or nfp6000: "
        "the shipped calibration's NFP-6000 engine",
    )
    p.add_argument("--test", default="BW_DMA_RD", help="e.g. BW_RD, BW_DMA_WR, LAT_RD")
    p.add_argument("--sizes", default="64,128,256,512,1024,2048", help="bytes per transaction")
    p.add_argument("--windows", default="8192", help="window sizes in bytes")
    p.add_argument("--cache", default="HWarm", help="HWarm, DWarm, Cold or DThrash")
    p.add_argument("--pattern", choices=("Seq", "Rand"), default="Rand")
    p.add_argument("--offset", type=_whole(), default=0, help="host offset in bytes")
    p.add_argument(
        "--dev-offset",
        type=_whole(0),
        default=0,
        help="offset of the device-side buffer in bytes (its 8-byte alignment matters)",
    )
    p.add_argument("--transactions", type=_whole(1, 10**9), default=200_000, help="per point")
    p = _add_command(bench_sub, "calibrate", cmd_bench_calibrate)
    p.add_argument("dirs", nargs="+", help="pcie-bench result directories (latency and bandwidth)")
    p.add_argument("-o", "--output", required=True, help="calibration file to write (.toml)")
    p.add_argument("--name", default="calibrated device", help="name of the device profile")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p = _add_command(bench_sub, "host", cmd_bench_host)
    p.add_argument("dir", help="the host's pcie-bench directory: lat_*.csv and sys-*.txt")
    p.add_argument("-o", "--output", required=True, help="host profile to write (.toml)")
    _add_calibration_option(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p = _add_command(bench_sub, "predict", cmd_bench_predict)
    p.add_argument(
        "--host",
        metavar="DIR",
        help="the host's directory: lat_*.csv and sys-*.txt (named like pcie-bench's)",
    )
    p.add_argument("--calibrate", metavar="DIR", help="deprecated: the same as --host")
    p.add_argument("--out", required=True, help="folder for the predicted bw_*.csv files")
    _add_calibration_option(p)
    p.add_argument("--profile", metavar="FILE", help="deprecated: the same as --calibration")
    p.add_argument(
        "--transactions", type=_whole(1, 10**9), default=50_000, help="simulated per row"
    )
    p.add_argument("--force", action="store_true", help="overwrite existing predicted files")

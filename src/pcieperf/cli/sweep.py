"""`pcieperf sweep`: a declared grid of `nic`, `dma`, `iommu sim` or `bench sim` points on
Dask, written to Parquet (pcieperf.sweep)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pcieperf.cli._common import (
    _add_scheduler_option,
    _link,
    bench,
    engine,
    iommu_api,
    link_options,
    nic,
    pcie_api,
    pciebench_api,
    sweep,
)
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.nic import _nic_paths, _nic_result
from pcieperf.cli.platforms import iommu_options
from pcieperf.units import parse_int_list, parse_rate

# --- ADAPTERS (issue 16): `nic` and `bench sim` points still call the commands' internals; like
# `_sweep_dma` and `_sweep_iommu_sim`, each is to become "the API function's rows as columns"
# (`sweep.columns_from_rows(api_function(**keywords).to_json())`).

_NIC_COLUMNS = {
    "mean_frame_bytes": "mean_frame_bytes",
    "max_pps": "max_pps",
    "pcie_max_pps": "pcie_max_pps",
    "line_rate_pps": "line_pps",
    "achievable_gbps": "achievable_gbps",
    "line_rate_gbps": "line_rate_gbps",
    "bottleneck": "bottleneck",
    "pcie_up_gbps": "pcie_up_gbps",
    "pcie_down_gbps": "pcie_down_gbps",
    "up_bytes_per_pkt": "up_bytes_per_pkt",
    "down_bytes_per_pkt": "down_bytes_per_pkt",
    "up_tlps_per_pkt": "up_tlps_per_pkt",
    "down_tlps_per_pkt": "down_tlps_per_pkt",
}
"""Sweep column (the `nic --json` key) -> NicResult attribute."""


def _sweep_nic(args: argparse.Namespace) -> dict[str, object]:
    """One `nic` evaluation as columns, through the calls cmd_nic makes."""
    result = _nic_result(args, nic.load_profile(args.profile), _link(args), _nic_paths(args))
    columns = {"size": result.label, **{k: getattr(result, a) for k, a in _NIC_COLUMNS.items()}}
    if args.pps is not None:
        pps = parse_rate(args.pps)
        up, down = result.needed_gbps(pps)
        columns |= {
            "pps": [pps] * len(result.label),
            "needed_up_gbps": up,
            "needed_down_gbps": down,
            "fits_pcie": pps <= result.pcie_max_pps,
            "fits_line": pps <= result.line_pps,
        }
    return columns


def _sweep_dma(args: argparse.Namespace) -> dict[str, object]:
    """One `dma` evaluation as columns: the rows of `pp.dma`, as `dma --json` has them."""
    sizes = parse_int_list(args.sizes, "transfer size")
    result = pcie_api.dma(op=args.op, sizes=sizes, offset=args.offset, **link_options(args))
    return sweep.columns_from_rows(result.to_json())  # type: ignore[arg-type]


def _sweep_iommu_sim(args: argparse.Namespace) -> dict[str, object]:
    """One `iommu sim` evaluation as a one-row table, through the calls cmd_iommu_sim makes."""
    return sweep.columns_from_rows([iommu_api.sim(**iommu_options(args)).to_json()])


def _sweep_bench_sim(args: argparse.Namespace) -> dict[str, object]:
    """One `bench sim` evaluation (sizes x windows) as columns, through the calls
    cmd_bench_sim makes; latency columns are null for bandwidth tests."""
    from pcieperf.pciebench import sim

    host, device = sim.load_host(Path(args.host)), pciebench_api.bench_device(args.device)
    test = bench.canonical_test(args.test)
    rows = []
    for size in parse_int_list(args.sizes, "transfer size"):
        for window in parse_int_list(args.windows, "window"):
            point = sim.Point(test, args.pattern, args.cache, args.offset, 0, window, size)
            res = sim.simulate(point, host, device, transactions=args.transactions)
            rows.append(
                {
                    "test": test,
                    "size": size,
                    "window": window,
                    "bw_gbps": res.bw_gbps,
                    "trans_per_s": res.trans_per_s,
                    "iotlb_misses": res.iotlb_misses,
                    **res.latency_ns,
                }
            )
    return sweep.columns_from_rows(rows)


# --- END OF ADAPTERS


class _Sweepable(NamedTuple):
    """How `sweep` evaluates one command: its function, points per chunk by default (about
    half a second of work per task, far above what a Dask task costs: docs/scale.md), the
    options that are no parameter, those naming a .toml file, and whether sizes may be joined
    into one call given the fixed options."""

    evaluate: Callable[[argparse.Namespace], dict[str, object]]
    chunk: int
    excluded: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    joinable: Callable[[argparse.Namespace], bool] = lambda _: True


_SWEEPABLE = {
    "nic": _Sweepable(
        _sweep_nic,
        40_000,
        ("trace", "window", "skip_bad", "plot", "force", "breakdown"),
        ("profile",),
        lambda args: not args.mix,  # --mix rows follow the sizes': joining would reorder them
    ),
    "dma": _Sweepable(_sweep_dma, 200_000, ("tlps",)),
    "iommu sim": _Sweepable(_sweep_iommu_sim, 4, files=("calibration",)),
    "bench sim": _Sweepable(_sweep_bench_sim, 32, files=("host", "device")),
}


def _command_parser(command: str) -> argparse.ArgumentParser:
    """A fresh copy of the parser of `command` ("nic", "iommu sim", ...)."""
    from pcieperf.cli import build_parser  # the package assembles every command's parser

    parser: argparse.ArgumentParser = build_parser(command.split()[0])
    for word in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def sweep_plan(
    path: Path, evaluate: Callable[[argparse.Namespace], dict[str, object]] | None = None
) -> sweep.Plan:
    """The plan of a sweep spec file: its points, checked by the command's own parser, and the
    evaluation of one point (the command's, unless another is given: tests, benchmarks)."""
    spec = sweep.load_spec(path, _SWEEPABLE, {name: s.chunk for name, s in _SWEEPABLE.items()})
    how = _SWEEPABLE[spec.command]
    return sweep.plan(
        spec,
        _command_parser(spec.command),
        evaluate or how.evaluate,
        excluded=how.excluded,
        files=how.files,
        vector_ok=how.joinable,
    )


def cmd_sweep(args: argparse.Namespace) -> None:
    """Evaluate every combination of `nic`, `dma`, `iommu sim` or `bench sim` options that a
    spec declares, in chunks on Dask, into one Parquet file (pandas, DuckDB). A run that
    stopped resumes from the chunks it wrote (OUT.parts/)."""
    scheduler = engine.parse_scheduler(args.scheduler)
    engine.require_dask("pcieperf sweep")
    plan = sweep_plan(Path(args.spec))
    output = Path(args.output)
    sweep.check_output(output, args.force)
    sweep.check_first_point(plan)  # a spec that fails fails before a cluster starts
    with engine.connect(scheduler, quiet_logs=not args.debug) as client:
        out = {"scheduler": str(scheduler), **sweep.run(plan, output, client, force=args.force)}

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
    _add_scheduler_option(p)

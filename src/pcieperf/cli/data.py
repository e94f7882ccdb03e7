"""The `data` group: pcie-bench results in the store: import, list, show, plot."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _store, _whole, bench
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.results import format_table, is_numpy_scalar, json_default


def cmd_data_import(args: argparse.Namespace) -> None:
    """Import pcie-bench result directories into the store (all or nothing)."""
    # Parsed before the store is opened: a bad folder must not leave a new store file behind.
    from pcieperf.pciebench.bench import parse_result_dir

    parsed = [parse_result_dir(Path(d)) for d in progress.wrap(args.dirs, "reading", "dir")]
    with _store(args, write=True) as store:
        store.import_parsed(parsed, force=args.force)
        out = [
            {
                "system": p.info.name,
                "files": len(p.tables),
                "rows": sum(t.rows for t in p.tables),
                "host_facts": len(p.facts),
                "missing": p.missing,
            }
            for p in parsed
        ]
        path = store.path
    _emit(
        args,
        out,
        lambda: (
            format_table(
                ("system", "files", "rows", "missing"),
                [(o["system"], o["files"], o["rows"], len(o["missing"])) for o in out],
            )
            + f"\nstore: {path}"
        ),
    )


def cmd_data_ls(args: argparse.Namespace) -> None:
    """List the systems in the store."""
    with _store(args) as store:
        systems = store.systems()
    out = [{k: (str(v) if k == "imported_at" else v) for k, v in s.items()} for s in systems]
    _emit(
        args,
        out,
        lambda: (
            format_table(
                ("system", "cpu", "numa dev-mem-cpu", "iommu", "bw rows", "lat rows"),
                [
                    (
                        s["system"],
                        s["cpu"],
                        f"{s['numa_device']}-{s['numa_memory']}-{s['numa_cpu']}",
                        s["iommu"],
                        s["bw_rows"],
                        s["lat_rows"],
                    )
                    for s in systems
                ],
            )
            if systems
            else "the store is empty; run `pcieperf data import DIR...`"
        ),
    )


def cmd_data_show(args: argparse.Namespace) -> None:
    """Show the measured rows of one system and test."""
    test = bench.canonical_test(args.test)
    kind = bench.TESTS[test].kind
    with _store(args) as store:
        system = store.resolve(args.system)
        rows = store.rows(kind, system, test=test, file=args.file)
    keys = [k for k in rows if k != "system"]
    out = [
        {k: json_default(rows[k][i]) if is_numpy_scalar(rows[k][i]) else rows[k][i] for k in keys}
        for i in range(rows["test"].size)
    ]
    shown = (
        [
            "file",
            "pattern",
            "cache",
            "host_offset",
            "dev_offset",
            "window_bytes",
            "size_bytes",
            "bw_gbps",
        ]
        if kind == "bw"
        else [
            "file",
            "pattern",
            "cache",
            "host_offset",
            "window_bytes",
            "size_bytes",
            "med_ns",
            "p999_ns",
        ]
    )
    _emit(
        args,
        out,
        lambda: f"{system} {test}\n" + format_table(shown, [[o[k] for k in shown] for o in out]),
    )


def cmd_data_plot(args: argparse.Namespace) -> None:
    """Plot measured data: bandwidth vs size, window or offset, or latency CDFs."""
    from pcieperf.report.figures import plot_measured

    with _store(args) as store:
        path = plot_measured(
            store,
            args.systems,
            args.view,
            Path(args.output),
            args.size,
            args.direction,
            force=args.force,
        )
    _emit(args, {"plot": str(path)}, lambda: f"plot written to {path}")


def _add_data_commands(sub: argparse._SubParsersAction) -> None:
    """The `data` group."""
    data_sub = _add_group(sub, "data", _GROUPS["data"])

    def data_command(
        name: str, func: Callable[[argparse.Namespace], None]
    ) -> argparse.ArgumentParser:
        return _add_command(data_sub, name, func, store=True)

    p = data_command("import", cmd_data_import)
    p.add_argument("dirs", nargs="+", help="pcie-bench result directories")
    p.add_argument("--force", action="store_true", help="replace systems already imported")
    data_command("ls", cmd_data_ls)
    p = data_command("show", cmd_data_show)
    p.add_argument("system", help="system name or a unique part of it")
    p.add_argument("--test", required=True, help="e.g. BW_RD, BW_DMA_WR, LAT_RD")
    p.add_argument("--file", default=None, help="only rows from this result file")
    p = data_command("plot", cmd_data_plot)
    p.add_argument("systems", nargs="*", help="systems to overlay (default: all)")
    p.add_argument("--view", choices=("size", "window", "offset", "cdf"), default="size")
    p.add_argument("--size", type=_whole(), default=64, help="transfer size for window/offset/cdf")
    p.add_argument("--direction", choices=("rd", "wr"), default="rd")
    p.add_argument("-o", "--output", default="pcieperf-data.png", help="PNG or SVG file")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")

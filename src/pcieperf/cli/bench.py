"""The `bench` group: pcie-bench test definitions, the simulator and calibration
(pcieperf.pciebench)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _whole, bench, calibrate
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.predict import cmd_bench_predict
from pcieperf.errors import require_new_file
from pcieperf.results import format_table
from pcieperf.units import parse_int_list

BENCH_DEVICE = "nfp6000"  # the pcie-bench DMA engine: a device of `bench` only, not a NIC


def cmd_bench_tests(args: argparse.Namespace) -> None:
    """List the pcie-bench tests, cache states and access patterns."""
    out = {
        "tests": [
            {"name": t.name, "kind": t.kind, "path": t.path, "description": t.description}
            for t in bench.TESTS.values()
        ],
        "cache_states": bench.CACHE_STATES,
        "patterns": bench.PATTERNS,
    }
    _emit(
        args,
        out,
        lambda: (
            format_table(
                ("test", "kind", "meaning"),
                [(t.name, t.kind, t.description) for t in bench.TESTS.values()],
            )
            + "\n\n"
            + format_table(("cache", "meaning"), list(bench.CACHE_STATES.items()))
        ),
    )


def _bench_device(name: str) -> object:
    """The pcie-bench device: the shipped NFP-6000 calibration's, or a device profile file."""
    from pcieperf.pciebench import sim

    if name == BENCH_DEVICE:
        return calibrate.load_calibration(calibrate.DEFAULT_CALIBRATION).device
    return sim.load_device(Path(name))


def cmd_bench_sim(args: argparse.Namespace) -> None:
    """Simulate pcie-bench points with a host and a device profile."""
    from pcieperf.pciebench import sim

    host, device = sim.load_host(Path(args.host)), _bench_device(args.device)
    test = bench.canonical_test(args.test)
    grid = [
        (size, window)
        for size in parse_int_list(args.sizes, "transfer size")
        for window in parse_int_list(args.windows, "window")
    ]
    rows = []
    for size, window in progress.wrap(grid, "simulating", "point"):
        point = sim.Point(
            test, args.pattern, args.cache, args.offset, args.dev_offset, window, size
        )
        res = sim.simulate(point, host, device, transactions=args.transactions)
        rows.append(
            {
                "test": test,
                "size": size,
                "window": window,
                "cache": args.cache,
                "bw_gbps": res.bw_gbps,
                "trans_per_s": res.trans_per_s,
                "iotlb_misses": res.iotlb_misses,
                **res.latency_ns,
            }
        )
    lat = bench.TESTS[test].kind == "lat"
    keys = ("size", "window", "med_ns", "p999_ns") if lat else ("size", "window", "bw_gbps")
    _emit(args, rows, lambda: format_table(keys, [[r[k] for k in keys] for r in rows]))


def cmd_bench_calibrate(args: argparse.Namespace) -> None:
    """Fit the device profile and shared host parameters to measured pcie-bench results."""
    from pcieperf.pciebench import calibrate

    out = Path(args.output)
    require_new_file(out, args.force)
    runs = [calibrate.load_run(Path(d)) for d in progress.wrap(args.dirs, "reading", "dir")]
    result = calibrate.fit_device(runs, name=args.name)
    out.write_text(calibrate.calibration_toml(result), encoding="utf-8")
    payload = {
        "output": str(out),
        "device": asdict(result.device),
        "host": asdict(result.shared),
        "fit_mape_pct": result.fit_mape_pct,
        "points": result.points,
        "unsteady_hosts_left_out": result.left_out,
    }
    _emit(args, payload, lambda: _calibration_text(payload))


def _calibration_text(payload: dict) -> str:
    rows = [[name, pct] for name, pct in payload["fit_mape_pct"].items()]
    lines = [
        f"wrote {payload['output']} ({payload['points']} points)",
        *(f"  {t}.{k} = {v}" for t in ("device", "host") for k, v in payload[t].items()),
        format_table(("host", "fit MAPE %"), rows),
    ]
    if payload["unsteady_hosts_left_out"]:
        lines.append(
            "left out (latency p99.9 > 10x median): "
            + ", ".join(payload["unsteady_hosts_left_out"])
        )
    return "\n".join(lines)


def _add_bench_commands(sub: argparse._SubParsersAction) -> None:
    """The `bench` group."""
    bench_sub = _add_group(sub, "bench", _GROUPS["bench"])
    _add_command(bench_sub, "tests", cmd_bench_tests)
    p = _add_command(bench_sub, "sim", cmd_bench_sim)
    p.add_argument("--host", required=True, help="host profile (.toml)")
    p.add_argument(
        "--device",
        required=True,
        help="device profile (.toml), or nfp6000: the shipped calibration's NFP-6000 engine",
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
    p = _add_command(bench_sub, "predict", cmd_bench_predict)
    p.add_argument(
        "--calibrate",
        required=True,
        metavar="DIR",
        help="the host's directory: lat_*.csv and sys-*.txt (named like pcie-bench's)",
    )
    p.add_argument("--out", required=True, help="folder for the predicted bw_*.csv files")
    p.add_argument(
        "--profile",
        default=str(calibrate.DEFAULT_CALIBRATION),
        help="calibration from `bench calibrate` (default: the NFP-6000 one shipped)",
    )
    p.add_argument(
        "--transactions", type=_whole(1, 10**9), default=50_000, help="simulated per row"
    )
    p.add_argument("--force", action="store_true", help="overwrite existing predicted files")

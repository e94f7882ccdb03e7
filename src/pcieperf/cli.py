"""The `pcieperf` command line: one subcommand per capability, `--json` everywhere.

A single try/except around dispatch turns every error into one line on stderr: exit code 2 for
anything the user caused, 1 for an unexpected failure (with a traceback only under `--debug`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from pcieperf import _lazy, progress, wire
from pcieperf.errors import (
    PcieperfError,
    PcieperfWarning,
    UsageError,
    require_new_file,
    require_new_folder,
    require_plot_file,
)
from pcieperf.units import (
    parse_batch_histogram,
    parse_duration_ns,
    parse_int_list,
    parse_rate,
)

if TYPE_CHECKING:
    from pcieperf.ethernet import PacketMix
    from pcieperf.link import Link
    from pcieperf.store import Store

# The models and their numpy, duckdb and scipy are imported when a command first uses them, so
# that the capture commands start without them (docs/trace.md).
bench = _lazy.module("pcieperf.bench")
calibrate = _lazy.module("pcieperf.calibrate")
counters = _lazy.module("pcieperf.counters")
dpdk = _lazy.module("pcieperf.dpdk")
archiving = _lazy.module("pcieperf.archive")
engine = _lazy.module("pcieperf.engine")
ethernet = _lazy.module("pcieperf.ethernet")
explaining = _lazy.module("pcieperf.explain")
iommu = _lazy.module("pcieperf.iommu")
iommu_fit = _lazy.module("pcieperf.iommu_fit")
latency = _lazy.module("pcieperf.latency")
pcie = _lazy.module("pcieperf.link")
platforms = _lazy.module("pcieperf.platforms")
sweep = _lazy.module("pcieperf.sweep")
nic = _lazy.module("pcieperf.nic")
testpmd = _lazy.module("pcieperf.testpmd")
tlp = _lazy.module("pcieperf.tlp")
trace = _lazy.module("pcieperf.trace")

DEFAULT_PPS = "10M"
DEFAULT_PKT = 64
BENCH_DEVICE = "nfp6000"  # the pcie-bench DMA engine: a device of `bench` only, not a NIC
SECONDS_PER_DAY = 86_400  # the longest `dpdk run`: a longer one is a typo (it was found hanging)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# ---------------------------------------------------------------------------------------------
# Shared options


def _add_link_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("PCIe link")
    g.add_argument("--gen", type=_whole(), default=3, help=f"generation {sorted(pcie.GENERATIONS)}")
    g.add_argument("--lanes", type=_whole(), default=8, help=f"lane width {pcie.LANE_WIDTHS}")
    g.add_argument("--mps", type=_whole(), default=256, help="Max_Payload_Size, bytes (128..4096)")
    g.add_argument("--mrrs", type=_whole(), default=512, help="Max_Read_Request_Size (128..4096)")
    g.add_argument("--rcb", type=_whole(), default=64, help="Read Completion Boundary (64 or 128)")
    g.add_argument(
        "--completion",
        choices=("rcb", "mps"),
        default="rcb",
        help="completer splits read data at every RCB (default) or at MPS",
    )
    g.add_argument("--addr32", action="store_true", help="32-bit DMA addresses (3 DW headers)")
    g.add_argument("--ecrc", action="store_true", help="add a 4-byte ECRC to every TLP")
    g.add_argument(
        "--flit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Flit mode (always on for gen 6, off by default below)",
    )
    g.add_argument(
        "--ack-interval",
        type=_real(),
        default=None,
        metavar="SYMBOLS",
        help="symbol times between ACK DLLPs (default: spec table)",
    )
    g.add_argument(
        "--fc-interval",
        type=_real(),
        default=None,
        metavar="SYMBOLS",
        help="symbol times between UpdateFC DLLPs (default: spec table)",
    )


def _whole(low: int = -(2**62), high: int = 2**62) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` (huge values are typos, and would
    overflow the 64-bit arithmetic of the models)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is not allowed; use {low} to {high}")
        return value

    return parse


def _real(high: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite number up to `high` (NaN and infinity are refused here, by
    name)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not allowed; give a finite number")
        if value > high:
            raise argparse.ArgumentTypeError(f"{text} is not allowed; the most is {high:g}")
        return value

    return parse


def _link(args: argparse.Namespace) -> Link:
    return pcie.Link(
        gen=args.gen,
        lanes=args.lanes,
        mps=args.mps,
        mrrs=args.mrrs,
        rcb=args.rcb,
        addr64=not args.addr32,
        ecrc=args.ecrc,
        flit=args.flit,
        completion_policy=args.completion,
        ack_interval_symbols=args.ack_interval,
        fc_interval_symbols=args.fc_interval,
    )


def _emit(args: argparse.Namespace, payload: object, human: Callable[[], str]) -> None:
    """Print the result as --format asks: the human table, JSON, or CSV of the JSON's rows."""
    if args.output_format == "json":
        print(json.dumps(payload, indent=2, default=_json_default))
    elif args.output_format == "csv":
        print(csv_text(payload), end="")
    else:
        print(human())


def json_rows(payload: object) -> list[dict]:
    """The rows a command's JSON holds, each flattened (`_flat`): a list is one row per item;
    an object holding a list of objects is one row per item of that list (the object's other
    fields repeated on each, as context); any other object is one row."""
    if isinstance(payload, list):
        return [_flat(item) for item in payload]
    if isinstance(payload, dict):
        lists = [k for k, v in payload.items() if _is_rows(v)]
        if len(lists) == 1:
            context = _flat({k: v for k, v in payload.items() if k != lists[0]})
            return [context | _flat(item, f"{lists[0]}.") for item in payload[lists[0]]]
    return [_flat(payload)]


def _is_rows(value: object) -> bool:
    """Whether a JSON value is a non-empty list of objects (a table's rows)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _flat(value: object, prefix: str = "") -> dict:
    """A JSON value as one row: nested objects become `a.b` columns; lists (and anything else
    not a scalar) are kept as their JSON text in one cell."""
    if not isinstance(value, dict):
        return {prefix.rstrip(".") or "value": _cell(value)}
    row: dict = {}
    for key, item in value.items():
        if isinstance(item, dict) and item:
            row |= _flat(item, f"{prefix}{key}.")
        else:
            row[f"{prefix}{key}"] = _cell(item)
    return row


def _cell(value: object) -> object:
    """A CSV cell: scalars as they are (numpy ones and datetimes as in the JSON), None as
    empty, lists and empty objects as their JSON text."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, default=_json_default)
    return value if isinstance(value, str | int | float) else _json_default(value)


def csv_text(payload: object) -> str:
    """The JSON's rows as CSV: one header line (the JSON's keys, whose names carry the units,
    `a.b` for nested ones, in first-seen order), then one line per row."""
    import csv
    import io

    rows = json_rows(payload)
    if not rows:  # no rows, so no columns to name: nothing at all
        return ""
    header = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _numpy_scalar(value: object, kind: str = "generic") -> bool:
    """Whether `value` is a numpy scalar of `kind` (asked without loading numpy: a numpy value
    exists only where numpy was loaded)."""
    numpy = sys.modules.get("numpy") if type(value).__module__ == "numpy" else None
    return numpy is not None and isinstance(value, getattr(numpy, kind))


def _json_default(value: object) -> object:
    if _numpy_scalar(value):
        return value.item()  # type: ignore[attr-defined]
    datetime = sys.modules.get("datetime")  # a datetime exists only where it was imported
    if datetime is not None and isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Right-aligned text table; floats shown with 2 decimals."""

    def cell(v: object) -> str:
        return f"{v:,.2f}" if isinstance(v, float) or _numpy_scalar(v, "floating") else str(v)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in text)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in text]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Subcommands


def cmd_link(args: argparse.Namespace) -> None:
    """Bandwidth of a link per direction."""
    link = _link(args)
    out = {
        "gen": link.gen,
        "lanes": link.lanes,
        "flit": link.flit_mode,
        "encoding": link.generation.encoding.name,
        "raw_gbps": link.raw_gbps,
        "encoded_gbps": link.encoded_gbps,
        "tlp_gbps": link.tlp_gbps,
        "skp_fraction": link.skp_fraction,
        "dllp_fraction": link.dllp_fraction,
        "flit_tlp_fraction": link.flit_fraction,
        "ack_interval_symbols": None if link.flit_mode else link.ack_interval,
        "fc_interval_symbols": None if link.flit_mode else link.fc_interval,
    }

    def human() -> str:
        rows = [
            ("raw", link.raw_gbps),
            ("after encoding", link.encoded_gbps),
            ("usable by TLPs", link.tlp_gbps),
        ]
        table = format_table(("per direction", "Gb/s"), rows)
        return (
            f"PCIe Gen{link.gen} x{link.lanes} ({out['encoding']}"
            f"{', Flit mode' if link.flit_mode else ''})\n{table}\n"
            f"SKP {link.skp_fraction:.3%}, DLLPs {link.dllp_fraction:.3%}"
            + (f", flit TLP share {link.flit_fraction:.2%}" if link.flit_mode else "")
        )

    _emit(args, out, human)


def cmd_dma(args: argparse.Namespace) -> None:
    """Effective bandwidth and TLP cost of device DMA per transfer size."""
    link = _link(args)
    sizes = parse_int_list(args.sizes, "transfer size")
    cost = tlp.dma_rows(link, args.op, sizes, args.offset)
    rows = [
        {
            "size": s,
            "effective_gbps": float(e),
            "tlps_up": int(tu),
            "tlps_down": int(td),
            "bytes_up": int(bu),
            "bytes_down": int(bd),
        }
        for s, e, tu, td, bu, bd in zip(
            sizes,
            cost.effective_gbps,
            cost.tlps_up,
            cost.tlps_down,
            cost.bytes_up,
            cost.bytes_down,
            strict=True,
        )
    ]
    if args.tlps:
        for row in rows:
            listed = tlp.list_device_tlps(link, args.op, row["size"], args.offset)
            row["tlps"] = [
                {
                    "kind": k,
                    "direction": d,
                    "addr": int(a),
                    "data_bytes": int(n),
                    "wire_bytes": int(w),
                }
                for k, d, a, n, w in zip(
                    listed.kind,
                    listed.direction,
                    listed.addr,
                    listed.data_bytes,
                    listed.wire_bytes,
                    strict=True,
                )
            ]

    def human() -> str:
        head = (
            f"DMA {args.op} on Gen{link.gen} x{link.lanes}, MPS {link.mps}, "
            f"MRRS {link.mrrs}, offset {args.offset}; link {link.tlp_gbps:.2f} Gb/s for TLPs"
        )
        table = format_table(
            ("size", "Gb/s", "TLPs up", "TLPs down", "bytes up", "bytes down"),
            [
                (
                    r["size"],
                    r["effective_gbps"],
                    r["tlps_up"],
                    r["tlps_down"],
                    r["bytes_up"],
                    r["bytes_down"],
                )
                for r in rows
            ],
        )
        parts = [head, table]
        for row in rows if args.tlps else []:
            parts.append(f"\nTLPs of {row['size']} B:")
            parts.append(
                format_table(
                    ("kind", "dir", "addr", "data", "wire"),
                    [
                        (t["kind"], t["direction"], t["addr"], t["data_bytes"], t["wire_bytes"])
                        for t in row["tlps"]
                    ],
                )
            )
        return "\n".join(parts)

    _emit(args, rows, human)


def _mixes(args: argparse.Namespace) -> list[PacketMix]:
    mixes = (
        [ethernet.parse_mix(tok) for tok in args.sizes.split(",") if tok.strip()]
        if args.sizes
        else []
    )
    mixes += [ethernet.parse_mix(m) for m in args.mix or []]
    if not mixes:
        raise UsageError("give frame sizes with --sizes (e.g. 64,256,1518,imix) or --mix")
    return mixes


def _nic_paths(args: argparse.Namespace) -> tuple[str, ...]:
    """The --paths option, checked against the known DMA paths."""
    return nic.check_paths(tuple(p.strip() for p in args.paths.split(",")))


def _nic_result(
    args: argparse.Namespace, profile: nic.NicProfile, link: Link, paths: tuple[str, ...]
) -> nic.NicResult:
    """A NIC profile priced over the sizes and mixes asked for (the command and its sweep)."""
    eth = ethernet.Ethernet(args.eth, vlan=args.vlan)
    return nic.evaluate(profile, link, eth, _mixes(args), paths)


def cmd_nic(args: argparse.Namespace) -> None:
    """What a NIC/driver profile achieves per frame size or mix, or what a trace needs."""
    link = _link(args)
    profile = nic.load_profile(args.profile)
    paths = _nic_paths(args)  # checked before a trace is read
    if args.trace:
        captured = trace.read(args.trace, skip_bad=args.skip_bad)
        window = parse_duration_ns(args.window, "window")
        found = nic.trace_demand(profile, link, captured, window, paths)
        _emit_trace_demand(args, captured, found, {"profile": profile.name}, link)
        return
    result = _nic_result(args, profile, link, paths)
    pps = None if args.pps is None else parse_rate(args.pps)
    needed = result.needed_gbps(pps) if pps is not None else None
    if pps is not None:
        _warn_rate_over(pps, result.label, result.line_pps, "the line")
        _warn_rate_over(pps, result.label, result.pcie_max_pps, "the PCIe link")
    limits = result.limited_by
    rows = []
    for i, label in enumerate(result.label):
        row = {
            "size": int(label) if label.isdigit() else label,
            "mean_frame_bytes": result.mean_frame_bytes[i],
            "max_pps": result.max_pps[i],
            "pcie_max_pps": result.pcie_max_pps[i],
            "line_rate_pps": result.line_pps[i],
            "achievable_gbps": result.achievable_gbps[i],
            "line_rate_gbps": result.line_rate_gbps[i],
            "bottleneck": str(result.bottleneck[i]),
            "limited_by": limits[i],
            "pcie_up_gbps": result.pcie_up_gbps[i],
            "pcie_down_gbps": result.pcie_down_gbps[i],
            "up_bytes_per_pkt": result.up_bytes_per_pkt[i],
            "down_bytes_per_pkt": result.down_bytes_per_pkt[i],
            "up_tlps_per_pkt": result.up_tlps_per_pkt[i],
            "down_tlps_per_pkt": result.down_tlps_per_pkt[i],
        }
        if pps is not None:
            row |= {
                "pps": pps,
                "needed_up_gbps": needed[0][i],
                "needed_down_gbps": needed[1][i],
                "fits_pcie": bool(pps <= result.pcie_max_pps[i]),
                "fits_line": bool(pps <= result.line_pps[i]),
            }
        if args.breakdown:
            row["operations"] = [
                {
                    "path": s.path,
                    "what": s.op.what,
                    "initiator": s.op.initiator,
                    "up_bytes_per_pkt": float(result.per_packet(s.up_bytes)[i]),
                    "down_bytes_per_pkt": float(result.per_packet(s.down_bytes)[i]),
                }
                for s in result.shares
            ]
        rows.append(row)

    def human() -> str:
        device = f"\nNIC: {profile.device.name}" if profile.device else ""
        head = (
            f"{profile.name}: {profile.description}{device}\nGen{link.gen} x{link.lanes} "
            f"({link.tlp_gbps:.2f} Gb/s for TLPs per direction), {args.eth} GbE"
        )
        table = format_table(
            (
                "size",
                "Mpps",
                "Gb/s",
                "line Gb/s",
                "bottleneck",
                "limited by",
                "up Gb/s",
                "down Gb/s",
                "B up/pkt",
                "B down/pkt",
            ),
            [
                (
                    r["size"],
                    r["max_pps"] / 1e6,
                    r["achievable_gbps"],
                    r["line_rate_gbps"],
                    r["bottleneck"],
                    "+".join(r["limited_by"]),
                    r["pcie_up_gbps"],
                    r["pcie_down_gbps"],
                    r["up_bytes_per_pkt"],
                    r["down_bytes_per_pkt"],
                )
                for r in rows
            ],
        )
        parts = [head, table]
        if pps is not None:
            parts.append(f"\nat {pps / 1e6:.3f} Mpps:")
            parts.append(
                format_table(
                    ("size", "needs up Gb/s", "needs down Gb/s", "fits PCIe", "fits line"),
                    [
                        (
                            r["size"],
                            r["needed_up_gbps"],
                            r["needed_down_gbps"],
                            r["fits_pcie"],
                            r["fits_line"],
                        )
                        for r in rows
                    ],
                )
            )
        for r in rows if args.breakdown else []:
            parts.append(f"\nper packet at size {r['size']}:")
            parts.append(
                format_table(
                    ("path", "operation", "initiator", "B up", "B down"),
                    [
                        (
                            o["path"],
                            o["what"],
                            o["initiator"],
                            o["up_bytes_per_pkt"],
                            o["down_bytes_per_pkt"],
                        )
                        for o in r["operations"]
                    ],
                )
            )
        return "\n".join(parts)

    _emit(args, rows, human)


def _warn_rate_over(
    pps: float, labels: Sequence[str], capacity_pps: Sequence[float], what: str
) -> None:
    """Warn once when the rate asked for is above what `what` carries for some sizes."""
    over = [
        f"{label} (at most {cap / 1e6:.2f} Mpps)"
        for label, cap in zip(labels, capacity_pps, strict=True)
        if pps > cap
    ]
    if over:
        _warn(f"{pps / 1e6:.6g} Mpps is more than {what} carries for size {', '.join(over)}")


def _emit_trace_demand(
    args: argparse.Namespace,
    captured: trace.Trace,
    found: trace.Demand,
    extra: dict,
    link: Link,
    extra_text: str = "",
) -> None:
    """Report (and optionally plot) the PCIe bandwidth a trace needs per window."""
    out = {
        "trace": captured.path,
        "packets": captured.packets,
        "skipped": captured.skipped,
        "mean_frame_bytes": float(captured.frame_bytes().mean()),
        **extra,
        **found.summary(),
    }
    if args.plot:
        from pcieperf.report import plot_trace_demand

        out["plot"] = str(
            plot_trace_demand(found, Path(args.plot), Path(captured.path).name, force=args.force)
        )

    def human() -> str:
        s = out
        return (
            f"{Path(captured.path).name}: {s['packets']} packets, mean frame "
            f"{s['mean_frame_bytes']:.1f} B, Gen{link.gen} x{link.lanes} carries "
            f"{s['capacity_gbps']:.2f} Gb/s per direction\n"
            f"{extra_text}"
            + format_table(
                ("direction", "mean Gb/s", f"peak Gb/s per {s['window_ns'] / 1e6:g} ms"),
                [
                    ("up (device to host)", s["mean_up_gbps"], s["peak_up_gbps"]),
                    ("down (host to device)", s["mean_down_gbps"], s["peak_down_gbps"]),
                ],
            )
            + f"\n{s['windows_over_capacity']} of {s['windows']} windows exceed the link"
            + (f"; plot: {s['plot']}" if "plot" in s else "")
        )

    _emit(args, out, human)


def _add_trace_replay_options(p: argparse.ArgumentParser) -> None:
    """--trace and its companions, shared by nic and dpdk-fwd."""
    p.add_argument("--trace", default=None, help="a pcap/pcapng capture to replay instead of sizes")
    p.add_argument("--window", default="1ms", help="time window of the bandwidth series")
    p.add_argument("--skip-bad", action="store_true", help="skip damaged capture records")
    p.add_argument("--plot", default=None, help="PNG/SVG of bandwidth over time vs capacity")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")


def cmd_profiles(args: argparse.Namespace) -> None:
    """List the built-in NIC profiles, or show one."""
    if args.name:
        p = nic.load_profile(args.name)
        out: object = {
            "name": p.name,
            "description": p.description,
            "source": p.source,
            "notes": p.notes.strip(),
            "params": p.params,
            "device": asdict(p.device) if p.device else None,
            "operations": [
                {
                    "path": path,
                    "what": op.what,
                    "initiator": op.initiator,
                    "size": op.size,
                    "every": op.every,
                }
                for path, op in p.operations()
            ],
        }

        def human() -> str:
            table = format_table(
                ("path", "operation", "initiator", "size", "every"),
                [
                    (o["path"], o["what"], o["initiator"], o["size"], o["every"])
                    for o in out["operations"]
                ],
            )
            text = f"{p.name}: {p.description}\nsource: {p.source}\n{p.notes.strip()}\n\n{table}"
            return text + (_device_text(p.device) if p.device else "")
    else:
        profiles = [nic.load_profile(n) for n in nic.builtin_profiles()]
        out = [{"name": p.name, "description": p.description} for p in profiles]

        def human() -> str:
            return format_table(
                ("profile", "description"), [(p.name, p.description) for p in profiles]
            )

    _emit(args, out, human)


def _device_text(device: nic.DeviceFacts) -> str:
    """The profile's [device] facts, each assumed one with its range."""
    rows = [
        (name, getattr(device, name), "-".join(map(str, device.assumed.get(name, ()))) or "cited")
        for name in nic.DEVICE_FACTS
    ]
    table = format_table(("device fact", "value", "assumed range"), rows)
    return f"\n\ndevice: {device.name}\nsource: {device.source}\n{table}"


def cmd_dpdk_fwd(args: argparse.Namespace) -> None:
    """The VTune-recipe estimate of DPDK forwarding traffic, term by term."""
    link = _link(args)
    cfg, pps = _forwarding(args)
    mix = _forwarding_mix(args)
    if args.trace:
        _dpdk_fwd_trace(args, cfg, link)
        return
    profile = nic.load_profile(args.profile)
    est = dpdk.estimate(cfg, link, pps, profile, mix)
    rate = dpdk.forwarding_rate(cfg, link, ethernet.Ethernet(args.eth), profile, mix)
    if pps > est.max_pps:
        _warn(
            f"{pps / 1e6:.6g} Mpps needs {float(est.wire_up_gbps):.1f} Gb/s up and "
            f"{float(est.wire_down_gbps):.1f} Gb/s down, but Gen{link.gen} x{link.lanes} carries "
            f"{link.tlp_gbps:.1f} Gb/s per direction: at most {est.max_pps / 1e6:.2f} Mpps"
        )
    to_gbps = pps * 8 / 1e9
    out = {
        **({"from_run": args.from_run} if args.from_run else {}),
        "pps": pps,
        "pkt": None if mix else cfg.pkt_bytes,
        "frames": rate.label[0],
        "mean_frame_bytes": float(rate.mean_frame_bytes[0]),
        "mean_batch": cfg.batch,
        **{f"{m}_gbps": float(est.metric_gbps(m)) for m in dpdk.METRICS},
        "pcie_up_gbps": float(est.wire_up_gbps),
        "pcie_down_gbps": float(est.wire_down_gbps),
        "link_tlp_gbps": link.tlp_gbps,
        "pcie_max_pps": est.max_pps,
        "line_pps": float(rate.line_pps[0]),
        "max_pps": float(rate.max_pps[0]),
        "bottleneck": str(rate.bottleneck[0]),
        "limited_by": rate.limited_by[0],
        "profile": profile.name,
        "terms": [
            {
                "term": t.name,
                "metric": t.metric,
                "initiator": t.initiator,
                "data_bytes_per_pkt": t.data_bytes,
                "data_gbps": t.data_bytes * to_gbps,
                "wire_up_bytes_per_pkt": t.wire_up_bytes,
                "wire_down_bytes_per_pkt": t.wire_down_bytes,
                "wire_up_gbps": t.wire_up_bytes * to_gbps,
                "wire_down_gbps": t.wire_down_bytes * to_gbps,
            }
            for t in est.terms
        ],
    }

    def human() -> str:
        frames = (
            f"{mix.name} frames" if mix else f"{cfg.pkt_bytes} B packets ({out['frames']} B frames)"
        )
        head = (
            f"DPDK forwarding ({profile.name}) at {pps / 1e6:.3f} Mpps, {frames}, mean batch "
            f"{cfg.batch:.2f}, Gen{link.gen} x{link.lanes}"
        )
        metrics = format_table(
            ("metric", "Gb/s", "GB/s"),
            [(m, out[f"{m}_gbps"], out[f"{m}_gbps"] / 8) for m in dpdk.METRICS],
        )
        terms = format_table(
            ("term", "metric", "data B/pkt", "data Gb/s", "wire up Gb/s", "wire down Gb/s"),
            [
                (
                    t["term"],
                    t["metric"],
                    t["data_bytes_per_pkt"],
                    t["data_gbps"],
                    t["wire_up_gbps"],
                    t["wire_down_gbps"],
                )
                for t in out["terms"]
            ],
        )
        wire = (
            f"PCIe wire: up {out['pcie_up_gbps']:.2f} Gb/s, down {out['pcie_down_gbps']:.2f} "
            f"Gb/s of {link.tlp_gbps:.2f}; the link carries at most {est.max_pps / 1e6:.2f} Mpps"
        )
        limit = (
            f"on {args.eth:g} GbE at most {out['max_pps'] / 1e6:.2f} Mpps, limited by "
            f"{' + '.join(out['limited_by'])} (bottleneck {out['bottleneck']})"
        )
        return "\n".join([head, metrics, "", terms, wire, limit])

    _emit(args, out, human)


def _forwarding_mix(args: argparse.Namespace) -> PacketMix | None:
    """The frame-size mix of --mix (None without it); it replaces --pkt, and a stored run or a
    trace brings its own sizes."""
    if getattr(args, "mix", None) is None:
        return None
    given = [o for o, v in (("--pkt", args.pkt), ("--from-run", args.from_run)) if v is not None]
    given += ["--trace"] if getattr(args, "trace", None) else []
    if given:
        raise UsageError(f"--mix sets the frame sizes; drop {', '.join(given)}")
    return ethernet.parse_mix(args.mix)


def _forwarding(args: argparse.Namespace) -> tuple[dpdk.ForwardingConfig, float]:
    """The forwarding setup and packet rate the options describe; with --from-run RUN the
    rate, packet size and burst histogram are the run's."""
    run = _stored_run(args)
    if run is not None:
        pps, pkt, hist = run.rx_pps, run.pkt, run.batch_hist
    else:
        pps = parse_rate(DEFAULT_PPS if args.pps is None else args.pps)
        pkt = DEFAULT_PKT if args.pkt is None else args.pkt
        hist = parse_batch_histogram(args.batch_hist) if args.batch_hist else None
    cfg = dpdk.ForwardingConfig(
        pkt_bytes=pkt,
        rx_desc_bytes=args.rx_desc,
        tx_desc_bytes=args.tx_desc,
        rs_thresh=args.rs_thresh,
        rx_free_thresh=args.rx_free_thresh,
        batch=dpdk.batch_from_args(args.batch, hist),
        doorbell_bytes=args.doorbell_bytes,
        full_line_tx_writeback=args.tx_wb_full_line,
    )
    return cfg, pps


def _stored_run(args: argparse.Namespace) -> testpmd.StoredRun | None:
    """The run --from-run names (None without it); it measured what --pps, --pkt and --trace
    would set, so they may not be given as well."""
    if args.from_run is None:
        return None
    given = [o for o, v in (("--pps", args.pps), ("--pkt", args.pkt)) if v is not None]
    given += ["--trace"] if getattr(args, "trace", None) else []
    if given:
        raise UsageError(f"--from-run measures what {', '.join(given)} would set; give one")
    with _store(args) as store:
        return store.dpdk_run(args.from_run)


def _dpdk_fwd_trace(args: argparse.Namespace, cfg: dpdk.ForwardingConfig, link: Link) -> None:
    """dpdk-fwd --trace: batches from the trace's arrivals, each packet at its own size."""
    captured = trace.read(args.trace, skip_bad=args.skip_bad)
    window = parse_duration_ns(args.window, "window")
    poll = parse_duration_ns(args.poll, "poll period")
    fwd = dpdk.trace_forwarding(cfg, link, captured, window, poll, nic.load_profile(args.profile))
    extra = {
        "poll_ns": poll,
        "mean_batch": fwd.mean_batch,
        "batch_hist": {str(k): v for k, v in sorted(fwd.batch_hist.items())},
    }
    for metric, series in fwd.metric_gbps.items():
        extra[f"{metric}_gbps"] = float(series.mean())
        extra[f"peak_{metric}_gbps"] = float(series.max(initial=0))
    text = f"mean Tx batch {fwd.mean_batch:.2f} (PMD polling every {poll} ns)\n"
    _emit_trace_demand(args, captured, fwd.demand, extra, link, text)


def cmd_explain(args: argparse.Namespace) -> None:
    """Measured PCIe counters against the DPDK forwarding model: the rate hypothesis first (is
    the packet rate given the one the counters imply?), then measured, predicted and ratio per
    metric, and a diagnosis for each deviation beyond 15 %. A rate more than 10x off is flagged
    as a likely input mistake; that is still an answer (exit 0): the counters may cover other
    ports too, and only the user knows."""
    if args.fit_out:
        require_new_file(args.fit_out, args.force)
    samples = _explain_samples(args)
    result = _explanation(args, samples)
    # Fitted before any file is written: a fit that fails leaves no plot behind.
    fitted = _explain_fit(args, samples, result) if args.fit_iommu or args.fit_out else None
    if args.plot:
        from pcieperf.report import plot_explanation

        plot_explanation(result, Path(args.plot), force=args.force)
    rate = result.rate
    out = {
        "file": result.file,
        "source": result.source,
        "stack": result.stack,
        "pps": result.pps,
        "pkt": result.pkt,
        "mean_batch": result.mean_batch,
        "tolerance": explaining.TOLERANCE,
        "cause": result.cause,
        "rate_mistake": bool(rate and rate.mistake),
        "implied_pps": rate.implied_pps if rate else None,
        "agreement": result.agreement,
        "deviating": result.deviating,
        "metrics": [v.as_dict() for v in result.verdicts],
        "rate": rate.as_dict() if rate else None,
    }
    if fitted:
        out["iommu_fit"] = fitted.as_dict()
        if args.fit_out:
            Path(args.fit_out).write_text(platforms.platform_toml(fitted.profile), "utf-8")
            out["iommu_fit"]["file"] = args.fit_out

    def human() -> str:
        text = _explanation_text(out)
        return f"{text}\n{_fit_text(fitted, args.fit_out)}" if fitted else text

    _emit(args, out, human)


def _explain_fit(
    args: argparse.Namespace, samples: counters.Samples, result: explaining.Explanation
) -> iommu_fit.Fit:
    """`explain --fit-iommu`: `iommu fit` on the explained stack, setup and rate."""
    cfg, _ = _forwarding(args)
    return iommu_fit.fit_explained(
        samples,
        result,
        cfg,
        _explain_iommu_setup(args),
        platform=args.platform,
        name=args.name,
    )


def _explain_samples(args: argparse.Namespace) -> counters.Samples:
    """The counter file --counters names, parsed with the explain options."""
    return counters.parse(
        Path(args.counters),
        args.format,
        lenient=args.lenient,
        delimiter=args.delimiter,
        interval_s=args.interval,
    )


def _explain_iommu_setup(args: argparse.Namespace) -> explaining.IommuSetup:
    """Pages and rings of explain's IOTLB prediction (--page, --rxd, --txd)."""
    txd = args.rxd if args.txd is None else args.txd
    return explaining.IommuSetup(iommu.parse_page(args.page), args.rxd, txd)


def _explanation(
    args: argparse.Namespace, samples: counters.Samples | None = None
) -> explaining.Explanation:
    """Explain the counter file (parsed here unless given) with the forwarding options."""
    if args.from_run is None and (args.pps is None or args.pkt is None):
        raise UsageError(
            "explaining counters needs --pps and --pkt (the rate and packet size they were "
            "measured at), or --from-run RUN"
        )
    cfg, pps = _forwarding(args)
    return explaining.explain(
        samples or _explain_samples(args),
        cfg,
        _link(args),
        pps,
        profile=nic.load_profile(args.profile),
        stack=args.stack,
        iommu_setup=_explain_iommu_setup(args),
    )


def _explanation_text(out: dict) -> str:
    """The human rendering of `explain`: a likely input mistake first, then a table at the rate
    the diagnosis uses (the implied one when it names the rate), then the diagnoses."""
    rate = out["rate"] if out["rate"] and out["rate"]["named"] else None
    metrics = rate["metrics"] if rate else out["metrics"]
    rows = []
    for m in metrics:
        per_pkt = "B/pkt" if m["unit"] == "B/s" else "/pkt"
        ratio = "inf" if m["ratio"] is None else f"{m['ratio']:.2f}"
        rows.append(
            (
                m["metric"],
                f"{m['measured_per_pkt']:.3f} {per_pkt}",
                f"{m['predicted_per_pkt']:.3f} {per_pkt}",
                ratio,
                m["status"],
            )
        )
    at = explaining.rate_text(out["pps"])
    if rate:
        at = f"{explaining.rate_text(rate['implied_pps'])} as the counters imply ({at} given)"
    head = (
        f"{out['file']} ({out['source']}), {out['stack']}: forwarding at {at}, {out['pkt']} B "
        f"packets, mean batch {out['mean_batch']:.2f}"
    )
    table = format_table(("metric", "measured", "predicted", "ratio", "status"), rows)
    by_metric = {m["metric"]: m["diagnosis"] for m in out["metrics"]}
    if rate:
        outliers = [f"- {name}: {by_metric[name]}" for name in rate["outliers"]]
        lines = [f"cause: {rate['rule']}"]
        if outliers:
            lines.append(f"{len(outliers)} metric(s) deviate beyond 15 % at that rate:")
        return "\n".join([*filter(None, [rate["headline"], head]), table, *lines, *outliers])
    notes = [f"- {name}: {text}" for name, text in by_metric.items() if text]
    verdict = (
        "every metric agrees with the model within 15 %"
        if out["agreement"]
        else f"{len(notes)} metric(s) deviate beyond 15 %:"
    )
    return "\n".join([head, table, verdict, *notes])


def cmd_dpdk_run(args: argparse.Namespace) -> None:
    """Run dpdk-testpmd on a virtual port (net_null or a replayed pcap), store its rates and
    Rx burst histogram."""
    cfg = testpmd.RunConfig(
        mode="pcap" if args.pcap else "null",
        pcap=Path(args.pcap) if args.pcap else None,
        seconds=args.seconds,
        null_size=args.null_size,
        extra_args=tuple(args.testpmd_args),
    )
    # Full once --seconds have passed; the blocks say why a run may go on (it waits for a rate).
    shape = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s{postfix}"
    with progress.bar(cfg.seconds, "testpmd", unit="s", bar_format=shape) as bar:

        def tick(elapsed: float, blocks: int) -> None:
            bar.update(min(elapsed, cfg.seconds) - bar.n)
            bar.set_postfix_str(f"statistics blocks: {blocks}")

        result = testpmd.run(cfg, tick)
    with _store(args, write=True) as store:
        run_id = store.add_dpdk_run(result)
    out = _run_summary(run_id, result)

    def human() -> str:
        ports = format_table(
            ("port", "Rx Mpps", "Tx Mpps", "Rx packets", "Rx bursts"),
            [
                (p["port"], p["rx_pps"] / 1e6, p["tx_pps"] / 1e6, p["rx_packets"], p["rx_bursts"])
                for p in out["ports"]
            ],
        )
        return (
            f"run {run_id}: {result.version}, {cfg.mode}, {result.wall_s:.1f} s"
            f"{' (stopped early)' if result.interrupted else ''}\n{ports}\n"
            f"Rx {out['rx_pps'] / 1e6:.3f} Mpps of {out['pkt_bytes']:.1f} B packets, mean batch "
            f"{out['mean_batch']:.2f}; predict with `pcieperf dpdk-fwd --from-run {run_id}`"
        )

    _emit(args, out, human)


def _run_summary(run_id: int, result: testpmd.RunResult) -> dict:
    """The JSON of `dpdk run`."""
    hist = result.batch_hist
    return {
        "run_id": run_id,
        "version": result.version,
        "mode": result.config.mode,
        "wall_s": result.wall_s,
        "interrupted": result.interrupted,
        "rx_pps": result.rx_pps,
        "tx_pps": result.tx_pps,
        "pkt_bytes": result.pkt_bytes,
        "batch_hist": {str(k): v for k, v in hist.items()},
        "mean_batch": dpdk.mean_tx_batch(hist),
        "ports": [
            {
                "port": p.port,
                "rx_pps": p.rx_pps,
                "tx_pps": p.tx_pps,
                "rx_packets": p.rx_packets,
                "tx_packets": p.tx_packets,
                "rx_bursts": p.rx_bursts.total if p.rx_bursts else 0,
            }
            for p in result.ports
        ],
        "command": result.command,
    }


def cmd_dpdk_runs(args: argparse.Namespace) -> None:
    """List stored testpmd runs."""
    with _store(args) as store:
        rows = store.dpdk_runs()
    _emit(
        args,
        rows,
        lambda: format_table(
            ("id", "started", "mode", "source", "args", "Rx Mpps", "pkt B", "DPDK"),
            [
                (
                    r["run_id"],
                    str(r["started"])[:19],
                    r["mode"],
                    r["source"],
                    r["extra_args"],
                    r["rx_pps"] / 1e6,
                    r["pkt_bytes"],
                    r["version"],
                )
                for r in rows
            ],
        ),
    )


def cmd_trace_stats(args: argparse.Namespace) -> None:
    """Packets, bytes, peak rates per window (1 ms and 1 s unless --windows), frame sizes and
    bursts of capture files, each summarised while it is read."""
    windows = (
        [parse_duration_ns(w, "rate window") for w in args.windows.split(",")]
        if args.windows
        else trace.WINDOWS_NS
    )
    options = {
        "eth_gbps": args.eth,
        "windows_ns": windows,
        "skip_bad": args.skip_bad,
        "strict": args.strict,
    }
    if args.archive or args.scheduler:
        found = _trace_stats_on_dask(args, options)
    else:
        found = trace.stats_files(archiving.expand(args.files), **options)
    results = []
    for result in found:
        _warn_capture_quirks(_archive_label(result))
        results.append(result)

    def human() -> str:
        return "\n\n".join(_trace_stats_text(_archive_label(r)) for r in results)

    _emit(args, results, human)


def _trace_stats_on_dask(args: argparse.Namespace, options: dict) -> list[dict]:
    """`trace stats` through the engine: per file, or per port with --archive."""
    scheduler = engine.parse_scheduler(args.scheduler)
    files = archiving.expand(args.files)
    trace.stats_config(options["eth_gbps"], options["windows_ns"])  # checked before a cluster
    run = archiving.archive_stats if args.archive else archiving.file_stats
    with engine.connect(scheduler, quiet_logs=not args.debug) as client:
        return run(client, files, **options)


def _archive_label(result: dict) -> dict:
    """An archive port's result with a `file` line for the text output."""
    if "port" not in result:
        return result
    files = f"{result['files']} files, {result['first_file']} .. {result['last_file']}"
    return result | {"file": f"port {result['port']} ({files})"}


def _warn_capture_quirks(result: dict) -> None:
    """One warning per file for what libpcap and Wireshark read but the user should know."""
    if result["snaplen_exceeded"]:
        _warn(
            f"{result['file']}: {result['snaplen_exceeded']} records are longer than their "
            "snaplen; read in full, as Wireshark does"
        )
    if result["cut_short"]:
        _warn(
            f"{result['cut_short']}: the capture was cut short; the {result['packets']} packets "
            "before it are reported (--strict makes this an error)"
        )


_STRICT_ORDER = {True: "yes", False: "no", None: "unknown (packets without timestamps)"}


def _trace_stats_text(r: dict) -> str:
    """One file's statistics as a short text block."""
    rates = ", ".join(
        f"peak {x['peak_pps'] / 1e6:.3f} Mpps / {x['peak_gbps']:.3f} Gb/s per "
        f"{x['window_ns'] / 1e6:g} ms"
        for x in r["rates"]
        if x["peak_pps"] is not None
    )
    mean = (
        f"mean {r['mean_pps'] / 1e6:.3f} Mpps, {r['mean_gbps']:.3f} Gb/s; {rates}"
        if r["mean_pps"]
        else "no duration"
    )
    b = r["bursts"]
    stored = "" if r["compression"] == "none" else f", {r['compression']}"
    lines = [
        f"{r['file']} ({r['format']}{stored}): {r['packets']} packets, {r['bytes_wire']} wire "
        f"bytes ({r['bytes_captured']} captured), {r['duration_s']:.6f} s",
        f"  {mean}",
        f"  strict time order: {_STRICT_ORDER[r['strict_time_order']]} "
        f"({r['out_of_order']} packets earlier than the one before)",
        f"  bursts at {b['eth_gbps']} GbE: {b['bursts']} ({b['packets_in_bursts']} packets, "
        f"longest {b['max_burst']})",
        "  frame sizes: " + ", ".join(f"{k}: {v}" for k, v in r["size_histogram"].items() if v),
    ]
    lines += [
        f"  interface {i['id']} ({i['name'] or 'unnamed'}, {i['linktype_name']}): "
        f"{i['packets']} packets"
        for i in r["interfaces"]
    ]
    notes = {
        "skipped": "damaged records skipped",
        "snaplen_exceeded": "records longer than their snaplen",
        "wirelen_below_caplen": "records with a wire length below their caplen",
    }
    lines += [f"  {r[key]} {text}" for key, text in notes.items() if r[key]]
    if r["truncated"]:
        lines.append(f"  cut short: {r['cut_short']}")
    return "\n".join(lines)


def _add_capture_read_options(p: argparse.ArgumentParser) -> None:
    """--skip-bad and --strict, shared by the trace commands that read captures."""
    p.add_argument("--skip-bad", action="store_true", help="skip damaged records, count them")
    p.add_argument(
        "--strict", action="store_true", help="a capture cut short is an error, not a warning"
    )


def cmd_trace_demand(args: argparse.Namespace) -> None:
    """The PCIe bandwidth captures need per window from a NIC profile, per file or per port of
    an archive, on Dask."""
    window = parse_duration_ns(args.window, "window")
    link = _link(args)
    profile = nic.load_profile(args.profile)
    dma_paths = _nic_paths(args)
    scheduler = engine.parse_scheduler(args.scheduler)
    files = archiving.expand(args.files)
    with engine.connect(scheduler, quiet_logs=not args.debug) as client:
        results = archiving.demand(
            client,
            files,
            profile=profile,
            link=link,
            window_ns=window,
            dma_paths=dma_paths,
            per_file=not args.archive,
            skip_bad=args.skip_bad,
            strict=args.strict,
        )

    def line(r: dict) -> str:
        mean = (
            f"mean {r['mean_up_gbps']:.3f} up / {r['mean_down_gbps']:.3f} down Gb/s, "
            if r["mean_up_gbps"] is not None
            else ""
        )
        return (
            f"{_archive_label(r)['file']}: {r['packets']} packets; {mean}peak "
            f"{r['peak_up_gbps']:.3f} up / {r['peak_down_gbps']:.3f} down Gb/s per "
            f"{r['window_ns'] / 1e6:g} ms; {r['windows_over_capacity']} of {r['windows']} "
            f"windows exceed the link's {r['capacity_gbps']:.2f} Gb/s"
        )

    _emit(args, results, lambda: "\n".join(line(r) for r in results))


def cmd_trace_merge(args: argparse.Namespace) -> None:
    """Merge captures into one file in time order (pcapng keeps every interface)."""
    files = archiving.expand(args.files)
    options = {"force": args.force, "skip_bad": args.skip_bad, "strict": args.strict}
    if args.scheduler:
        scheduler = engine.parse_scheduler(args.scheduler)
        with engine.connect(scheduler, quiet_logs=not args.debug) as client:
            result = archiving.merge(client, files, args.output, **options)
    else:
        result = trace.merge(files, args.output, **options)
    if result["truncated"]:
        _warn(
            f"{result['truncated']} inputs were cut short inside a record; what came before "
            "is merged (--strict makes this an error)"
        )
    out = {"output": args.output, "inputs": files, **result}
    _emit(
        args,
        out,
        lambda: (
            f"{out['packets']} packets from {len(files)} files, "
            f"{out['interfaces']} interfaces -> {args.output} ({out['writes']} writes"
            + (f", {out['skipped']} damaged records skipped" if out["skipped"] else "")
            + (
                f", {out['out_of_order']} out of order in their input"
                if out["out_of_order"]
                else ""
            )
            + ")"
        ),
    )


def cmd_trace_synth(args: argparse.Namespace) -> None:
    """Write a synthetic capture: a size mix arriving constant, Poisson or in on/off bursts."""
    out = trace.synth(
        args.output,
        eth=ethernet.Ethernet(args.eth),
        mix=ethernet.parse_mix(args.sizes),
        pps=parse_rate(args.pps),
        duration_s=parse_duration_ns(args.duration) / trace.NS_PER_S,
        arrival=args.arrival,
        burst=args.burst,
        flows=args.flows,
        seed=args.seed,
        force=args.force,
    )
    _emit(args, out, lambda: f"{out['packets']} packets ({out['arrival']}) -> {out['file']}")


def cmd_trace_convert(args: argparse.Namespace) -> None:
    """Rewrite a capture as ns-resolution pcap or pcapng, packet for packet."""
    out = {
        "input": args.file,
        "output": args.output,
        **trace.convert(
            args.file, args.output, force=args.force, skip_bad=args.skip_bad, strict=args.strict
        ),
    }
    if out["truncated"]:
        _warn(f"{args.file} was cut short inside a record; what came before is converted")
    _emit(args, out, lambda: f"{out['packets']} packets -> {args.output}")


def cmd_counters_import(args: argparse.Namespace) -> None:
    """Import a pcm-iio, perf iostat, perf stat or VTune file into the store (all or nothing)."""
    samples = counters.parse(
        Path(args.file),
        args.format,
        lenient=args.lenient,
        delimiter=args.delimiter,
        interval_s=args.interval,
    )
    with _store(args, write=True) as store:
        import_id = store.import_counters(samples, force=args.force)
    out = {
        "import_id": import_id,
        "file": args.file,
        "source": samples.source,
        "samples": len(samples),
        "metrics": sorted(set(samples.metric)),
        "skipped_columns": samples.skipped_columns,
    }
    _emit(
        args,
        out,
        lambda: (
            f"import {import_id}: {len(samples)} samples of {', '.join(out['metrics'])} "
            f"from {args.file}"
            + (
                f" (skipped columns: {', '.join(samples.skipped_columns)})"
                if samples.skipped_columns
                else ""
            )
        ),
    )


def cmd_counters_ls(args: argparse.Namespace) -> None:
    """List imported counter files."""
    with _store(args) as store:
        rows = store.counter_imports()
    _emit(
        args,
        rows,
        lambda: format_table(
            ("id", "source", "samples", "file", "metrics"),
            [(r["import_id"], r["source"], r["samples"], r["file"], r["metrics"]) for r in rows],
        ),
    )


def cmd_report(args: argparse.Namespace) -> None:
    """Write the default report (plots, CSV, index.html)."""
    out_dir = Path(args.output)
    require_new_folder(out_dir, args.force)
    explain_options = (args.pps, args.pkt, args.from_run, args.stack)
    if not args.counters and any(o is not None for o in explain_options):
        raise UsageError("--pps, --pkt, --from-run and --stack explain a --counters FILE; give one")
    explanation = _explanation(args) if args.counters else None
    from pcieperf.report import ReportConfig, write_report  # matplotlib: after the checks

    cfg = ReportConfig(link=_link(args), eth_gbps=args.eth, explanation=explanation)
    index = write_report(cfg, out_dir)
    _emit(
        args,
        {"index": str(index), "files": sorted(p.name for p in out_dir.iterdir())},
        lambda: f"report written to {index}",
    )


def cmd_latency(args: argparse.Namespace) -> None:
    """Where one packet's loopback latency goes (PCIe, device, wire, host), and the DMAs in
    flight that its rate needs against the device's tags, per frame size (the paper's Figure
    2; docs/latency.md)."""
    sizes = parse_int_list(args.sizes, "frame size")
    result = latency.loopback(
        args.profile,
        sizes,
        _latency_host(args),
        _link(args),
        ethernet.Ethernet(args.eth),
        parse_rate(args.pps) if args.pps else None,
        _latency_params(args.set or []),
        tags=args.tags,
    )
    for note in result.host.notes:
        _warn(note)
    rows = latency.rows(result)

    def human() -> str:
        head = f"{result.profile}, {args.eth} GbE; host: {result.host.source}"
        table = format_table(
            ("size", "total ns", "PCIe ns", "PCIe %", "p99.9 ns", "in flight", "tags needed"),
            [
                (
                    r["size"],
                    r["total_ns"],
                    r["pcie_ns"],
                    100 * r["pcie_share"],
                    r["total_by_stat_ns"]["p99.9"],
                    r["inflight_needed"]["up"],
                    f"{r['tags_needed']:.1f} of {r['tags_available'] or 'unknown'}",
                )
                for r in rows
            ],
        )
        parts = [head, table]
        for r in rows if args.breakdown else []:
            parts.append(f"\nsize {r['size']}:")
            parts.append(
                format_table(
                    ("path", "term", "kind", "ns"),
                    [(t["path"], t["what"], t["kind"], t["ns"]) for t in r["terms"]],
                )
            )
        return "\n".join(parts)

    _emit(args, rows, human)


def _latency_host(args: argparse.Namespace) -> latency.HostLatency | None:
    """The host latency the options name: a pcie-bench directory, a calibration, given
    values, or None (the shipped calibration)."""
    if args.write_ns is not None and args.read_ns is None:
        raise UsageError("--write-ns goes with --read-ns; give both or neither")
    if args.cache != "HWarm" and not args.host:
        raise UsageError("--cache chooses a state of --host DIR's latency files; give --host")
    if args.host:
        return latency.host_from_dir(Path(args.host), args.cache)
    if args.calibration:
        return latency.host_from_calibration(Path(args.calibration))
    if args.read_ns is not None:
        return latency.host_from_values(args.read_ns, args.write_ns)
    return None


def _latency_params(items: list[str]) -> dict[str, float]:
    """--set NAME=NS items as a dict (names and values are checked by the model)."""
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: write NAME=NS, e.g. poll_ns=100")
        try:
            params[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--set {item!r}: {value!r} is not a number of ns") from None
    return params


def _iommu_inputs(args: argparse.Namespace) -> tuple[iommu.Platform, iommu.PortSetup]:
    """The platform (calibration, link, IOMMU overrides) and port setup the options describe."""
    platform = iommu.load_platform(
        Path(args.calibration),
        gen=args.gen,
        lanes=args.lanes,
        platform=args.platform,
        iotlb_entries=args.iotlb,
        iotlb_ways=args.iotlb_ways,
        replacement=args.replacement,
        pwc_entries=args.pwc,
        profile=args.profile,
    )
    setup = iommu.PortSetup(
        page=iommu.parse_page(args.page),
        rxd=args.rxd,
        txd=args.txd if args.txd is not None else args.rxd,
        pool=args.pool,
        cache=args.cache,
        queues=args.queues,
        ports=args.ports,
        cross_port=args.cross_port,
        rx_desc_bytes=args.rx_desc,
        tx_desc_bytes=args.tx_desc,
        rx_free_thresh=args.rx_free_thresh,
        tx_free_thresh=args.tx_free_thresh,
        rs_thresh=args.rs_thresh,
        burst=args.burst,
        layout=args.layout,
        iova=args.iova,
        poll_delay_us=args.poll_delay,
    )
    return platform, setup


def _iommu_text(r: dict) -> str:
    bounds = ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(r["bounds_mpps"].items(), key=lambda kv: kv[1])
    )
    return "\n".join(
        [
            f"{r['mix']} B packets, {r['page']} pages, rxd/txd {r['rxd']}/{r['txd']}, pool "
            f"{r['pool']}, IOVA as {r['iova'].upper()}: {r['working_set_pages']} pages touched, "
            f"{r['iotlb_entries']}-entry IOTLB ({r['platform']})",
            f"  NIC                      {r['device']} ({r['profile']}, "
            f"{r['read_requests']} read requests)",
            f"  rings                    {_STATE_WORDS[r['state']]}",
            f"  IOTLB misses per packet  {r['iotlb_misses_per_pkt']:.3f} received, "
            f"{r['iotlb_misses_per_fwd_pkt']:.3f} forwarded",
            f"  line rate                {r['line_mpps']:.2f} Mpps",
            f"  nic model                {r['nic_mpps']:.2f} Mpps (`nic --profile {r['profile']}`: "
            "line and PCIe only)",
            f"  without IOMMU            {r['mpps_no_iommu']:.2f} Mpps, limited by "
            f"{' + '.join(r['limited_by_no_iommu']) or 'nothing reached'}",
            f"  with IOMMU               {r['mpps_iommu']:.2f} Mpps "
            f"(x{r['throughput_ratio']:.2f}, +{r['added_latency_ns']:.0f} ns per DMA, walkers "
            f"{100 * r['walker_utilization']:.0f} % busy)",
            f"  bottleneck               {r['bottleneck']}",
            f"  limited by               {' + '.join(r['limited_by']) or 'nothing reached'}",
            f"  bounds (Mpps)            {bounds}",
        ]
    )


_STATE_WORDS = {
    "light": "near empty",
    "rx-full": "Rx ring full: the lcores poll slower than the NIC receives",
    "tx-full": "Tx ring full: page walks hold the NIC's Tx DMA back; the lcores drop "
    "what tx_burst refuses",
    "both-full": "Rx and Tx rings full: the lcores poll slower than the NIC receives and "
    "still faster than it transmits",
}


def _iommu_sim_result(args: argparse.Namespace) -> iommu.IommuResult:
    """One setup of `iommu sim` evaluated (the command and its sweep)."""
    platform, setup = _iommu_inputs(args)
    traffic = iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth), args.pace)
    return iommu.Model(platform, traffic, args.packets).evaluate(setup)


def cmd_iommu_sim(args: argparse.Namespace) -> None:
    """IOTLB misses per packet and packet rate with and without the IOMMU for one setup."""
    result = _iommu_sim_result(args).as_dict()
    _emit(args, result, lambda: _iommu_text(result))


def cmd_iommu_gain(args: argparse.Namespace) -> None:
    """Packet-rate gain from shrinking rxd/txd, per packet size, with the IOMMU on."""
    platform, setup = _iommu_inputs(args)
    setup = replace(setup, rxd=args.from_rxd, txd=args.from_txd or args.from_rxd)
    mixes = [ethernet.parse_mix(token) for token in args.sizes.split(",")]
    rows = iommu.gain(
        platform,
        ethernet.Ethernet(args.eth),
        setup,
        args.to_rxd,
        args.to_txd or args.to_rxd,
        mixes,
        args.packets,
    )
    keys = (
        "size",
        "mpps_from",
        "mpps_to",
        "gain_pct",
        "misses_per_pkt_from",
        "misses_per_pkt_to",
        "state_from",
        "state_to",
    )
    _emit(args, rows, lambda: format_table(keys, [[r[k] for k in keys] for r in rows]))


def cmd_iommu_advise(args: argparse.Namespace) -> None:
    """Recommend the smallest change (rings, pool, pages, Rx pacing) that restores line rate."""
    from pcieperf.report import plot_advice

    platform, setup = _iommu_inputs(args)
    traffic = iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth), args.pace)
    advice = iommu.advise(
        platform,
        traffic,
        setup,
        args.packets,
        progress=lambda items: progress.wrap(items, "sweeping", "change"),
    )
    payload = advice.as_dict()
    if args.plot:
        payload["plot"] = str(plot_advice(advice, Path(args.plot), force=args.force))

    def human() -> str:
        rows = [
            [o["change"], o["mpps_iommu"], o["iotlb_misses_per_pkt"]] for o in payload["options"]
        ]
        return "\n".join(
            [
                f"recommendation: {payload['recommendation']}",
                payload["reason"],
                format_table(("change", "Mpps", "misses/pkt"), rows),
            ]
        )

    _emit(args, payload, human)


def cmd_platforms(args: argparse.Namespace) -> None:
    """List the platform IOMMU profiles with their sources, or show one parameter by parameter
    (value, the range the evidence leaves open, kind of evidence, source)."""
    if args.name:
        profile = platforms.load_platform_profile(args.name, Path(args.calibration))
        out: object = profile.as_dict()

        def human() -> str:
            rows = [
                (k, f"{p.value:g}", f"{p.low:g}-{p.high:g}", p.kind, p.source)
                for k, p in profile.params.items()
            ]
            table = format_table(("parameter", "value", "range", "kind", "source"), rows)
            return f"{profile.name}: {profile.title}\n\n{table}"
    else:
        profiles = [
            platforms.load_platform_profile(n, Path(args.calibration))
            for n in platforms.builtin_platforms()
        ]
        out = [p.as_dict() for p in profiles]

        def human() -> str:
            rows = [
                (
                    p.name,
                    p.title,
                    f"{p.value('iommu.iotlb_entries')}",
                    f"{p.value('iommu.walkers')}",
                    ", ".join(sorted({q.kind for q in p.params.values()})),
                )
                for p in profiles
            ]
            return format_table(("platform", "title", "IOTLB", "walkers", "evidence"), rows)

    _emit(args, out, human)


def cmd_iommu_fit(args: argparse.Namespace) -> None:
    """Fit the host's IOTLB reach and walk throughput from its measured IOTLB counters
    (pcm-iio), the forwarding rate and the port setup, and write a platform profile of the
    host for --platform FILE."""
    if args.out:
        require_new_file(args.out, args.force)
    pps = parse_rate(args.pps)
    platform, setup = _iommu_inputs(args)
    samples = counters.parse(Path(args.counters), args.format)
    base = platforms.load_platform_profile(args.platform, Path(args.calibration))
    result = iommu_fit.fit(
        samples,
        stack=args.stack,
        pps=pps,
        setup=setup,
        traffic=iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth)),
        platform=platform,
        base=base,
        name=args.name,
        packets=args.packets,
    )
    payload = result.as_dict()
    if args.out:
        Path(args.out).write_text(platforms.platform_toml(result.profile), encoding="utf-8")
        payload["file"] = args.out

    _emit(args, payload, lambda: _fit_text(result, args.out))


def _fit_text(result: iommu_fit.Fit, out: str | None) -> str:
    """The human rendering of an IOMMU fit (`iommu fit`, `explain --fit-iommu`)."""
    e, w = result.entries, result.walkers
    lines = [
        f"{result.measured.stack}: {result.measured.misses_per_s:,.0f} IOTLB misses/s at "
        f"{result.pps:,.0f} packets/s = {result.misses_per_pkt:.3f} per forwarded packet",
        f"  IOTLB reach   {e.value:g} entries (consistent: {e.low:g}-{e.high:g})",
        f"  walkers       {w.value:g} ({w.low:g}-{w.high:g}; "
        + ("the walks bound the rate)" if result.walk_bound else "a lower bound)"),
    ]
    if out:
        lines.append(f"profile written to {out}; use it with --platform {out}")
    return "\n".join(lines)


def _add_iommu_options(p: argparse.ArgumentParser) -> None:
    """The port, traffic, link and IOMMU options every `iommu` subcommand takes."""
    d = iommu.PortSetup()
    p.add_argument("--page", default="4k", help="page size of mbufs and rings: 4k, 2m or 1g")
    p.add_argument("--rxd", type=_whole(), default=d.rxd, help="Rx descriptors per queue")
    p.add_argument(
        "--txd", type=_whole(), default=None, help="Tx descriptors per queue (default rxd)"
    )
    p.add_argument("--pool", type=_whole(), default=d.pool, help="mbufs in the pool")
    p.add_argument("--cache", type=_whole(), default=d.cache, help="per-lcore mempool cache")
    p.add_argument("--queues", type=_whole(), default=d.queues, help="queues per port")
    p.add_argument("--ports", type=_whole(), default=d.ports, help="ports")
    p.add_argument("--cross-port", action="store_true", help="forward to the next port")
    p.add_argument("--rx-desc", type=_whole(), default=d.rx_desc_bytes, help="Rx descriptor bytes")
    p.add_argument("--tx-desc", type=_whole(), default=d.tx_desc_bytes, help="Tx descriptor bytes")
    p.add_argument("--rx-free-thresh", type=_whole(), default=d.rx_free_thresh)
    p.add_argument("--tx-free-thresh", type=_whole(), default=d.tx_free_thresh)
    p.add_argument("--rs-thresh", type=_whole(), default=d.rs_thresh, help="Tx RS-bit threshold")
    p.add_argument("--burst", type=_whole(), default=d.burst, help="packets per rx/tx burst")
    p.add_argument(
        "--layout",
        choices=iommu.LAYOUTS,
        default=d.layout,
        help="dpdk: no mbuf crosses a page (DPDK's populate rule); packed: back to back",
    )
    p.add_argument(
        "--iova", choices=iommu.IOVA_MODES, default=d.iova, help="EAL IOVA mode (VA or PA)"
    )
    p.add_argument(
        "--poll-delay",
        type=_real(iommu.POLL_DELAY_MAX_US),
        default=d.poll_delay_us,
        help="us the lcore waits after each poll (Rx pacing)",
    )
    p.add_argument(
        "--platform",
        default=platforms.DEFAULT_PLATFORM,
        help=f"IOMMU/LLC profile: {', '.join(platforms.builtin_platforms())}, or a .toml file",
    )
    p.add_argument("--pkt", default="64", help="frame size incl. FCS, imix, or size:count,...")
    p.add_argument(
        "--eth", type=_whole(), default=40, help=f"Ethernet Gb/s per port {wire.RATES_GBPS}"
    )
    p.add_argument("--pace", type=_real(), default=None, help="Rx pacing: cap the Rx rate (Mpps)")
    p.add_argument("--gen", type=_whole(), default=3, help="PCIe generation")
    p.add_argument("--lanes", type=_whole(), default=8, help="PCIe lanes")
    p.add_argument(
        "--iotlb", type=_whole(), default=None, help="IOTLB entries (default: calibrated)"
    )
    p.add_argument("--iotlb-ways", type=_whole(), default=None, help="ways (default: fully assoc.)")
    p.add_argument("--replacement", choices=iommu.REPLACEMENTS, default=None, help="IOTLB policy")
    p.add_argument(
        "--pwc", type=_whole(), default=None, help="page-walk cache entries (default off)"
    )
    p.add_argument(
        "--profile",
        default=iommu.DEFAULT_PROFILE,
        help="forwarding NIC profile: the NIC's operations and [device] facts",
    )
    p.add_argument(
        "--calibration", default=str(calibrate.DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )
    p.add_argument(
        "--packets", type=_whole(1, 10**9), default=iommu.PACKETS, help="simulated per run"
    )


def _add_forwarding_options(p: argparse.ArgumentParser) -> None:
    """The forwarding setup of dpdk-fwd and explain: rate, packet, descriptors, thresholds,
    batches (fixed, a histogram, or a stored `dpdk run`)."""
    p.add_argument("--pps", default=None, help="packet rate: 10e6, 10M, 14.88Mpps (default 10M)")
    p.add_argument(
        "--pkt", type=_whole(), default=None, help="packet bytes DMA'd, no FCS (default 64)"
    )
    p.add_argument("--rx-desc", type=_whole(), default=32, help="Rx descriptor bytes (16 or 32)")
    p.add_argument("--tx-desc", type=_whole(), default=16, help="Tx descriptor bytes (16 or 32)")
    p.add_argument("--rs-thresh", type=_whole(), default=32, help="Tx RS-bit threshold")
    p.add_argument("--rx-free-thresh", type=_whole(), default=32, help="Rx free threshold")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--batch", type=_real(), default=None, help="mean burst size (default 32)")
    group.add_argument(
        "--batch-hist",
        default=None,
        metavar="BATCH:CALLS,...",
        help="Rx batch histogram, e.g. 0:1000,4:5000,8:200",
    )
    group.add_argument(
        "--from-run",
        type=_whole(),
        default=None,
        metavar="RUN",
        help="rate, packet size and batch histogram of a stored `dpdk run`",
    )
    p.add_argument("--db", default=None, help="store file for --from-run (default: user data dir)")
    p.add_argument("--doorbell-bytes", type=_whole(), default=4, help="bytes per tail write")
    p.add_argument(
        "--tx-wb-full-line",
        action="store_true",
        help="count each Tx write-back as a full 64 B line (partial-line write)",
    )
    p.add_argument(
        "--profile",
        default=dpdk.FORWARDING_PROFILE,
        help="forwarding NIC profile whose parameters these options set",
    )


def _add_explain_options(p: argparse.ArgumentParser, required: bool) -> None:
    """A counter file and the forwarding it is explained against (explain, report)."""
    p.add_argument("--counters", required=required, help="a pcm-iio, perf or VTune counter file")
    p.add_argument(
        "--counters-format",
        dest="format",
        default=None,
        choices=counters.SOURCES,
        help="its tool (default: detected)",
    )
    p.add_argument("--stack", default=None, help="IIO stack / root port (part of its name)")
    p.add_argument("--delimiter", default=None, help="field separator (default: detected)")
    p.add_argument("--interval", type=_real(), default=None, help="perf without -I: run seconds")
    p.add_argument("--lenient", action="store_true", help="skip unknown columns instead of failing")
    _add_forwarding_options(p)
    p.add_argument("--page", default="2m", help="IOTLB prediction: page size (DPDK: hugepages)")
    p.add_argument("--rxd", type=_whole(), default=1024, help="IOTLB prediction: Rx ring size")
    p.add_argument(
        "--txd", type=_whole(), default=None, help="IOTLB prediction: Tx ring (default rxd)"
    )


def _store(args: argparse.Namespace, *, write: bool = False) -> Store:
    """The store --db names (default: the user's); only commands that `write` create it."""
    from pcieperf.store import Store  # duckdb: only for the commands that use the store

    return Store(Path(args.db) if args.db else None, create=write)


def cmd_data_import(args: argparse.Namespace) -> None:
    """Import pcie-bench result directories into the store (all or nothing)."""
    # Parsed before the store is opened: a bad folder must not leave a new store file behind.
    from pcieperf.store import parse_result_dir

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
        {k: _json_default(rows[k][i]) if _numpy_scalar(rows[k][i]) else rows[k][i] for k in keys}
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
    from pcieperf.report import plot_measured

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
    from pcieperf import sim

    if name == BENCH_DEVICE:
        return calibrate.load_calibration(calibrate.DEFAULT_CALIBRATION).device
    return sim.load_device(Path(name))


def cmd_bench_sim(args: argparse.Namespace) -> None:
    """Simulate pcie-bench points with a host and a device profile."""
    from pcieperf import sim

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
    from pcieperf import calibrate

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


def cmd_bench_predict(args: argparse.Namespace) -> None:
    """Predict a host's bandwidth results from its latency files and host facts."""
    from pcieperf import calibrate, predict

    run = calibrate.load_run(Path(args.calibrate))
    calibration = calibrate.load_calibration(Path(args.profile))
    steadiness = calibrate.steadiness(run)
    host = calibrate.host_profile(run, calibration)
    provenance = calibrate.provenance(run, calibration, host)
    files = predict.predict_files(
        host,
        calibration.device,
        Path(args.out),
        clock_ghz=predict.card_clock_ghz(run.info.card),
        force=args.force,
        transactions=args.transactions,
        progress=lambda rows: progress.wrap(rows, "simulating", "row"),
        alternatives=calibrate.interval_hosts(run, calibration, host),
        band=calibrate.interval_band(run, calibration, host),
        provenance=provenance,
    )
    payload = {
        "system": run.name,
        "files": [str(f) for f in files],
        "bounds": str(Path(args.out) / predict.BOUNDS_FILE),
        "provenance": provenance,
        "iommu_conflicts": list(run.iommu.conflicts),
        "host": asdict(host),
        "steadiness": steadiness,
        "steady": steadiness <= calibrate.UNSTEADY_RATIO,
    }

    def human() -> str:
        text = f"wrote {len(files)} files, {predict.BOUNDS_FILE} and provenance to {args.out}"
        text += "\n" + format_table(
            ("parameter", "value", "source", "why"),
            [[r["parameter"], r["value"], r["source"], r["why"]] for r in provenance[:7]],
        )
        if run.iommu.conflicts:
            text += "\nnote: the latency sweep overrules " + "; ".join(run.iommu.conflicts)
        if not payload["steady"]:
            text += (
                f"\nwarning: latency p99.9 is {steadiness:.0f}x the median on this host "
                "(millisecond stalls); its measured bandwidth will scatter far around any "
                "prediction"
            )
        return text

    _emit(args, payload, human)


def cmd_validate(args: argparse.Namespace) -> None:
    """Compare predicted with measured pcie-bench bandwidth results (MAPE, worst points)."""
    from pcieperf import validate

    matched = validate.match(Path(args.measured), Path(args.predicted))
    result = validate.summary(matched, worst=args.worst)
    if args.plot:
        from pcieperf.report import plot_validation

        result["plot"] = str(plot_validation(matched, Path(args.plot), force=args.force))

    def human() -> str:
        per_file = [[f, v] for f, v in result["per_file"].items()]
        worst = [
            [
                w["file"],
                w["test"],
                w["cache"],
                w["window_bytes"],
                w["size_bytes"],
                w["measured_gbps"],
                w["predicted_gbps"],
                w["error_pct"],
            ]
            for w in result["worst"]
        ]
        intervals = [
            [name, v["points"], v["coverage_pct"], v["median_relative_width_pct"]]
            for name, v in result["intervals"].items()
            if v is not None
        ]
        return "\n".join(
            [
                f"{result['points']} points, MAPE {result['mape_pct']} % "
                f"({result['mape_without_offset_pct']} % without the offset sweeps); "
                f"acceptance set (size sweep >= 64 B + window sweeps) "
                f"{result['acceptance_points']} points, MAPE {result['acceptance_mape_pct']} %",
                format_table(("points", "n", "coverage %", "median width %"), intervals)
                if intervals
                else "no bounds.csv: no intervals to score",
                format_table(("file", "MAPE %"), per_file),
                "worst points:",
                format_table(
                    ("file", "test", "cache", "window", "size", "measured", "predicted", "err %"),
                    worst,
                ),
            ]
        )

    _emit(args, result, human)


def _add_scheduler_option(p: argparse.ArgumentParser) -> None:
    """--scheduler: where Dask runs the work (shared by the commands that run on Dask)."""
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="local[:N]|tcp://HOST:PORT",
        help="run on Dask: N local worker processes (default one per CPU) or an existing "
        f"scheduler; default: in this process. Needs {engine.INSTALL}",
    )


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
    """One `dma` evaluation as columns, through the calls cmd_dma makes."""
    link = _link(args)
    sizes = parse_int_list(args.sizes, "transfer size")
    return {"size": sizes, **vars(tlp.dma_rows(link, args.op, sizes, args.offset))}


def _sweep_iommu_sim(args: argparse.Namespace) -> dict[str, object]:
    """One `iommu sim` evaluation as a one-row table, through the calls cmd_iommu_sim makes."""
    return sweep.columns_from_rows([_iommu_sim_result(args).as_dict()])


def _sweep_bench_sim(args: argparse.Namespace) -> dict[str, object]:
    """One `bench sim` evaluation (sizes x windows) as columns, through the calls
    cmd_bench_sim makes; latency columns are null for bandwidth tests."""
    from pcieperf import sim

    host, device = sim.load_host(Path(args.host)), _bench_device(args.device)
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


# ---------------------------------------------------------------------------------------------
# Parser and entry point


EXAMPLES = {
    "link": "pcieperf link --gen 4 --lanes 16",
    "dma": "pcieperf dma --op read --sizes 64,256,1500 --mrrs 512",
    "nic": "pcieperf nic --profile dpdk --eth 100 --sizes 64,256,1518,imix",
    "profiles": "pcieperf profiles mlx5-dpdk",
    "latency": "pcieperf latency --profile bypass --sizes 64,128,512,1500 --host HOSTDIR",
    "dpdk-fwd": "pcieperf dpdk-fwd --pps 14.2M --pkt 60 --batch-hist 0:1000,4:5000,32:200",
    "explain": "pcieperf explain --counters pcm.csv --pps 10M --pkt 64",
    "dpdk": "pcieperf dpdk run --pcap imix.pcap --seconds 3 -- --burst=16",
    "dpdk run": "pcieperf dpdk run --pcap imix.pcap --seconds 3 -- --burst=16",
    "dpdk runs": "pcieperf dpdk runs --json",
    "data": "pcieperf data import ../shared/data/pcie-bench/*/",
    "data import": "pcieperf data import ../shared/data/pcie-bench/*/",
    "data ls": "pcieperf data ls",
    "data show": "pcieperf data show nfp6000-bdw --test BW_RD",
    "data plot": "pcieperf data plot --view window --size 64 -o window.png",
    "bench": "pcieperf bench tests",
    "bench tests": "pcieperf bench tests",
    "bench sim": "pcieperf bench sim --host host.toml --device device.toml --test BW_DMA_RD",
    "bench calibrate": "pcieperf bench calibrate ../shared/data/pcie-bench/*/ -o cal.toml",
    "bench predict": "pcieperf bench predict --calibrate HOSTDIR --out predicted/",
    "validate": "pcieperf validate --measured HOSTDIR --predicted predicted/ --plot v.png",
    "iommu": "pcieperf iommu sim --page 4k --rxd 1024 --pkt 64",
    "iommu sim": "pcieperf iommu sim --page 4k --rxd 1024 --pkt 64",
    "iommu gain": "pcieperf iommu gain --from-rxd 1024 --to-rxd 128 --sizes 64,imix",
    "iommu advise": "pcieperf iommu advise --page 4k --pkt 64 --plot advice.png",
    "iommu fit": "pcieperf iommu fit --counters pcm.csv --pps 7M --rxd 1024 --pkt 64 -o my.toml",
    "platforms": "pcieperf platforms skylake-sp",
    "trace": "pcieperf trace stats capture.pcapng",
    "trace stats": "pcieperf trace stats 'archive/*.pcap' --archive --scheduler local:2",
    "trace demand": "pcieperf trace demand 'archive/*.pcap' --archive --profile dpdk --gen 4",
    "trace merge": "pcieperf trace merge a.pcap b.pcapng -o merged.pcapng",
    "trace synth": "pcieperf trace synth --sizes imix --pps 10M --duration 1s -o imix.pcap",
    "trace convert": "pcieperf trace convert old.pcap -o new.pcapng",
    "counters": "pcieperf counters import pcm-iio.csv",
    "counters import": "pcieperf counters import pcm-iio.csv --format pcm-iio",
    "counters ls": "pcieperf counters ls",
    "report": "pcieperf report -o pcieperf-report",
    "sweep": "pcieperf sweep grid.toml -o grid.parquet --scheduler local:2",
}
"""One example line per command and command group, shown at the end of its --help."""


def _help_text(text: str) -> str:
    """Double every literal % (as in "15 %"): argparse %-formats help strings."""
    return text.replace("%", "%%")


def _parser_options(subparsers: argparse._SubParsersAction, name: str, summary: str) -> dict:
    """The help, description and example epilog of one (sub)command or command group."""
    path = f"{subparsers._prog_prefix} {name}".removeprefix("pcieperf ")
    first_sentence = " ".join(summary.split()).split(". ")[0].rstrip(".")
    return {
        "help": _help_text(first_sentence),
        "description": _help_text(summary),
        "epilog": f"example:\n  {EXAMPLES[path]}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
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
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
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
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)  # type: ignore[arg-type]

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
            allowed = ", ".join([*OUTPUT_FORMATS, *tools])  # type: ignore[list-item]
            parser.error(f"argument --format: {value!r} is not allowed; choose one of {allowed}")


def _add_group(
    subparsers: argparse._SubParsersAction, name: str, summary: str
) -> argparse._SubParsersAction:
    """Register a command group (`trace`, `iommu`, …); given alone it prints its help."""
    group = subparsers.add_parser(name, **_parser_options(subparsers, name, summary))
    group.set_defaults(help_of=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="COMMAND", parser_class=_Parser)


def _add_trace_commands(sub: argparse._SubParsersAction) -> None:
    """The `trace` group: capture statistics, merge, synthesis and conversion."""
    trace_sub = _add_group(sub, "trace", _GROUPS["trace"])
    p = _add_command(trace_sub, "stats", cmd_trace_stats)
    p.add_argument("files", nargs="+", help="pcap or pcapng files (.gz/.zst too; - is stdin)")
    p.add_argument("--eth", type=_whole(), default=40, help="line rate (Gb/s) that defines bursts")
    p.add_argument(
        "--windows", default=None, help="peak-rate windows, comma-separated (default 1ms,1s)"
    )
    _add_capture_read_options(p)
    p.add_argument(
        "--archive",
        action="store_true",
        help="one result per port (files with the same interfaces): its files as if "
        "concatenated in time order, summarised on Dask (docs/scale.md)",
    )
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "demand", cmd_trace_demand)
    p.add_argument("files", nargs="+", help="pcap or pcapng files or globs")
    p.add_argument("--profile", default="dpdk", help="NIC profile: built-in name or a .toml file")
    p.add_argument("--paths", default="rx,tx", help="rx, tx or rx,tx (default both)")
    p.add_argument("--window", default="1ms", help="time window of the bandwidth")
    p.add_argument("--archive", action="store_true", help="one result per port, as trace stats")
    _add_capture_read_options(p)
    _add_link_options(p)
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "merge", cmd_trace_merge)
    p.add_argument("files", nargs="+", help="pcap or pcapng inputs, each in time order")
    p.add_argument("-o", "--output", required=True, help="OUT.pcapng or OUT.pcap")
    _add_scheduler_option(p)
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "synth", cmd_trace_synth)
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--sizes", default="64", help="frame size incl. FCS, imix, or 64:7,594:4,...")
    p.add_argument("--pps", default="1M", help="mean packet rate: 10e6, 10M, 500k")
    p.add_argument("--duration", default="10ms", help="capture length: 1s, 10ms, ...")
    p.add_argument("--arrival", choices=trace.ARRIVALS, default="constant")
    p.add_argument(
        "--burst", type=_whole(), default=32, help="onoff: frames per back-to-back burst"
    )
    p.add_argument("--flows", type=_whole(), default=1024, help="UDP flows the packets cycle over")
    p.add_argument("--seed", type=_whole(), default=1, help="random seed (sizes, Poisson, on/off)")
    p.add_argument("-o", "--output", required=True, help="OUT.pcap or OUT.pcapng")
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "convert", cmd_trace_convert)
    p.add_argument("file", help="pcap or pcapng input (.gz/.zst too; - is stdin)")
    p.add_argument("-o", "--output", required=True, help="OUT.pcap (ns) or OUT.pcapng")
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")


_GROUPS = {
    "dpdk": "Real DPDK runs (dpdk-testpmd, no NIC needed)",
    "data": "The measured-data store (pcie-bench results)",
    "bench": "pcie-bench: test definitions, the simulator, calibration and prediction",
    "iommu": "IOMMU and page size in DPDK data planes",
    "counters": "Imported uncore counter measurements (pcm-iio, perf, VTune)",
    "trace": "Capture files: stats, demand, merge, synth, convert",
}
"""The summary of each command group, shown beside its name in `pcieperf --help`."""


def _add_link_command(sub: argparse._SubParsersAction) -> None:
    """The `link` command and its options."""
    _add_command(sub, "link", cmd_link, link=True)


def _add_dma_command(sub: argparse._SubParsersAction) -> None:
    """The `dma` command and its options."""
    p = _add_command(sub, "dma", cmd_dma, link=True)
    p.add_argument("--op", choices=tlp.OPS, default="write")
    p.add_argument("--sizes", default="64,128,256,512,1024,1500", help="bytes, comma-separated")
    p.add_argument("--offset", type=_whole(), default=0, help="start address offset in bytes")
    p.add_argument("--tlps", action="store_true", help="list every TLP of each transfer")


def _add_nic_command(sub: argparse._SubParsersAction) -> None:
    """The `nic` command and its options."""
    p = _add_command(sub, "nic", cmd_nic, link=True)
    p.add_argument("--profile", default="dpdk", help="built-in name or a .toml file")
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--vlan", action="store_true", help="frames carry a VLAN tag on the wire")
    p.add_argument(
        "--sizes", default=None, help="frame sizes incl. FCS and named mixes, e.g. 64,256,1518,imix"
    )
    p.add_argument(
        "--mix",
        action="append",
        metavar="SIZE:COUNT,...",
        help="a frame-size histogram, e.g. 64:7,594:4,1518:1 (repeatable)",
    )
    p.add_argument("--paths", default="rx,tx", help="rx, tx or rx,tx (default both)")
    p.add_argument("--breakdown", action="store_true", help="per-operation cost per packet")
    p.add_argument("--pps", default=None, help="also report the PCIe bandwidth this rate needs")
    _add_trace_replay_options(p)


def _add_latency_command(sub: argparse._SubParsersAction) -> None:
    """The `latency` command and its options."""
    p = _add_command(sub, "latency", cmd_latency, link=True)
    p.add_argument("--profile", default="bypass", help="built-in name or a .toml file")
    p.add_argument("--sizes", default="64,128,256,512,1024,1500", help="frame sizes incl. FCS")
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--pps", default=None, help="rate for the concurrency (default: line rate)")
    p.add_argument("--tags", type=_whole(), default=None, help="outstanding read requests")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--host", default=None, help="pcie-bench result directory (lat_* files)")
    host.add_argument("--calibration", default=None, help="a `bench calibrate` file")
    host.add_argument("--read-ns", type=_real(), default=None, help="64 B DMA read round trip")
    p.add_argument("--write-ns", type=_real(), default=None, help="posted write latency (ns)")
    p.add_argument("--cache", default="HWarm", help="--host cache state: HWarm or Cold")
    p.add_argument(
        "--set", action="append", metavar="NAME=NS", help="an assumed parameter, e.g. poll_ns=100"
    )
    p.add_argument("--breakdown", action="store_true", help="every term of every size")


def _add_profiles_command(sub: argparse._SubParsersAction) -> None:
    """The `profiles` command and its options."""
    p = _add_command(sub, "profiles", cmd_profiles)
    p.add_argument("name", nargs="?", help="show this profile")


def _add_dpdk_fwd_command(sub: argparse._SubParsersAction) -> None:
    """The `dpdk-fwd` command and its options."""
    p = _add_command(sub, "dpdk-fwd", cmd_dpdk_fwd, link=True)
    _add_forwarding_options(p)
    p.add_argument(
        "--mix",
        default=None,
        help="frame sizes incl. FCS instead of --pkt: imix, a size, or size:count,...",
    )
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    _add_trace_replay_options(p)
    p.add_argument("--poll", default="1us", help="with --trace: the PMD's poll period")


def _add_explain_command(sub: argparse._SubParsersAction) -> None:
    """The `explain` command and its options."""
    p = _add_command(sub, "explain", cmd_explain, link=True)
    _add_explain_options(p, required=True)
    p.add_argument("--plot", default=None, help="measured vs predicted over time (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot/profile file")
    fit = p.add_argument_group("IOMMU fit (as `iommu fit`, from the same counters and setup)")
    fit.add_argument(
        "--fit-iommu", action="store_true", help="fit IOTLB reach and walkers from IOTLB Miss"
    )
    fit.add_argument("--fit-out", default=None, help="write the fitted profile (implies the fit)")
    fit.add_argument("--platform", default=platforms.DEFAULT_PLATFORM, help="base IOMMU profile")
    fit.add_argument("--name", default="fitted", help="name of the fitted profile")


def _add_dpdk_commands(sub: argparse._SubParsersAction) -> None:
    """The `dpdk` group."""
    dpdk_sub = _add_group(sub, "dpdk", _GROUPS["dpdk"])
    p = _add_command(dpdk_sub, "run", cmd_dpdk_run, store=True)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--pcap", default=None, help="replay this capture (net_pcap, infinite_rx)")
    source.add_argument("--null", action="store_true", help="net_null packets (the default)")
    p.add_argument(
        "--seconds",
        type=_real(high=SECONDS_PER_DAY),
        default=3.0,
        help="forward at least this long, and until testpmd has measured a rate",
    )
    p.add_argument("--null-size", type=_whole(), default=64, help="net_null packet bytes")
    p.add_argument(
        "testpmd_args", nargs="*", metavar="-- ARGS", help="extra testpmd args, e.g. -- --burst=8"
    )
    _add_command(dpdk_sub, "runs", cmd_dpdk_runs, store=True)


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


def _add_validate_command(sub: argparse._SubParsersAction) -> None:
    """The `validate` command and its options."""
    p = _add_command(sub, "validate", cmd_validate)
    p.add_argument("--measured", required=True, help="pcie-bench result directory")
    p.add_argument("--predicted", required=True, help="directory of predicted bw_*.csv files")
    p.add_argument("--worst", type=_whole(), default=10, help="how many worst points to list")
    p.add_argument("--plot", default=None, help="measured vs predicted plot (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")


def _add_iommu_commands(sub: argparse._SubParsersAction) -> None:
    """The `iommu` group."""
    iommu_sub = _add_group(sub, "iommu", _GROUPS["iommu"])
    p = _add_command(iommu_sub, "sim", cmd_iommu_sim)
    _add_iommu_options(p)
    p = _add_command(iommu_sub, "gain", cmd_iommu_gain)
    _add_iommu_options(p)
    p.add_argument("--from-rxd", type=_whole(), default=1024, help="ring size before")
    p.add_argument("--from-txd", type=_whole(), default=None, help="(default: --from-rxd)")
    p.add_argument("--to-rxd", type=_whole(), default=128, help="ring size after")
    p.add_argument("--to-txd", type=_whole(), default=None, help="(default: --to-rxd)")
    p.add_argument("--sizes", default="64,128,256,imix", help="frame sizes or mixes")
    p = _add_command(iommu_sub, "advise", cmd_iommu_advise)
    _add_iommu_options(p)
    p.add_argument("--plot", default=None, help="bar chart of the sweep (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")
    p = _add_command(iommu_sub, "fit", cmd_iommu_fit)
    _add_iommu_options(p)
    p.add_argument("--counters", required=True, help="counter file with IOTLB misses (pcm-iio)")
    p.add_argument(
        "--counters-format", dest="format", default=None, choices=counters.SOURCES, help="its tool"
    )
    p.add_argument("--stack", default=None, help="the NIC's IIO stack (default: the busy one)")
    p.add_argument("--pps", required=True, help="forwarded packets per second while measured")
    p.add_argument("-o", "--out", default=None, help="write the fitted profile (.toml)")
    p.add_argument("--name", default="fitted", help="name of the fitted profile")
    p.add_argument("--force", action="store_true", help="overwrite an existing profile file")


def _add_platforms_command(sub: argparse._SubParsersAction) -> None:
    """The `platforms` command and its options."""
    p = _add_command(sub, "platforms", cmd_platforms)
    p.add_argument("name", nargs="?", help="show this platform (a name or a .toml file)")
    p.add_argument(
        "--calibration", default=str(calibrate.DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )


def _add_counters_commands(sub: argparse._SubParsersAction) -> None:
    """The `counters` group."""
    counters_sub = _add_group(sub, "counters", _GROUPS["counters"])
    p = _add_command(counters_sub, "import", cmd_counters_import, store=True)
    p.add_argument("file", help="a counter file")
    p.add_argument(
        "--counters-format",
        dest="format",
        default=None,
        choices=counters.SOURCES,
        help="its tool (default: detected)",
    )
    p.add_argument("--delimiter", default=None, help="field separator (default: detected)")
    p.add_argument(
        "--interval", type=_real(), default=None, help="perf iostat/stat without -I: run seconds"
    )
    p.add_argument("--lenient", action="store_true", help="skip unknown columns instead of failing")
    p.add_argument("--force", action="store_true", help="replace an earlier import of the file")
    _add_command(counters_sub, "ls", cmd_counters_ls, store=True)


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    """The `report` command and its options."""
    p = _add_command(sub, "report", cmd_report, link=True)
    p.add_argument("-o", "--output", default="pcieperf-report", help="output folder")
    p.add_argument("--eth", type=_whole(), default=40, help="Ethernet Gb/s for the NIC figure")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty output folder")
    _add_explain_options(p.add_argument_group("measured counters (adds a section)"), False)


def _add_sweep_command(sub: argparse._SubParsersAction) -> None:
    """The `sweep` command and its options."""
    p = _add_command(sub, "sweep", cmd_sweep)
    p.add_argument("spec", help="sweep spec (.toml): command, options, axes (docs/scale.md)")
    p.add_argument("-o", "--output", required=True, help="OUT.parquet")
    p.add_argument("--force", action="store_true", help="overwrite OUT, discard another's parts")
    _add_scheduler_option(p)


_TOP_LEVEL: dict[str, tuple[str, Callable[[argparse._SubParsersAction], None]]] = {
    "link": (cmd_link.__doc__ or "link", _add_link_command),
    "dma": (cmd_dma.__doc__ or "dma", _add_dma_command),
    "nic": (cmd_nic.__doc__ or "nic", _add_nic_command),
    "latency": (cmd_latency.__doc__ or "latency", _add_latency_command),
    "profiles": (cmd_profiles.__doc__ or "profiles", _add_profiles_command),
    "dpdk-fwd": (cmd_dpdk_fwd.__doc__ or "dpdk-fwd", _add_dpdk_fwd_command),
    "explain": (cmd_explain.__doc__ or "explain", _add_explain_command),
    "dpdk": (_GROUPS["dpdk"], _add_dpdk_commands),
    "data": (_GROUPS["data"], _add_data_commands),
    "bench": (_GROUPS["bench"], _add_bench_commands),
    "validate": (cmd_validate.__doc__ or "validate", _add_validate_command),
    "iommu": (_GROUPS["iommu"], _add_iommu_commands),
    "platforms": (cmd_platforms.__doc__ or "platforms", _add_platforms_command),
    "trace": (_GROUPS["trace"], _add_trace_commands),
    "counters": (_GROUPS["counters"], _add_counters_commands),
    "report": (cmd_report.__doc__ or "report", _add_report_command),
    "sweep": (cmd_sweep.__doc__ or "sweep", _add_sweep_command),
}
"""Every top-level command and group, in help order: its summary and what registers it."""


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
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    parser.add_argument("--version", action=_Version, help="show the installed version and exit")
    parser.set_defaults(help_of=parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (summary, add) in _TOP_LEVEL.items():
        if only is None or name == only:
            add(sub)
        else:
            sub.add_parser(name, **_parser_options(sub, name, summary))
    return parser


def _top_level_word(argv: Sequence[str]) -> str:
    """The top-level command or group that `argv` names: its first word that is no option
    (`pcieperf` has no option that takes a value), or "" for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def _show_warning(message: Warning | str, category: type[Warning], *_: object) -> None:
    """One line on stderr per warning, in the CLI's voice (no file and line of the source)."""
    print(f"pcieperf: warning: {message}", file=sys.stderr)


def _warn(text: str) -> None:
    """A result is printed, but the user should know something about it."""
    warnings.warn(text, PcieperfWarning, stacklevel=2)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an unusable plot file before any work starts (a long sweep or simulation must
    not end in 'file exists')."""
    plot = getattr(args, "plot", None)
    if plot is not None:
        require_plot_file(plot, getattr(args, "force", False))


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
            args.func(args)
    except KeyboardInterrupt:
        print("pcieperf: interrupted", file=sys.stderr)
        return 130
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
    except Exception as exc:  # the one place that catches everything, by design
        if args.debug:
            traceback.print_exc()
        print(
            f"pcieperf: internal error: {type(exc).__name__}: {exc} "
            "(rerun with --debug for a traceback)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

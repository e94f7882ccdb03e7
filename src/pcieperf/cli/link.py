"""`pcieperf link` and `pcieperf dma`: a link's capacity per direction and the TLPs of one
transfer (pcieperf.pcie)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _link, _whole, tlp
from pcieperf.cli._output import _emit, format_table
from pcieperf.cli._parser import _add_command
from pcieperf.units import parse_int_list

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

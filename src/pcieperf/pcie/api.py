"""The public functions of the PCIe model (`pp.link`, `pp.dma`): keyword arguments named as
the CLI's options, results that print as the CLI prints them (pcieperf.results)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any, TypedDict

from pcieperf._keywords import unknown_keyword
from pcieperf.errors import UsageError, param
from pcieperf.pcie.link import CompletionPolicy, Link
from pcieperf.results import Column, Columnar, Table

if TYPE_CHECKING:
    from typing import Unpack

    from pcieperf.pcie.tlp import Op

DMA_SIZES = (64, 128, 256, 512, 1024, 1500)  # the `dma` command's default --sizes


def make_link(
    *,
    gen: int = 3,
    lanes: int = 8,
    mps: int = 256,
    mrrs: int = 512,
    rcb: int = 64,
    completion: CompletionPolicy = "rcb",
    addr32: bool = False,
    ecrc: bool = False,
    flit: bool | None = None,
    ack_interval: float | None = None,
    fc_interval: float | None = None,
    **unknown: object,
) -> Link:
    """A link from the CLI's link options (`--gen`, `--lanes`, `--mps`, ...), same defaults. An
    API function passes its `**link_options` here: a keyword neither takes is named, with both
    functions' parameters."""
    if unknown:
        raise TypeError(_unknown_keyword(sys._getframe(1).f_code, next(iter(unknown))))
    return Link(
        gen=gen,
        lanes=lanes,
        mps=mps,
        mrrs=mrrs,
        rcb=rcb,
        addr64=not addr32,
        ecrc=ecrc,
        flit=flit,
        completion_policy=completion,
        ack_interval_symbols=ack_interval,
        fc_interval_symbols=fc_interval,
    )


def _unknown_keyword(caller: CodeType, name: str) -> str:
    """The message for a keyword that neither `caller` (an API function handing its
    `**link_options` on) nor make_link takes."""
    own = caller.co_varnames[: caller.co_argcount + caller.co_kwonlyargcount]
    link_keys = make_link.__code__.co_varnames[: make_link.__code__.co_kwonlyargcount]
    function = caller.co_name if not caller.co_name.startswith("<") else "make_link"
    return unknown_keyword(f"pp.{function}", name, [*own, *link_keys])


class LinkOptions(TypedDict, total=False):
    """The keywords `make_link` takes, for type checkers: an API function that hands its
    `**link_options` on is typed `**link_options: Unpack[LinkOptions]`."""

    gen: int
    lanes: int
    mps: int
    mrrs: int
    rcb: int
    completion: CompletionPolicy
    addr32: bool
    ecrc: bool
    flit: bool | None
    ack_interval: float | None
    fc_interval: float | None


def link(**link_options: Unpack[LinkOptions]) -> Table:
    """A link's bandwidth per direction (`pcieperf link`): raw, after encoding and usable by
    TLPs, with the DLLP and SKP shares; `link_options` as `make_link` takes them."""
    ln = make_link(**link_options)
    data = {
        "gen": ln.gen,
        "lanes": ln.lanes,
        "flit": ln.flit_mode,
        "encoding": ln.generation.encoding.name,
        "raw_gbps": ln.raw_gbps,
        "encoded_gbps": ln.encoded_gbps,
        "tlp_gbps": ln.tlp_gbps,
        "skp_fraction": ln.skp_fraction,
        "dllp_fraction": ln.dllp_fraction,
        "flit_tlp_fraction": ln.flit_fraction,
        "ack_interval_symbols": None if ln.flit_mode else ln.ack_interval,
        "fc_interval_symbols": None if ln.flit_mode else ln.fc_interval,
    }
    rates = (("raw", ln.raw_gbps), ("after encoding", ln.encoded_gbps))
    flit = ", Flit mode" if ln.flit_mode else ""
    return Table(
        data,
        (Column("per_direction", "per direction"), Column("gbps", "Gb/s")),
        title=f"PCIe Gen{ln.gen} x{ln.lanes} ({data['encoding']}{flit})",
        footer=f"SKP {ln.skp_fraction:.3%}, DLLPs {ln.dllp_fraction:.3%}"
        + (f", flit TLP share {ln.flit_fraction:.2%}" if ln.flit_mode else ""),
        text_rows=[
            {"per_direction": what, "gbps": gbps}
            for what, gbps in (*rates, ("usable by TLPs", ln.tlp_gbps))
        ],
    )


DMA_COLUMNS = (
    Column("size", "size"),
    Column("effective_gbps", "Gb/s"),
    Column("tlps_up", "TLPs up"),
    Column("tlps_down", "TLPs down"),
    Column("bytes_up", "bytes up"),
    Column("bytes_down", "bytes down"),
)
TLP_COLUMNS = (
    Column("kind", "kind"),
    Column("direction", "dir"),
    Column("addr", "addr"),
    Column("data_bytes", "data"),
    Column("wire_bytes", "wire"),
)


def dma(
    *,
    op: Op = "write",
    sizes: Iterable[int] = DMA_SIZES,
    offset: int = 0,
    tlps: bool = False,
    **link_options: Unpack[LinkOptions],
) -> Table:
    """Effective bandwidth and TLP cost of device DMA per transfer size (`pcieperf dma`): one
    row per size, with every TLP of each transfer when `tlps`. The rows are kept as the
    model's columns (`to_columns`, `to_frame` build no per-row dicts: a sweep's millions)."""
    from pcieperf.pcie import tlp  # numpy: not for `link`, which must start light (issue 15)

    ln = make_link(**link_options)
    sizes = list(sizes)
    cost = tlp.dma_rows(ln, op, sizes, offset)
    columns: dict[str, Sequence[object]] = {"size": sizes, **cost._asdict()}
    details = []
    if tlps:
        listed = int(sum(cost.tlps_up) + sum(cost.tlps_down))
        if listed > MAX_LISTED_TLPS:  # each listed TLP is a row in memory and on screen
            raise UsageError(
                f"{param('tlps')} would list {listed:,} TLPs; at most {MAX_LISTED_TLPS:,}: give "
                f"smaller sizes, or leave out {param('tlps')} for the totals"
            )
        columns["tlps"] = [_tlp_list(ln, op, size, offset) for size in sizes]
        details = [
            Table(listed, TLP_COLUMNS, title=f"\nTLPs of {size} B:")
            for size, listed in zip(sizes, columns["tlps"], strict=True)
        ]
    return Table(
        Columnar(columns),
        DMA_COLUMNS,
        title=f"DMA {op} on Gen{ln.gen} x{ln.lanes}, MPS {ln.mps}, MRRS {ln.mrrs}, offset "
        f"{offset}; link {ln.tlp_gbps:.2f} Gb/s for TLPs",
        details=details,
    )


MAX_LISTED_TLPS = 1_000_000  # ~200 MB of rows: far beyond anything read on a screen


def _tlp_list(ln: Link, op: Op, size: int, offset: int) -> list[dict[str, Any]]:
    """Every TLP of one transfer: kind, direction, address, data and wire bytes."""
    from pcieperf.pcie import tlp

    listed = tlp.list_device_tlps(ln, op, size, offset)
    return [
        {"kind": k, "direction": d, "addr": int(a), "data_bytes": int(n), "wire_bytes": int(w)}
        for k, d, a, n, w in zip(
            listed.kind,
            listed.direction,
            listed.addr,
            listed.data_bytes,
            listed.wire_bytes,
            strict=True,
        )
    ]

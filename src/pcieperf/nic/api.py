"""The public functions of the NIC models (`pp.nic`, `pp.profiles`, `pp.profile`,
`pp.latency`): keyword arguments named as the CLI's options, with its defaults; results that
print as the CLI prints them (pcieperf.results). Sizes are Ethernet frames incl. FCS
(docs/units.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf import _numpy
from pcieperf._cache import cached
from pcieperf._values import Value, is_python
from pcieperf.errors import UsageError, param, warn
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pcie.api import make_link
from pcieperf.results import Column, Columnar, Table, as_list, finite_or_none
from pcieperf.units import parse_int_list, parse_rate

if TYPE_CHECKING:
    from typing import Unpack

    from pcieperf.net.ethernet import Ethernet, PacketMix
    from pcieperf.nic.host import HostLatency
    from pcieperf.nic.nic import NicResult, TagLimit
    from pcieperf.nic.profile import DeviceFacts, NicProfile
    from pcieperf.nic.rows import FewRow, Rows
    from pcieperf.pcie.api import LinkOptions

Sizes = str | int | Iterable[int | str]
"""Frame sizes incl. FCS and named mixes: `"64,256,imix"`, `64` or `[64, "imix"]`."""

LATENCY_SIZES = (64, 128, 256, 512, 1024, 1500)  # the `latency` command's default --sizes
FEW_SIZES = 64
"""Most distinct frame sizes `nic` prices on Python scalars (~0.3 ms each, where importing
numpy takes 85-120 ms) while numpy is not loaded; more, a --breakdown, or numpy in use already
price the rows as arrays (`nic.evaluate` gives the same values either way)."""


def _size_tokens(sizes: Sizes | None) -> list[str]:
    """The sizes and mixes as text tokens, whichever way they were given."""
    if sizes is None:
        return []
    if isinstance(sizes, str):
        return [tok for tok in sizes.split(",") if tok.strip()]
    if isinstance(sizes, int):
        return [str(sizes)]
    return [str(s) for s in sizes]


def _rate(pps: float | str | None) -> float | None:
    """A packet rate given as a number or as text (`14.88Mpps`), checked; None stays None."""
    return None if pps is None else parse_rate(str(pps))


# --- nic ----------------------------------------------------------------------------------------

NIC_COLUMNS = (
    Column("size", "size (B)"),
    Column("mpps", "Mpps"),
    Column("achievable_gbps", "Gb/s"),
    Column("line_rate_gbps", "line Gb/s"),
    Column("limits", "limited by"),
    Column("pcie_up_gbps", "up Gb/s"),
    Column("pcie_down_gbps", "down Gb/s"),
    Column("up_bytes_per_pkt", "B up/pkt"),
    Column("down_bytes_per_pkt", "B down/pkt"),
)
NEEDED_COLUMNS = (
    Column("size", "size (B)"),
    Column("needed_up_gbps", "needs up Gb/s"),
    Column("needed_down_gbps", "needs down Gb/s"),
    Column("fits_pcie", "fits PCIe"),
    Column("fits_line", "fits line"),
)
OPERATION_COLUMNS = (
    Column("path", "path"),
    Column("what", "operation"),
    Column("initiator", "initiator"),
    Column("up_bytes_per_pkt", "B up"),
    Column("down_bytes_per_pkt", "B down"),
)


def nic(
    *,
    profile: str = DEFAULT_PROFILE,
    eth: int = 40,
    vlan: bool = False,
    sizes: Sizes | None = None,
    mix: Sequence[str] | None = None,
    paths: str | Sequence[str] = "rx,tx",
    breakdown: bool = False,
    pps: float | str | None = None,
    tags: int | None = None,
    host: str | Path | None = None,
    calibration: str | Path | None = None,
    read_ns: float | None = None,
    cache: str = "HWarm",
    **link_options: Unpack[LinkOptions],
) -> Table:
    """What a NIC/driver profile achieves per frame size or mix (`pcieperf nic`): one row per
    size, with the PCIe bandwidth `pps` needs, and each operation's bytes when `breakdown`.
    `sizes`: frames incl. FCS and named mixes; `mix`: frame-size histograms (`64:7,1518:1`).
    The device's read tags bind too (`tags`, default its profile's), held for the read latency
    of the host `latency` takes (`host`, `calibration`, `read_ns`; default the assumed host)."""
    link = make_link(**link_options)
    loaded, chosen, port, rate = _setup(profile, eth, vlan, paths, pps)
    limit, host_source = _tag_limit(tags, host, calibration, read_ns, cache)
    few = None if breakdown or _numpy.in_use() else _few_rows(sizes, mix)
    from pcieperf.nic.nic import evaluate  # no numpy: rows as arrays import it
    from pcieperf.nic.pricing import check_sizes

    if few is None:
        priced: Sequence[Rows | FewRow] = [_array_rows(sizes, mix)]
    else:
        priced = few  # checked together, so that an error names what the arrays would name
        check_sizes(loaded, sorted({s for row in few for s in row.sizes}), chosen)
    results = [evaluate(loaded, link, port, r, chosen, limit) for r in priced]
    columns = _nic_columns(results, rate, breakdown)
    head = (
        f"{loaded.name}: {loaded.description}"
        + (f"\nNIC: {loaded.device.name}" if loaded.device else "")
        + f"\nGen{link.gen} x{link.lanes} ({link.tlp_gbps:.2f} Gb/s for TLPs per direction), "
        f"{eth} GbE" + f"\n{_tags_line(results[0], host_source)}"
    )
    rows = Columnar(columns)
    details = [Table(rows, NEEDED_COLUMNS, title=f"\nat {rate / 1e6:.3f} Mpps:")] if rate else []
    if breakdown:
        details += [
            Table(operations, OPERATION_COLUMNS, title=f"\nper packet at size {size}:")
            for size, operations in zip(columns["size"], columns["operations"], strict=True)
        ]
    shown = {
        **columns,
        **_columns_of(results, lambda r: {"mpps": r.max_pps / 1e6}),
        "limits": ["+".join(limits) for limits in columns["limited_by"]],
    }
    return Table(
        rows,
        NIC_COLUMNS,
        title=head,
        text_rows=Columnar(shown),
        details=details,
        optional=("down_bytes_per_pkt", "up_bytes_per_pkt", "line_rate_gbps"),
    )


def _setup(
    profile: str,
    eth: int,
    vlan: bool,
    paths: str | Sequence[str],
    pps: float | str | None,
    load: Callable[[str], NicProfile] | None = None,
) -> tuple[NicProfile, tuple[str, ...], Ethernet, float | None]:
    """`nic`'s profile (loaded by `load`, default `load_profile`), DMA paths, port and rate,
    checked."""
    from pcieperf.net.ethernet import Ethernet
    from pcieperf.nic.profile import load_profile

    loaded = (load or load_profile)(profile)
    return loaded, dma_paths(paths), Ethernet(eth, vlan=vlan), _rate(pps)


@cached(16)
def _profile_once(profile: str) -> NicProfile:
    """A profile loaded once per name or file while a sweep checks its points (parsing its
    TOML for each of 10 000 points took 12 s)."""
    from pcieperf.nic.profile import load_profile

    return load_profile(profile)


def check(
    profile: str,
    eth: int,
    vlan: bool,
    paths: str | Sequence[str],
    pps: float | str | None,
    sizes: Sizes | None,
    mix: Sequence[str] | None,
) -> None:
    """Check `nic`'s options (but the link's: `make_link`) as `nic` does before its model runs,
    without running it: `sweep` checks every point of a grid so before any work."""
    _setup(profile, eth, vlan, paths, pps, _profile_once)
    if _fixed_sizes(sizes, mix) is None:
        frame_mixes(sizes, mix)  # the sizes and mixes parse


def _array_rows(sizes: Sizes | None, mix: Sequence[str] | None) -> Rows:
    """The rows to price as arrays, checked: plain frame sizes (`fixed_rows`: no PacketMix
    per size), else one PacketMix each."""
    from pcieperf.nic.rows import fixed_rows, mix_rows

    fixed = _fixed_sizes(sizes, mix)
    return mix_rows(frame_mixes(sizes, mix)) if fixed is None else fixed_rows(fixed)


def _tag_limit(
    tags: int | None,
    host: str | Path | None,
    calibration: str | Path | None,
    read_ns: float | None,
    cache: str,
) -> tuple[TagLimit, str]:
    """The device's tags and the host read latency they are held for, as `latency` takes
    them, and where the latency comes from (the assumed host where none is given)."""
    from pcieperf.nic.host import LOADED_STAT, assumed_host
    from pcieperf.nic.nic import TagLimit, check_tags

    check_tags(tags)
    found = _latency_host(host, calibration, read_ns, None, cache) or assumed_host()
    return TagLimit(tags, found.read_ns[LOADED_STAT]), found.source


def _tags_line(result: NicResult, host_source: str) -> str:
    """Where the tag bound comes from: the tags and the read latency they are held for."""
    if math.isinf(result.tags):
        return "read tags: no limit (the profile has no [device] table to take them from)"
    return (
        f"read tags: {result.tags:g}, each held a {result.read_ns:.0f} ns read round trip "
        f"(host: {host_source})"
    )


def _few_rows(sizes: Sizes | None, mix: Sequence[str] | None) -> list[FewRow] | None:
    """The rows asked for as `nic.FewRow`s where they are a few (`FEW_SIZES`) valid sizes and
    mixes (each mix's shares as numpy would compute them: `few_weights`); else None, and
    numpy prices them and names any bad value."""
    from pcieperf.net.ethernet import few_frames, few_weights, mix_counts

    rows = []
    for text in [*_size_tokens(sizes), *(mix or [])]:
        name, frames, counts = mix_counts(text)
        weights = None if counts is None else few_weights(frames, counts)
        if not few_frames(frames) or (counts is not None and weights is None):
            return None
        rows.append((name, frames, weights))
    if not rows or len({size for _, frames, _ in rows for size in frames}) > FEW_SIZES:
        return None  # no sizes is an error `_array_rows` names, before the model is imported
    from pcieperf.nic.rows import FewRow

    return [FewRow(*row) for row in rows]


def dma_paths(paths: str | Sequence[str]) -> tuple[str, ...]:
    """The DMA paths `rx,tx` (text or a list), checked against the known ones."""
    from pcieperf.nic.profile import check_paths

    return check_paths(
        tuple(p.strip() for p in (paths.split(",") if isinstance(paths, str) else paths))
    )


def _fixed_sizes(sizes: Sizes | None, mix: Sequence[str] | None) -> list[int] | None:
    """The frame sizes when `sizes` are plain sizes only (no named mix, no histogram), the
    case `rows.fixed_rows` takes without a PacketMix per size; else None."""
    from pcieperf.net.ethernet import mix_counts

    parsed = [] if mix else [mix_counts(token) for token in _size_tokens(sizes)]
    if not parsed or any(counts is not None for _, _, counts in parsed):
        return None
    return [frames[0] for _, frames, _ in parsed]


def frame_mixes(sizes: Sizes | None, mix: Sequence[str] | None) -> list[PacketMix]:
    """The frame sizes, named mixes and histograms asked for, at least one."""
    from pcieperf.net.ethernet import parse_mix

    mixes = [parse_mix(tok) for tok in _size_tokens(sizes)] + [parse_mix(m) for m in mix or []]
    if not mixes:
        raise UsageError(
            f"give frame sizes with {param('sizes')} (e.g. 64,256,1518,imix) or {param('mix')}"
        )
    return mixes


NIC_FIELDS = {
    **dict.fromkeys(("mean_frame_bytes", "max_pps", "pcie_max_pps")),
    "tag_bound_pps": "tag_max_pps",
    "line_rate_pps": "line_pps",
    **dict.fromkeys(("achievable_gbps", "line_rate_gbps", "bottleneck", "limited_by")),
    **dict.fromkeys(("pcie_up_gbps", "pcie_down_gbps", "up_bytes_per_pkt", "down_bytes_per_pkt")),
    **dict.fromkeys(("up_tlps_per_pkt", "down_tlps_per_pkt")),
}
"""The JSON keys of a `nic` row, in order, each with its NicResult attribute (None: the same
name); each attribute holds one value per row, read once."""


def _nic_columns(
    results: list[NicResult], pps: float | None, breakdown: bool
) -> dict[str, Sequence[Any]]:
    """The JSON rows of `nic` as columns: the model's arrays (one result) or lists of the
    scalars of one result per `FewRow`; one value per size, the rate's needs
    when `pps`, each operation's bytes when `breakdown`; warns once per capacity the rate
    exceeds."""
    labels = [name for r in results for name in _names(r.label)]
    columns: dict[str, Sequence[Any]] = {
        "size": [int(label) if label.isdigit() else label for label in labels]
    }
    fields = NIC_FIELDS.items()
    columns |= _columns_of(results, lambda r: {key: getattr(r, a or key) for key, a in fields})
    # No bound (no reads, or no [device] table) is null, as JSON has no infinity.
    columns["tag_bound_pps"] = [finite_or_none(v) for v in as_list(columns["tag_bound_pps"])]
    columns["host_read_ns"] = [results[0].read_ns] * len(labels)
    if pps is not None:
        _warn_rate_over(pps, labels, columns["line_rate_pps"], "the line")
        _warn_rate_over(pps, labels, columns["pcie_max_pps"], "the PCIe link")
        columns["pps"] = [pps] * len(labels)
        columns |= _columns_of(results, lambda r: _needs(r, pps))
    if breakdown:
        columns["operations"] = _operations(results[0])
    return columns


def _names(label: list[str] | str) -> list[str]:
    """A result's row names: its rows', or its `FewRow`'s one."""
    return [label] if isinstance(label, str) else label


def _columns_of(
    results: list[NicResult], values: Callable[[NicResult], dict[str, Value]]
) -> dict[str, Sequence[Any]]:
    """`values` of one result of arrays as they are, or of results of scalars (one row each)
    as lists."""
    if not _scalars(results):
        return values(results[0])
    rows = [values(r) for r in results]
    return {key: [row[key] for row in rows] for key in rows[0]}


def _scalars(results: list[NicResult]) -> bool:
    """Whether `results` are rows of Python scalars (one per `FewRow`), not one of arrays."""
    return is_python(results[0].max_pps)


def _needs(result: NicResult, pps: float) -> dict[str, Any]:
    """What `pps` packets per second need of the link, and whether it and the line carry them."""
    up, down = result.needed_gbps(pps)
    return {
        "needed_up_gbps": up,
        "needed_down_gbps": down,
        "fits_pcie": pps <= result.pcie_max_pps,
        "fits_line": pps <= result.line_pps,
    }


def _operations(result: NicResult) -> list[list[dict[str, Any]]]:
    """Per row, each operation's bytes per packet (`--breakdown`)."""
    shares = [
        (s, result.per_packet(s.up_bytes).tolist(), result.per_packet(s.down_bytes).tolist())
        for s in result.shares
    ]
    return [
        [
            {
                "path": s.path,
                "what": s.op.what,
                "initiator": s.op.initiator,
                "up_bytes_per_pkt": up[i],
                "down_bytes_per_pkt": down[i],
            }
            for s, up, down in shares
        ]
        for i in range(len(result.label))
    ]


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
        warn(f"{pps / 1e6:.6g} Mpps is more than {what} carries for size {', '.join(over)}")


# --- profiles -----------------------------------------------------------------------------------

OPS_COLUMNS = (
    Column("path", "path"),
    Column("what", "operation"),
    Column("initiator", "initiator"),
    Column("size", "size (B)"),
    Column("every", "every (packets)"),
)
DEVICE_COLUMNS = (
    Column("fact", "device fact"),
    Column("value", "value"),
    Column("assumed", "assumed range"),
)


def profiles() -> Table:
    """The built-in NIC profiles, one row each: name and description (`pcieperf profiles`)."""
    from pcieperf.nic.profile import builtin_profiles, load_profile  # no numpy: only read

    loaded = [load_profile(n) for n in builtin_profiles()]
    return Table(
        [{"name": p.name, "description": p.description} for p in loaded],
        (Column("name", "profile"), Column("description", "description")),
    )


def profile(name: str) -> Table:
    """One NIC profile (`pcieperf profiles NAME`; a built-in name or a .toml file): its
    sources, parameters, device facts and one row per PCIe operation."""
    from pcieperf.nic.profile import load_profile  # no numpy: the profile is only read

    p = load_profile(name)
    operations = [
        {
            "path": path,
            "what": op.what,
            "initiator": op.initiator,
            "size": op.size,
            "every": op.every,
        }
        for path, op in p.operations()
    ]
    data = {
        "name": p.name,
        "description": p.description,
        "source": p.source,
        "notes": p.notes.strip(),
        "params": p.params,
        "device": _device_json(p.device) if p.device else None,
        "operations": operations,
    }
    title = f"{p.name}: {p.description}\nsource: {p.source}\n{p.notes.strip()}\n"
    details = [_device_table(p.device)] if p.device else []
    return Table(
        data,
        OPS_COLUMNS,
        title=title,
        text_rows=operations,
        details=details,
        optional=("initiator",),
    )


def _device_json(device: DeviceFacts) -> dict[str, Any]:
    """The [device] facts as JSON, each assumed range a list (as JSON has it, and CSV too)."""
    return asdict(device) | {"assumed": {k: list(v) for k, v in device.assumed.items()}}


def _device_table(device: DeviceFacts) -> Table:
    """The profile's [device] facts, each assumed one with its range."""
    from pcieperf.nic.profile import DEVICE_FACTS

    rows = [
        {
            "fact": name,
            "value": getattr(device, name),
            "assumed": "-".join(map(str, device.assumed.get(name, ()))) or "cited",
        }
        for name in DEVICE_FACTS
    ]
    title = f"\ndevice: {device.name}\nsource: {device.source}"
    return Table(rows, DEVICE_COLUMNS, title=title)


# --- latency ------------------------------------------------------------------------------------

LATENCY_COLUMNS = (
    Column("size", "size (B)"),
    Column("total_ns", "total ns"),
    Column("pcie_ns", "PCIe ns"),
    Column("pcie_pct", "PCIe %"),
    Column("p999_ns", "p99.9 ns"),
    Column("in_flight", "in flight"),
    Column("tags", "tags needed"),
)
TERM_COLUMNS = (
    Column("path", "path"),
    Column("what", "term"),
    Column("kind", "kind"),
    Column("ns", "ns"),
)


def latency(
    *,
    profile: str | NicProfile = DEFAULT_PROFILE,
    sizes: str | Iterable[int] = LATENCY_SIZES,
    eth: int = 40,
    pps: float | str | None = None,
    tags: int | None = None,
    host: str | Path | None = None,
    calibration: str | Path | None = None,
    read_ns: float | None = None,
    write_ns: float | None = None,
    cache: str = "HWarm",
    set: dict[str, float] | Sequence[str] | None = None,  # the CLI's --set
    breakdown: bool = False,
    **link_options: Unpack[LinkOptions],
) -> Table:
    """Where one packet's loopback latency goes and the DMAs in flight its rate needs, per
    frame size (`pcieperf latency`, docs/latency.md). The host is `host` (a pcie-bench result
    directory, in its `cache` state), `calibration` (a `bench calibrate` file), `read_ns` and
    `write_ns`, or the shipped calibration; `set`: assumed parameters in ns by name."""
    from pcieperf.net.ethernet import Ethernet
    from pcieperf.nic.latency import loopback
    from pcieperf.nic.latency import rows as latency_rows

    frames = parse_int_list(sizes, "frame size") if isinstance(sizes, str) else list(sizes)
    result = loopback(
        profile,
        frames,
        _latency_host(host, calibration, read_ns, write_ns, cache),
        make_link(**link_options),
        Ethernet(eth),
        _rate(pps),
        _latency_params(set),
        tags=tags,
    )
    for note in result.host.notes:
        warn(note)
    rows = latency_rows(result)
    shown = [
        r
        | {
            "pcie_pct": 100 * r["pcie_share"],
            "p999_ns": r["total_by_stat_ns"]["p99.9"],
            "in_flight": r["inflight_needed"]["up"],
            "tags": f"{r['tags_needed']:.1f} of {r['tags_available'] or 'unknown'}",
        }
        for r in rows
    ]
    details = [
        Table(r["terms"], TERM_COLUMNS, title=f"\nsize {r['size']}:") for r in rows if breakdown
    ]
    title = f"{result.profile}, {eth} GbE; host: {result.host.source}"
    return Table(rows, LATENCY_COLUMNS, title=title, text_rows=shown, details=details)


def _latency_host(
    host: str | Path | None,
    calibration: str | Path | None,
    read_ns: float | None,
    write_ns: float | None,
    cache: str,
) -> HostLatency | None:
    """The host latency the options name: a pcie-bench directory, a calibration, given
    values, or None (the assumed host, `host.assumed_host`)."""
    from pcieperf.nic import host as hosts

    given = [param(o) for o, v in (("host", host), ("calibration", calibration)) if v is not None]
    given += [param("read_ns")] if read_ns is not None else []
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} each give the host's latency; give one")
    if write_ns is not None and read_ns is None:
        raise UsageError(f"{param('write_ns')} goes with {param('read_ns')}; give both or neither")
    if cache != "HWarm" and not host:
        raise UsageError(
            f"{param('cache')} chooses a state of {param('host')} DIR's latency files; "
            f"give {param('host')}"
        )
    if host:
        return hosts.host_from_dir(Path(host), cache)
    if calibration:
        return hosts.host_from_calibration(Path(calibration))
    if read_ns is not None:
        return hosts.host_from_values(read_ns, write_ns)
    return None


def _latency_params(items: dict[str, float] | Sequence[str] | None) -> dict[str, float]:
    """`set` NAME=NS items (or a dict of them) as a dict; names and values are checked by the
    model."""
    if isinstance(items, dict):
        return dict(items)
    params = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{param('set')} {item!r}: write NAME=NS, e.g. poll_ns=100")
        try:
            params[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"{param('set')} {item!r}: {value!r} is not a number of ns") from None
    return params

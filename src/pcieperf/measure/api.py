"""The public functions that read measurements (counters, the store): `pp.iommu.fit` (the IOMMU
fitted to a host's IOTLB counters), `pp.data_import`, `pp.data_ls`, `pp.data_show` (pcie-bench
results in the store) and `pp.explain` (counters against the forwarding model). Keyword
arguments are named as the CLI's options; duckdb and numpy are loaded by the calls that need
them, not on import. A packet size is an Ethernet frame incl. FCS (`frame`); `pkt` counts the
bytes the NIC DMAs (docs/units.md)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf import outputs
from pcieperf._keywords import forwards
from pcieperf.dpdk.api import forwarding_config, link_and_config, packet_size
from pcieperf.errors import UsageError, param, require_new_file
from pcieperf.iommu.api import inputs
from pcieperf.iommu.profiles import DEFAULT_PLATFORM
from pcieperf.measure.records import open_store, parsed_counters
from pcieperf.net.wire import FCS_BYTES, frames_text
from pcieperf.pcie.api import make_link
from pcieperf.results import Column, Report, Table
from pcieperf.text import plural
from pcieperf.units import decimal, parse_rate

if TYPE_CHECKING:
    from pcieperf.dpdk.testpmd import StoredRun
    from pcieperf.measure.explain import Explanation
    from pcieperf.measure.stacks import StackCounters
    from pcieperf.measure.store import Store


@forwards(inputs)
def iommu_fit(
    *,
    counters: str | Path,
    pps: float | str,
    counters_format: str | None = None,
    stack: str | None = None,
    out: str | Path | None = None,
    name: str = "fitted",
    force: bool = False,
    **options: object,
) -> Report:
    """Fit the host's IOTLB reach and walk throughput to its measured IOTLB counters (pcm-iio)
    at the forwarding rate `pps` (`pcieperf iommu fit`); with `out`, write the fitted platform
    profile there for `platform=`. `options` describe the port as `pp.iommu.sim` takes them."""
    from pcieperf.iommu import profiles as platforms
    from pcieperf.measure import iommu_fit as fitting

    if out:
        require_new_file(out, force)
    rate = parse_rate(str(pps))
    given = inputs(**options)  # type: ignore[arg-type]  # `forwards` checked each
    result = fitting.fit(
        stack_counters(counters, stack=stack, format=counters_format),
        pps=rate,
        setup=given.setup,
        traffic=given.traffic,
        platform=given.platform,
        base=given.platform_profile,
        name=name,
        packets=given.packets,
    )
    payload = result.as_dict()
    if out:
        outputs.write_text(out, platforms.platform_toml(result.profile), force)
        payload["file"] = str(out)
    return Report(payload, fitting.fit_text(result, str(out) if out else None))


IMPORT_COLUMNS = (
    Column("system", "system"),
    Column("files", "files"),
    Column("rows", "rows"),
    Column("missing", "missing"),
)


def data_import(
    dirs: Iterable[str | Path],
    *,
    force: bool = False,
    db: str | Path | None = None,
    progress: Callable[[list[Any]], Iterable[Any]] | None = None,
) -> Table:
    """Import pcie-bench result directories into the store, all or nothing (`pcieperf data
    import`); `force` replaces systems already there."""
    from pcieperf.pciebench.bench import parse_result_dir

    # Parsed before the store is opened: a bad folder must not leave a new store file behind.
    paths = [Path(d) for d in dirs]
    parsed = [parse_result_dir(p) for p in (progress or (lambda items: items))(paths)]
    with open_store(db, write=True) as store:
        store.import_parsed(parsed, force=force)
        path = store.path
    rows = [
        {
            "system": p.info.name,
            "files": len(p.tables),
            "rows": sum(t.rows for t in p.tables),
            "host_facts": len(p.facts),
            "missing": p.missing,
        }
        for p in parsed
    ]
    text_rows = [r | {"missing": len(p.missing)} for r, p in zip(rows, parsed, strict=True)]
    return Table(rows, IMPORT_COLUMNS, footer=f"store: {path}", text_rows=text_rows)


SYSTEM_COLUMNS = (
    Column("system", "system"),
    Column("cpu", "cpu"),
    Column("numa", "numa dev-mem-cpu"),
    Column("iommu", "iommu"),
    Column("bw_rows", "bw rows"),
    Column("lat_rows", "lat rows"),
)


def data_ls(*, db: str | Path | None = None) -> Table | Report:
    """The systems in the store, one row each (`pcieperf data ls`)."""
    with open_store(db) as store:
        systems = store.systems()
    rows = [{k: (str(v) if k == "imported_at" else v) for k, v in s.items()} for s in systems]
    if not rows:
        return Report(rows, "the store is empty; run `pcieperf data import DIR...`")
    numa = ("numa_device", "numa_memory", "numa_cpu")
    text_rows = [r | {"numa": "-".join(str(r[k]) for k in numa)} for r in rows]
    return Table(rows, SYSTEM_COLUMNS, text_rows=text_rows, optional=("lat_rows", "bw_rows", "cpu"))


_SHOWN = ("file", "pattern", "cache", "host_offset")
SHOWN = {  # the columns `data show` prints, per kind of test
    "bw": (*_SHOWN, "dev_offset", "window_bytes", "size_bytes", "bw_gbps"),
    "lat": (*_SHOWN, "window_bytes", "size_bytes", "med_ns", "p999_ns"),
}
HEADERS = {
    "host_offset": "host off",
    "dev_offset": "dev off",
    "window_bytes": "window B",
    "size_bytes": "size B",
    "bw_gbps": "Gb/s",
    "med_ns": "median ns",
    "p999_ns": "p99.9 ns",
}
"""The headers of `data show`'s columns whose JSON key is not one already."""


def data_show(
    system: str, *, test: str, file: str | None = None, db: str | Path | None = None
) -> Table:
    """The measured rows of one system (a name or a unique part of it) and pcie-bench test
    (`pcieperf data show`)."""
    from pcieperf.pciebench import bench
    from pcieperf.results import is_numpy_scalar, json_default

    test = bench.canonical_test(test)
    kind = bench.TESTS[test].kind
    with open_store(db) as store:
        system = store.resolve(system)
        found = store.rows(kind, system, test=test, file=file)
    keys = [k for k in found if k != "system"]
    rows = [
        {k: json_default(v) if is_numpy_scalar(v := found[k][i]) else v for k in keys}
        for i in range(found["test"].size)
    ]
    columns = [Column(k, HEADERS.get(k, k)) for k in SHOWN[kind]]
    return Table(rows, columns, title=f"{system} {test}", optional=("pattern", "cache"))


# --- explain -------------------------------------------------------------------------------------


def stored_run(run: int, db: str | Path | None = None, given: tuple[str, ...] = ()) -> StoredRun:
    """The stored `dpdk run` numbered `run` (store `db`, default the user's), whose rate,
    packet size and batch histogram replace the options in `given` (so none may be given)."""
    if given:
        raise UsageError(
            f"{param('from_run')} measures what {', '.join(given)} would set; give one"
        )
    with open_store(db) as store:
        return store.dpdk_run(run)


@dataclass(frozen=True)
class Explained(Table):
    """`explain`'s result: the table, and the explanation itself (for its plot)."""

    explanation: Explanation = field(kw_only=True)


EXPLAIN_COLUMNS = (
    Column("metric", "metric"),
    Column("measured", "measured"),
    Column("predicted", "predicted"),
    Column("ratio", "ratio"),
    Column("status", "status"),
)


def stack_counters(
    counters: str | Path | None = None,
    import_id: int | None = None,
    *,
    db: str | Path | None = None,
    stack: str | None = None,
    format: str | None = None,
    delimiter: str | None = None,
    interval: float | None = None,
    lenient: bool = False,
) -> StackCounters:
    """The counters of the stack to explain or fit (`stacks.pick_stack`: the one asked for,
    else the only one with traffic), from a counter file or from `import_id`, a set imported
    into the store `db`: summed by the store per metric and time, so that only that stack's
    sums are read into memory. A file is imported, streamed, into a store of its own in a
    temporary folder, removed after."""
    if import_id is not None:
        if counters is not None:
            raise UsageError(
                f"{param('counters')} {counters} and {param('import_id')} {import_id} each "
                "give the counters; give one"
            )
        with open_store(db) as store:
            return _chosen_stack(store, import_id, stack)
    if counters is None:
        raise UsageError("give the counters: --counters FILE, or --import N (`counters ls`)")
    file = Path(counters)
    options = (format, lenient, delimiter, interval)
    with (
        tempfile.TemporaryDirectory(prefix="pcieperf-counters-") as folder,
        open_store(Path(folder) / "counters.duckdb", write=True) as store,
    ):
        new_id, _ = store.import_counters(file, lambda sink: parsed_counters(file, *options, sink))
        return _chosen_stack(store, new_id, stack, os.fspath(counters))


def _chosen_stack(
    store: Store, import_id: int, stack: str | None, file: str | None = None
) -> StackCounters:
    """The counters of the stack `pick_stack` chooses among an import's (which carry traffic
    summed up only where that decides), read alone; `file` names them (default: the file
    imported)."""
    from pcieperf.measure.stacks import needs_traffic, pick_stack, stack_key

    stored, found = store.counter_stacks(import_id)
    stacks = {stack_key(*pair): pair for pair in found}
    known = sorted(stacks)
    busy: list[str] = []
    if needs_traffic(known, stack):
        _, moving = store.counter_stacks(import_id, traffic=True)
        busy = sorted(stack_key(*pair) for pair in moving)
    chosen = pick_stack(known, busy, stack, file or stored)
    return store.stack_counters(import_id, stacks[chosen], file)


@forwards(forwarding_config, make_link, skip=("pkt",))
def explain(
    *,
    counters: str | Path | None = None,
    import_id: int | None = None,
    format: str | None = None,  # the CLI's --counters-format
    stack: str | None = None,
    delimiter: str | None = None,
    interval: float | None = None,
    lenient: bool = False,
    pps: float | str | None = None,
    frame: int | None = None,
    pkt: int | None = None,
    from_run: int | None = None,
    db: str | Path | None = None,
    page: str | None = None,
    rxd: int = 1024,
    txd: int | None = None,
    profile: str | None = None,
    fit_iommu: bool = False,
    fit_out: str | Path | None = None,
    force: bool = False,
    platform: str = DEFAULT_PLATFORM,
    name: str = "fitted",
    **options: object,
) -> Explained:
    """Measured PCIe counters (a pcm-iio, perf or VTune file, or `import_id`: a set imported
    into the store `db`) against the DPDK forwarding model
    at `pps` with a `frame` (or `pkt` bytes DMA'd), or at a stored run's rate and histogram
    (`from_run`): measured, predicted and ratio per metric, a diagnosis for each beyond 15 %
    (`pcieperf explain`, docs/explain.md). IOTLB misses are predicted for `page`, or without
    it for the page size the file's IOTLB misses imply (`page_from` says which decided).
    `fit_iommu` (or `fit_out`, a profile file to write) adds `iommu fit` on the same
    counters; `options` are the forwarding setup's and the link's keywords (pcieperf.dpdk.api)."""
    from pcieperf.dpdk.port import PortSetup, parse_page
    from pcieperf.measure import explain as model
    from pcieperf.nic.profile import DEFAULT_PROFILE, load_profile

    if fit_out:
        require_new_file(fit_out, force)
    size = packet_size(frame, pkt)
    if from_run is None and (pps is None or size is None):
        raise UsageError(
            f"explaining counters needs {param('pps')} and {param('frame')} (the rate and "
            f"packet size they were measured at), or {param('from_run')} RUN"
        )
    if from_run is not None:
        size_name = f"{param('frame')}/{param('pkt')}"
        given = tuple(o for o, v in ((param("pps"), pps), (size_name, size)) if v is not None)
        run = stored_run(from_run, db, given)
        pps, size, options = run.rx_pps, run.pkt, options | {"batch_hist": run.batch_hist}
    link, cfg = link_and_config(size, **options)
    measured = stack_counters(
        counters,
        import_id,
        db=db,
        stack=stack,
        format=format,
        delimiter=delimiter,
        interval=interval,
        lenient=lenient,
    )
    txd = rxd if txd is None else txd
    setup = PortSetup(rxd=rxd, txd=txd) if page is None else PortSetup(parse_page(page), rxd, txd)
    result = model.explain(
        measured,
        cfg,
        link,
        parse_rate(str(pps)),
        profile=load_profile(profile or DEFAULT_PROFILE),
        iommu_setup=setup,
        page_from_counters=page is None,
    )
    data = _explanation_json(result)
    fit_lines = ""
    if fit_iommu or fit_out:
        from pcieperf.iommu.profiles import platform_toml
        from pcieperf.measure import iommu_fit

        fitted = iommu_fit.fit_explained(
            measured, result, cfg, result.port, platform=platform, name=name
        )
        data["iommu_fit"] = fitted.as_dict()
        if fit_out:
            outputs.write_text(fit_out, platform_toml(fitted.profile), force)
            data["iommu_fit"]["file"] = str(fit_out)
        fit_lines = iommu_fit.fit_text(fitted, str(fit_out) if fit_out else None)
    return _explained(data, result, fit_lines)


def _explanation_json(result: Explanation) -> dict[str, Any]:
    """The JSON of `explain`: the setup, the verdict, each metric and the rate finding."""
    from pcieperf.measure.explain import TOLERANCE

    rate = result.rate
    return {
        "file": result.file,
        "source": result.source,
        "stack": result.stack,
        "pps": result.pps,
        "pkt": result.pkt,
        "frame_bytes": result.pkt + FCS_BYTES,
        "mean_batch": result.mean_batch,
        "tolerance": TOLERANCE,
        "cause": result.cause,
        "rate_mistake": bool(rate and rate.mistake),
        "implied_pps": rate.implied_pps if rate else None,
        "agreement": result.agreement,
        "deviating": result.deviating,
        "metrics": [v.as_dict() for v in result.verdicts],
        "rate": rate.as_dict() if rate else None,
        "page": result.page.page,
        "page_from": result.page.source,
        "page_evidence": result.page.as_dict() or None,
    }


def _explained(data: dict[str, Any], result: Explanation, fit_lines: str) -> Explained:
    """`explain`'s text: a likely input mistake first, then a table at the rate the diagnosis
    uses (the implied one when it names the rate), then the diagnoses and any IOMMU fit."""
    from pcieperf.measure.explain import rate_text

    rate = data["rate"] if data["rate"] and data["rate"]["named"] else None
    at = rate_text(data["pps"])
    if rate:
        at = f"{rate_text(rate['implied_pps'])} as the counters imply ({at} given)"
    head = (
        f"{data['file']} ({data['source']}), {data['stack']}: forwarding at {at}, "
        f"{frames_text(data['pkt'])}, mean batch {data['mean_batch']:.2f}"
    )
    by_metric = {m["metric"]: m["diagnosis"] for m in data["metrics"]}
    if rate:
        outliers = [f"- {name}: {by_metric[name]}" for name in rate["outliers"]]
        many = f"{_deviate(len(outliers))} beyond 15 % at that rate:"
        lines = [f"cause: {rate['rule']}", *([many] if outliers else []), *outliers]
        title = "\n".join(filter(None, [rate["headline"], head, result.page.text()]))
    else:
        notes = [f"- {name}: {text}" for name, text in by_metric.items() if text]
        verdict = (
            "every metric agrees with the model within 15 %"
            if data["agreement"]
            else f"{_deviate(len(notes))} beyond 15 %:"
        )
        lines, title = [verdict, *notes], f"{head}\n{result.page.text()}"
    return Explained(
        data,
        EXPLAIN_COLUMNS,
        title=title,
        footer="\n".join([*lines, *filter(None, [fit_lines])]),
        text_rows=[_shown(m) for m in (rate["metrics"] if rate else data["metrics"])],
        explanation=result,
    )


def _deviate(count: int) -> str:
    """How many metrics deviate, in words: "1 metric deviates", "2 metrics deviate"."""
    return f"{plural(count, 'metric')} deviate{'s' if count == 1 else ''}"


def _shown(metric: dict[str, Any]) -> dict[str, Any]:
    """One metric as the text table shows it: per packet, with its unit."""
    per_pkt = "B/pkt" if metric["unit"] == "B/s" else "/pkt"
    ratio = metric["ratio"]  # None: none predicted, some measured
    return {
        "metric": metric["metric"],
        "measured": f"{decimal(metric['measured_per_pkt'], 3)} {per_pkt}",
        "predicted": f"{decimal(metric['predicted_per_pkt'], 3)} {per_pkt}",
        "ratio": "-" if ratio is None else f"{ratio:.2f}",
        "status": metric["status"] + (" (noise)" if ratio is None else ""),
    }

"""The public functions that read measurements (counters, the store): `pp.iommu.fit` (the IOMMU
fitted to a host's IOTLB counters) and `pp.data_import`, `pp.data_ls`, `pp.data_show` (pcie-bench
results in the store). Keyword arguments are named as the CLI's options; duckdb and numpy are
loaded by the calls that need them, not on import."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pcieperf.errors import require_new_file
from pcieperf.results import Column, Report, Table
from pcieperf.units import parse_rate

if TYPE_CHECKING:
    from pcieperf.measure.store import Store


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
    from pcieperf.dpdk import api as dpdk_api
    from pcieperf.dpdk import platforms
    from pcieperf.measure import counters as counter_files
    from pcieperf.measure import iommu_fit as fitting

    if out:
        require_new_file(out, force)
    rate = parse_rate(pps) if isinstance(pps, str) else float(pps)
    given = dpdk_api.inputs(**options)  # type: ignore[arg-type]
    result = fitting.fit(
        counter_files.parse(Path(counters), counters_format),
        stack=stack,
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
        Path(out).write_text(platforms.platform_toml(result.profile), encoding="utf-8")
        payload["file"] = str(out)
    return Report(payload, fitting.fit_text(result, str(out) if out else None))


def _store(db: str | Path | None, write: bool = False) -> Store:
    """The store at `db` (default: the user's); only `write` creates it."""
    from pcieperf.measure.store import Store  # duckdb: only for the calls that use the store

    return Store(Path(db) if db else None, create=write)


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
    progress: Callable[[list], Iterable] | None = None,
) -> Table:
    """Import pcie-bench result directories into the store, all or nothing (`pcieperf data
    import`); `force` replaces systems already there."""
    from pcieperf.pciebench.bench import parse_result_dir

    # Parsed before the store is opened: a bad folder must not leave a new store file behind.
    paths = [Path(d) for d in dirs]
    parsed = [parse_result_dir(p) for p in (progress or (lambda items: items))(paths)]
    with _store(db, write=True) as store:
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
    text_rows = [r | {"missing": len(r["missing"])} for r in rows]
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
    with _store(db) as store:
        systems = store.systems()
    rows = [{k: (str(v) if k == "imported_at" else v) for k, v in s.items()} for s in systems]
    if not rows:
        return Report(rows, "the store is empty; run `pcieperf data import DIR...`")
    numa = ("numa_device", "numa_memory", "numa_cpu")
    text_rows = [r | {"numa": "-".join(str(r[k]) for k in numa)} for r in rows]
    return Table(rows, SYSTEM_COLUMNS, text_rows=text_rows)


_SHOWN = ("file", "pattern", "cache", "host_offset")
SHOWN = {  # the columns `data show` prints, per kind of test
    "bw": (*_SHOWN, "dev_offset", "window_bytes", "size_bytes", "bw_gbps"),
    "lat": (*_SHOWN, "window_bytes", "size_bytes", "med_ns", "p999_ns"),
}


def data_show(
    system: str, *, test: str, file: str | None = None, db: str | Path | None = None
) -> Table:
    """The measured rows of one system (a name or a unique part of it) and pcie-bench test
    (`pcieperf data show`)."""
    from pcieperf.pciebench import bench
    from pcieperf.results import is_numpy_scalar, json_default

    test = bench.canonical_test(test)
    kind = bench.TESTS[test].kind
    with _store(db) as store:
        system = store.resolve(system)
        found = store.rows(kind, system, test=test, file=file)
    keys = [k for k in found if k != "system"]
    rows = [
        {k: json_default(v) if is_numpy_scalar(v := found[k][i]) else v for k in keys}
        for i in range(found["test"].size)
    ]
    return Table(rows, [Column(k, k) for k in SHOWN[kind]], title=f"{system} {test}")

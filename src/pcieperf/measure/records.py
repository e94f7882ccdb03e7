"""The public functions of what is measured and recorded: counter files (`pp.read_counters`,
`pp.import_counters`, `pp.counter_imports`) and testpmd runs (`pp.dpdk_run`, `pp.dpdk_runs`):
keyword arguments named as the `counters` and `dpdk` commands' options, results that print as
the CLI prints them (pcieperf.results). `db` is the store file (`--db`; default: the user's, or
$PCIEPERF_DB); `pp.store.open(db)` reads the whole store as DataFrames."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf.net.wire import frames_text
from pcieperf.results import Column, Report, Table
from pcieperf.units import scaled

if TYPE_CHECKING:
    import pandas

    from pcieperf.dpdk.testpmd import RunConfig, RunResult
    from pcieperf.measure.counters.samples import Samples, Sink
    from pcieperf.measure.store import Store

COUNTER_COLUMNS = ("t_s", "source", "socket", "stack", "part", "metric", "value", "unit")
"""The columns of `read_counters`: one row per sample (`value` in `unit`: B/s or 1/s)."""


def open_store(db: str | os.PathLike[str] | None, *, write: bool = False) -> Store:
    """The store `db` names (None: the user's), duckdb loaded only now; only writers create
    it (a query must not leave a file behind)."""
    from pcieperf.measure.store import Store  # duckdb: only where the store is used

    return Store(Path(db) if db else None, create=write)


def parsed_counters(
    file: str | os.PathLike[str],
    format: str | None,
    lenient: bool,
    delimiter: str | None,
    interval: float | None,
    sink: Sink | None = None,
) -> Samples:
    """A counter file parsed by its tool's importer (`measure.counters.parse`), its samples
    handed to `sink` chunk by chunk where one is given."""
    from pcieperf.measure import counters

    return counters.parse(
        Path(file), format, lenient=lenient, delimiter=delimiter, interval_s=interval, sink=sink
    )


def read_counters(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    lenient: bool = False,
    delimiter: str | None = None,
    interval: float | None = None,
) -> pandas.DataFrame:
    """A pcm-iio, perf iostat, perf stat or VTune file (`format`: its tool, default detected)
    as a tidy DataFrame, one row per sample: `t_s` (seconds from the first sample), `source`,
    `socket`, `stack` (IIO stack or root port), `part`, `metric` (`inbound_write`, ...),
    `value` and its `unit` (B/s or 1/s). Nothing is stored (see `import_counters`)."""
    import pandas

    samples = parsed_counters(path, format, lenient, delimiter, interval)
    columns = {name: getattr(samples, name) for name in COUNTER_COLUMNS if name != "source"}
    frame = pandas.DataFrame({"source": samples.source, **columns}, columns=COUNTER_COLUMNS)
    frame.attrs = {
        "file": samples.file,
        "skipped_columns": samples.skipped_columns,
        "notes": samples.notes,
    }
    return frame


def import_counters(
    file: str | os.PathLike[str],
    *,
    format: str | None = None,
    delimiter: str | None = None,
    interval: float | None = None,
    lenient: bool = False,
    force: bool = False,
    db: str | os.PathLike[str] | None = None,
) -> Report:
    """Import a counter file into the store, all or nothing (`pcieperf counters import`),
    streamed: a file of any size in bounded memory; `force` replaces an earlier import of the
    same file."""
    with open_store(db, write=True) as store:
        import_id, samples = store.import_counters(
            Path(file),
            lambda sink: parsed_counters(file, format, lenient, delimiter, interval, sink),
            force=force,
        )
    path, metrics = os.fspath(file), samples.metrics()
    data = {
        "import_id": import_id,
        "file": path,
        "source": samples.source,
        "samples": len(samples),
        "metrics": metrics,
        "skipped_columns": samples.skipped_columns,
        "notes": samples.notes,
    }
    skipped = samples.skipped_columns
    return Report(
        data,
        f"import {import_id}: {len(samples)} samples of {', '.join(metrics)} from "
        f"{path}"
        + (f" (skipped columns: {', '.join(skipped)})" if skipped else "")
        + "".join(f"\nnote: {note}" for note in samples.notes),
    )


def counter_imports(*, db: str | os.PathLike[str] | None = None) -> Table:
    """The counter files imported into the store (`pcieperf counters ls`)."""
    with open_store(db) as store:
        rows = store.counter_imports()
    return Table(
        rows,
        IMPORT_COLUMNS,
        optional=("metrics",),
        empty="no counter files imported yet; `pcieperf counters import FILE` stores one",
    )


def counter_show(import_id: int, *, db: str | os.PathLike[str] | None = None) -> Table:
    """One counter import, summed up per socket, stack, part and metric: samples, mean, min
    and max (`pcieperf counters show N`)."""
    with open_store(db) as store:
        rows = store.counter_summary(import_id)
    scaled_rows = [
        r | {k: _per_second(r[k], r["unit"]) for k in ("mean", "min", "max")} for r in rows
    ]
    return Table(
        rows,
        SUMMARY_COLUMNS,
        title=f"counter import {import_id}",
        text_rows=scaled_rows,
        optional=("samples", "socket", "min", "stack"),
    )


def _per_second(value: float, unit: str) -> str:
    """A counter's rate with its unit, scaled (1.19 GB/s, 190 /s)."""
    return scaled(value, unit.removeprefix("1"))


def counter_remove(import_id: int, *, db: str | os.PathLike[str] | None = None) -> Report:
    """Delete one counter import and its samples from the store (`pcieperf counters rm N`)."""
    with open_store(db, write=True) as store:
        store.remove_counter_import(import_id)
    return Report({"removed": import_id}, f"removed counter import {import_id}", confirms=True)


SUMMARY_COLUMNS = (
    Column("socket", "socket"),
    Column("stack", "stack"),
    Column("part", "part"),
    Column("metric", "metric"),
    Column("samples", "samples"),
    Column("mean", "mean"),
    Column("min", "min"),
    Column("max", "max"),
)


IMPORT_COLUMNS = (
    Column("import_id", "id"),
    Column("source", "source"),
    Column("samples", "samples"),
    Column("file", "file"),
    Column("metrics", "metrics"),
)


def dpdk_run(
    *,
    pcap: str | os.PathLike[str] | None = None,
    seconds: float = 3.0,
    null_size: int = 64,
    testpmd_args: Sequence[str] = (),
    db: str | os.PathLike[str] | None = None,
) -> Table:
    """Run dpdk-testpmd on a virtual port (net_null packets of `null_size` bytes, or `pcap`
    replayed) for at least `seconds` and until it has measured a rate, store its rates and Rx
    burst histogram (`pcieperf dpdk run`), with a progress bar where one is seen."""
    from pcieperf.dpdk import testpmd

    cfg = testpmd.RunConfig(
        mode="pcap" if pcap else "null",
        pcap=Path(pcap) if pcap else None,
        seconds=seconds,
        null_size=null_size,
        extra_args=tuple(testpmd_args),
    )
    result = _run_with_progress(cfg)
    with open_store(db, write=True) as store:
        run_id = store.add_dpdk_run(result)
    data = _run_summary(run_id, result)
    return Table(
        data,
        RUN_PORT_COLUMNS,
        title=f"run {run_id}: {result.version}, {cfg.mode}, {result.wall_s:.1f} s"
        f"{' (stopped early)' if result.interrupted else ''}",
        footer=f"Rx {data['rx_pps'] / 1e6:.3f} Mpps of "
        f"{frames_text(round(data['pkt_bytes'], 1))}, mean "
        f"batch {data['mean_batch']:.2f}; predict with `pcieperf dpdk-fwd --from-run {run_id}`",
        text_rows=[
            p | {"rx_mpps": p["rx_pps"] / 1e6, "tx_mpps": p["tx_pps"] / 1e6} for p in data["ports"]
        ],
    )


RUN_PORT_COLUMNS = (
    Column("port", "port"),
    Column("rx_mpps", "Rx Mpps"),
    Column("tx_mpps", "Tx Mpps"),
    Column("rx_packets", "Rx packets"),
    Column("rx_bursts", "Rx bursts"),
)


def _run_with_progress(cfg: RunConfig) -> RunResult:
    """`testpmd.run(cfg)` under a progress bar: full once --seconds have passed; the blocks say
    why a run may go on (it waits for a rate)."""
    from pcieperf import progress
    from pcieperf.dpdk import testpmd

    shape = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s{postfix}"
    with progress.bar(cfg.seconds, "testpmd", unit="s", bar_format=shape) as bar:

        def tick(elapsed: float, blocks: int) -> None:
            bar.update(min(elapsed, cfg.seconds) - bar.n)
            bar.set_postfix_str(f"statistics blocks: {blocks}")

        return testpmd.run(cfg, tick)


def _run_summary(run_id: int, result: RunResult) -> dict[str, Any]:
    """The JSON of `dpdk run`."""
    from pcieperf.dpdk.forwarding import mean_tx_batch

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
        "mean_batch": mean_tx_batch(hist),
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


RUNS_COLUMNS = (
    Column("run_id", "id"),
    Column("started", "started"),
    Column("mode", "mode"),
    Column("source", "source"),
    Column("extra_args", "args"),
    Column("rx_mpps", "Rx Mpps"),
    Column("pkt_bytes", "pkt B"),
    Column("version", "DPDK"),
)


def dpdk_runs(*, db: str | os.PathLike[str] | None = None) -> Table:
    """The testpmd runs stored, oldest first (`pcieperf dpdk runs`)."""
    with open_store(db) as store:
        rows = store.dpdk_runs()
    text = [r | {"started": str(r["started"])[:19], "rx_mpps": r["rx_pps"] / 1e6} for r in rows]
    return Table(
        rows,
        RUNS_COLUMNS,
        text_rows=text,
        optional=("extra_args", "started", "source", "mode"),
        empty="no testpmd runs stored yet; `pcieperf dpdk run` makes one",
    )

"""The public functions of capture runs: `pp.capture_run` (measure one and store it),
`pp.capture_runs` (the stored ones) and `pp.capture_show` (one, with the study's four
essentials judged from what it measured). Keyword arguments are named as the `capture`
commands' options; `db` is the store file (`--db`; default the user's, or $PCIEPERF_DB)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf.capture import stored, threads, tools
from pcieperf.capture.lock import WAIT_S
from pcieperf.capture.machine import Machine
from pcieperf.capture.placement import PROBES, ROUND_TRIP
from pcieperf.capture.run import CaptureConfig, CaptureResult
from pcieperf.measure.records import open_store
from pcieperf.net.trace.statistics import stats_files
from pcieperf.net.wire import overhead_bytes
from pcieperf.results import Column, Report, Table, finite_or_none

if TYPE_CHECKING:
    from pcieperf.capture.calibration import Meta


def capture_run(
    *,
    frame: int | None = None,
    pcap: str | os.PathLike[str] | None = None,
    seconds: float = 3.0,
    lcores: int = 1,
    tool: str = tools.TOOLS[0].name,
    format: str | None = None,
    snaplen: int | None = None,
    ring_size: int = 2048,
    sink: str = "null",
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    huge_dir: str | os.PathLike[str] | None = None,
    wait: float = WAIT_S,
    port: str | None = None,
    direction: str = "both",
    queue: int | None = None,
    filter: str | None = None,
    db: str | os.PathLike[str] | None = None,
) -> Report:
    """Run dpdk-testpmd forwarding `frame`-byte frames (FCS included; None: 64) on net_null, or
    replaying `pcap`, or what a real `port` receives (a PCI address bound for DPDK, or a
    network interface through net_af_packet), on `lcores` forwarding lcores: first alone, then
    with the capture `tool` copying `direction` (both, rx, tx) of one `queue` (None: all)
    through its capture `filter`, writing `format` (default: the tool's own) into the `sink`
    (null, tmpfs, or `out` for a file); store what each thread did per packet and what capture
    cost the forwarding (`pcieperf capture run`). One
    capture run at a time on a machine: this one waits up to `wait` seconds for another."""
    cfg = CaptureConfig(
        frame=frame,
        pcap=Path(pcap) if pcap else None,
        seconds=seconds,
        fwd_lcores=lcores,
        tool=tool,
        format=format,
        snaplen=snaplen,
        ring_size=ring_size,
        sink="file" if out is not None and sink == "null" else sink,
        out=Path(out) if out is not None else None,
        force=force,
        huge_dir=Path(huge_dir) if huge_dir else None,
        wait=wait,
        port=port,
        direction=direction,
        queue=queue,
        filter=filter,
    )
    result = _run_with_progress(cfg)
    row = run_row(result)
    with open_store(db, write=True) as store:
        (kept,) = stored.runs_of(store, [stored.add_run(store, row)])
    return _shown(kept)


def _run_with_progress(cfg: CaptureConfig) -> CaptureResult:
    """`run.run(cfg)` under a progress bar: seconds so far and the phase."""
    import time

    from pcieperf import progress
    from pcieperf.capture import run

    shape = "{desc}: {n:.1f} s{postfix}"
    start = time.monotonic()
    with progress.bar(None, "capture run", unit="s", bar_format=shape) as bar:

        def tick(phase: str, _: float) -> None:
            bar.update(time.monotonic() - start - bar.n)
            bar.set_postfix_str(phase)

        return run.run(cfg, tick)


def run_row(result: CaptureResult) -> dict[str, Any]:
    """A capture run as the store keeps it (`capture.stored.RUN_COLUMNS`)."""
    cfg, tool, stats = result.config, result.tool, result.file_stats
    written = tool.counts.written
    frame = _frame_bytes(result)
    packets = stats.get("packets")
    row = {
        "dpdk_version": result.version,
        "tool": cfg.tool,
        "port": cfg.mode,
        "device": cfg.port,
        "queue": cfg.queue,
        "capture_filter": cfg.filter,
        "frame_bytes": frame,
        "fwd_lcores": cfg.fwd_lcores,
        "direction": cfg.direction,
        "copies_per_packet": cfg.copies_per_packet,
        "format": cfg.file_format,
        "snaplen": cfg.snaplen or 0,
        "ring_size": cfg.ring_size,
        "pool_mbufs": cfg.capture_tool.pool_mbufs(cfg.ring_size),
        "llc_bytes": threads.llc_bytes(),
        "cache_bytes": result.cache_bytes,
        "sink": cfg.sink,
        "seconds": cfg.seconds,
        "fwd_pps_no_capture": result.baseline.pps,
        "fwd_pps": result.during.pps,
        "fwd_cpu_ns_no_capture": result.baseline.cpu_ns_per_packet,
        "fwd_cpu_ns": result.during.cpu_ns_per_packet,
        "fwd_cpu_share_no_capture": result.baseline.cpu_share,
        "fwd_cpu_share": result.during.cpu_share,
        "fwd_cpu_ns_spread_no_capture": finite_or_none(result.baseline.cpu_ns_spread),
        "fwd_cpu_ns_spread": finite_or_none(result.during.cpu_ns_spread),
        "steal_cpu_share": result.during.steal_share,
        "round_trip_ns_no_capture": finite_or_none(result.round_trip_ns[0]),
        "round_trip_ns": finite_or_none(result.round_trip_ns[1]),
        "copies": tool.counts.received,
        "copies_counted": cfg.capture_tool.counts_drops,  # else inferred from the rate
        "dropped": tool.counts.dropped,
        "written": written,
        "loss": tool.counts.dropped / tool.counts.received if tool.counts.received else 0.0,
        "file_packets": packets,
        "capture_pps": written / tool.wall_s,
        "capture_gbps": written / tool.wall_s * (frame + overhead_bytes()) * 8 / 1e9,
        "capture_cpu_ns": tool.cpu_ns / written if written else math.nan,
        "capture_cpu_share": tool.cpu_ns / 1e9 / tool.wall_s,
        "capture_sleeps_per_s": tool.sleeps / tool.wall_s,
        "bytes_per_record": tool.io.bytes / written if written else math.nan,
        "write_calls_per_packet": tool.io.calls / written if written else math.nan,
        "packets_per_timestamp": stats.get("packets_per_timestamp"),
        "inversions": stats.get("out_of_order"),
        "harness_cpu_share": tool.harness_cpu_share,
        "run_queue_threads": finite_or_none(tool.run_queue),
        "capture_wait_ns": tool.waits.ns / tool.waits.timeslices if tool.waits.timeslices else None,
        "capture_wait_share": tool.waits.ns / 1e9 / tool.wall_s,
        "cross_cpu_slowdown_before": result.cross_cpu_slowdown[0],
        "cross_cpu_slowdown_after": result.cross_cpu_slowdown[1],
        "crashed": result.crashed,
        "commands": json.dumps(result.commands),
        "outputs": json.dumps(result.outputs),
        **Machine.here().row(),
    }
    return row | {"starved": starved_why(row)}


def _frame_bytes(result: CaptureResult) -> float:
    """Mean frame bytes, FCS included: the configured net_null frame, a replayed capture's
    mean wire length plus the FCS its records lack, or the bytes a real port received per
    packet as testpmd counted them, without FCS (NaN: it received none)."""
    from pcieperf.dpdk.testpmd import parse_output
    from pcieperf.net.wire import FCS_BYTES

    cfg = result.config
    if cfg.port is not None:
        _, ports = parse_output(result.outputs["testpmd"])
        packets = sum(p.nic_rx_packets for p in ports)
        return sum(p.nic_rx_bytes for p in ports) / packets + FCS_BYTES if packets else math.nan
    if cfg.pcap is None:
        return float(cfg.null_frame)
    (stats,) = stats_files([cfg.pcap])
    mean_bytes: float = stats["bytes_wire"] / stats["packets"] + FCS_BYTES
    return mean_bytes


CRASH_NOTE = "testpmd crashed when the tool detached (a pdump race, fixed in DPDK 25.11)"

RUNS_COLUMNS = (
    Column("run_id", "id"),
    Column("started", "started"),
    Column("tool", "tool"),
    Column("frame_bytes", "frame B"),
    Column("fwd_lcores", "lcores"),
    Column("sink", "sink"),
    Column("fwd_mpps_no_capture", "fwd Mpps alone"),
    Column("fwd_mpps", "fwd Mpps capturing"),
    Column("capture_mpps", "written Mpps"),
    Column("loss", "loss"),
    Column("fwd_cpu_ns", "fwd ns/pkt"),
    Column("capture_cpu_ns", "capture ns/pkt"),
)


def capture_runs(*, db: str | os.PathLike[str] | None = None) -> Table:
    """The capture runs stored, oldest first (`pcieperf capture runs`); `.to_frame()` gives
    them as a DataFrame, one row per run."""
    rows = stored.read_runs(db=db)
    return Table(
        rows,
        RUNS_COLUMNS,
        text_rows=[_text_row(r) for r in rows],
        optional=("started", "fwd_cpu_ns", "capture_cpu_ns", "fwd_lcores", "tool"),
        empty="no capture runs stored yet; `pcieperf capture run` makes one (root, DPDK)",
    )


def _text_row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored run with rates in Mpps and its start to the second, for the table."""
    mpps = {
        "fwd_mpps_no_capture": row["fwd_pps_no_capture"] / 1e6,
        "fwd_mpps": row["fwd_pps"] / 1e6,
        "capture_mpps": row["capture_pps"] / 1e6,
    }
    return row | mpps | {"started": str(row["started"])[:19]}


def capture_show(run_id: int, *, db: str | os.PathLike[str] | None = None) -> Report:
    """One stored capture run: what it measured and the study's four essentials (timestamps,
    ordering, Rx/Tx merging, zero loss) as the run showed them (`pcieperf capture show`)."""
    (row,) = stored.read_runs([run_id], db)
    return _shown(row)


def _shown(row: dict[str, Any]) -> Report:
    """A stored run's JSON (its row, whether the machine starved it, judged from what it
    recorded, and the essentials) and its text."""
    data = row | {"starved": starved_why(row), "essentials": essentials(row)}
    return Report(data, _text(data))


def starved_why(row: dict[str, Any]) -> str:
    """Why the machine starved a run (`capture.verdicts.starved`), in one line; '' if it did
    not, or if the run recorded nothing that says so."""
    import pandas as pd

    from pcieperf.capture.verdicts import starved

    (why,) = starved(pd.DataFrame([row])).reasons
    return why


def essentials(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The study's four essentials of a capture, judged from one run: what it showed and
    whether that meets the essential (None where the run could not show it)."""
    per_stamp, inversions = row["packets_per_timestamp"], row["inversions"]
    unknown = "not measured: the sink was /dev/null (use --sink tmpfs or --out)"
    measured = "" if per_stamp is None else f"{per_stamp:.1f} packets per distinct timestamp, "
    return [
        {
            "essential": "timestamps",
            "met": False,
            "shown": measured + tools.tool(row["tool"]).stamped + ", not on arrival",
        },
        {
            "essential": "ordering",
            "met": None if inversions is None else inversions == 0,
            "shown": unknown
            if inversions is None
            else f"{inversions} time-order inversions in the file",
        },
        {
            "essential": "merging",
            "met": False,
            "shown": "Rx and Tx interleaved in copy order, not wire order",
        },
        {
            "essential": "zero_loss",
            "met": row["dropped"] == 0,
            "shown": f"{row['dropped']} of {row['copies']} copies dropped, ring full "
            f"({100 * row['loss']:.2f} %" + (")" if row["copies_counted"] else ", inferred)"),
        },
    ]


def _text(data: dict[str, Any]) -> str:
    """The run as the CLI prints it."""
    lines = [
        f"capture run {data['run_id']}: {data['dpdk_version']}, {data['tool']} -> "
        f"{data['sink']} ({data['format']}), {data['frame_bytes']:.0f} B frames, "
        f"{data['fwd_lcores']} forwarding lcore(s)"
        + (
            "; testpmd crashed when the tool detached (DPDK bug, fixed in 25.11)"
            if data["crashed"]
            else ""
        ),
        f"forwarding  alone {data['fwd_pps_no_capture'] / 1e6:.3f} Mpps, "
        f"{data['fwd_cpu_ns_no_capture']:.1f} CPU ns/pkt; capturing "
        f"{data['fwd_pps'] / 1e6:.3f} Mpps, {data['fwd_cpu_ns']:.1f} CPU ns/pkt",
        f"capture     {data['written']} written of {data['copies']} copies "
        f"({100 * data['loss']:.2f} % lost), {data['capture_pps'] / 1e6:.3f} Mpps, "
        f"{data['capture_gbps']:.2f} Gb/s",
        f"            {data['capture_cpu_ns']:.1f} CPU ns/record, "
        f"{data['write_calls_per_packet']:.4f} write calls/record, "
        f"{data['bytes_per_record']:.1f} B/record",
        *_copied_line(data),
    ]
    if data["starved"]:
        lines.append(
            f"starved     {data['starved']}: what it measured is the machine's load as much "
            "as the capture's (docs/capture.md#a-busy-machine)"
        )
    lines += _placement_line(data) + _pool_lines(data)
    lines += [
        f"  {e['essential']:<10} {_verdict(e['met']):<9} {e['shown']}" for e in data["essentials"]
    ]
    return "\n".join(lines)


def _copied_line(data: dict[str, Any]) -> list[str]:
    """What the run chose to forward and copy, where it chose: a real port, one direction,
    one queue, a filter (nothing for net_null's or a replay's every copy)."""
    chosen = []
    if data.get("device") is not None:
        chosen.append(f"port {data['device']} ({data['port']})")
    if data.get("direction", "both") != "both":
        chosen.append(f"{data['direction'].capitalize()} only")
    if data.get("queue") is not None:
        chosen.append(f"queue {data['queue']}")
    if data.get("capture_filter") is not None:
        chosen.append(f"filter {data['capture_filter']!r}")
    return [f"copied      {', '.join(chosen)}"] if chosen else []


def _placement_line(data: dict[str, Any]) -> list[str]:
    """Where the host had the two CPUs, judged first by the run's own probes on this machine
    (the in-run round trip against the one alone or, for a run stored before it, the probes
    before and after), then against the calibration's placement only where the calibration
    was made on the run's kind of machine: another CPU's limit says nothing of this one's."""
    from pcieperf.capture.calibration import load_calibration

    meta = load_calibration().meta
    trips = _finite(data, (ROUND_TRIP,))
    probes = _finite(data, PROBES)
    if trips:
        (trip,) = trips
        alone = _finite(data, ("round_trip_ns_no_capture",))
        shown = (
            "a cache line's round trip between the CPUs: "
            f"{f'{alone[0]:.0f} ns' if alone else 'no answer'} alone, {trip:.0f} ns while capturing"
        )
        own, judged, limit = [*alone, trip], trip, meta.placement_max_round_trip_ns
    elif probes:
        before, after = probes
        shown = f"cache lines shared by the two CPUs cost x{before:.2f} before, x{after:.2f} after"
        own, judged, limit = probes, max(probes), meta.placement_max_slowdown
    else:
        return []  # a run stored before the probes existed
    verdicts = [_own_placement(own), _calibration_placement(data, meta, judged, limit)]
    return [f"placement   {shown}: {'; '.join(v for v in verdicts if v)}"]


def _own_placement(values: list[float]) -> str:
    """The run's own verdict: its probes in one placement, or the CPUs moved meanwhile."""
    from pcieperf.capture.placement import moved

    if len(values) < 2:
        return ""
    if moved(*values):
        return (
            "the host moved the CPUs between its probes: its costs with and without capture "
            "are not comparable"
        )
    return "one placement throughout, by its own probes"


def _calibration_placement(data: dict[str, Any], meta: Meta, judged: float, limit: float) -> str:
    """The run's probe `judged` against the calibration's `limit`, where both come from one
    kind of machine."""
    if not data.get("cpu_model"):
        return "the run recorded no machine: the calibration's limit not compared"
    if (data["cpu_model"], data.get("cpus")) != (meta.cpu_model, meta.cpus):
        other = f"{meta.cpu_model or 'not recorded'}, {meta.cpus} CPUs"
        return f"the calibration's limit is another machine's ({other}): not compared"
    if not math.isfinite(limit):
        return "the calibration's runs had one placement: nothing to compare"
    if judged <= limit:
        return "the calibration's placement"
    return (
        "another placement than the calibration's: its costs per packet are not "
        "comparable (docs/capture.md#placement)"
    )


def _finite(data: dict[str, Any], keys: tuple[str, ...]) -> list[float]:
    """The values of `keys`, or none when one is missing or not finite."""
    values = [data.get(key) for key in keys]
    found = [float(v) for v in values if v is not None and math.isfinite(v)]
    return found if len(found) == len(keys) else []


def _pool_lines(data: dict[str, Any]) -> list[str]:
    """Whether the capture thread had CPU to spare (its sleeps) and how much of the copies'
    pool the cache kept (docs/capture.md, "Model"); nothing for a run stored before either."""
    from pcieperf.capture.costs import captured_bytes
    from pcieperf.capture.pool import cold_share
    from pcieperf.capture.verdicts import slept, spare

    sleeps, pool, cache = (
        data.get(k) for k in ("capture_sleeps_per_s", "pool_mbufs", "cache_bytes")
    )
    if sleeps is None or pool is None or cache is None:
        return []
    if spare(sleeps, data["loss"]):
        had = "had CPU to spare"
    elif slept(sleeps):
        had = f"lost {100 * data['loss']:.2f} % of its copies all the same: it woke too late"
    else:
        had = "never found its ring empty for long"
    cold = float(cold_share(pool, captured_bytes(data["frame_bytes"], data["snaplen"]), cache))
    return [
        f"sleeps      the capture thread slept {sleeps:.1f} times/s: it {had}",
        f"pool        {pool} mbufs in a {cache / 2**20:.1f} MiB cache (probed): "
        f"{100 * cold:.0f} % of a copy's lines cold when its mbuf comes round again",
    ]


def _verdict(met: bool | None) -> str:
    """An essential's verdict in a word."""
    return {True: "met", False: "not met", None: "unknown"}[met]

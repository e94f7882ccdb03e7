"""Capture runs made from known costs (the contract's columns, docs/capture.md), so that a fit
can be checked against the costs it must recover: each run is what `capture.model.solve` says
a net_null run with those costs and CPU shares would have measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcieperf.capture.costs import record_bytes
from pcieperf.capture.flow import solve
from pcieperf.capture.path import touches_bytes
from pcieperf.capture.pool import cold_bytes
from pcieperf.capture.tools import tool_of, writer_name

SIZES = (64, 128, 256, 512, 1500)
WRITERS = (("dumpcap", "pcapng"), ("dumpcap", "pcap"), ("pdump", "pcap"))
TRUE = {
    "fwd_base_ns": 7.5,
    "fwd_per_byte_ns": 0.002,
    "prod_fixed_ns": {"pcapng": 36.0, "pcap": 28.5, "pdump": 33.0},
    "prod_per_byte_ns": 0.019,
    "handoff_ns": 73.0,
    "cons_fixed_ns": {"pcapng": 107.0, "pcap": 160.0, "pdump": 240.0},
    "cons_per_byte_ns": {"null": 0.028, "tmpfs": 0.67},
    "write_call_ns": {"null": 900.0, "tmpfs": 1400.0},
    "options_bytes": 16.0,
    "prod_cold_byte_ns": 0.02,
    "cons_cold_byte_ns": {"null": 0.2, "tmpfs": 0.1},
    "wakeup_at_zero": 0.2,  # of the copies, with a ring that holds none...
    "wakeup_scale_s": 150e-6,  # ...falling e-fold per 150 us of copies it holds
}
CACHE_BYTES = 16 * 2**20  # what capture.pool's probe measured on this VM (docs/capture.md)
"""The issue's first measurements where it gives them (docs/capture.md); the rest made up."""


def wakeup_loss(hold_s: float, true: dict = TRUE) -> float:
    """The share of copies a thread that sleeps loses waking, with a ring that holds `hold_s`
    seconds of them."""
    return true["wakeup_at_zero"] * float(np.exp(-hold_s / true["wakeup_scale_s"]))


def calls_per_record(writer: str, rec: np.ndarray) -> np.ndarray:
    """pcapng: one writev per 32; pcap through stdio: one write per 4 KiB; pdump: both."""
    per_burst = {"pcapng": 1 / 32, "pcap": 0.0, "pdump": 1 / 32}[writer]
    per_byte = {"pcapng": 0.0, "pcap": 1 / 4096, "pdump": 1 / 4096}[writer]
    return per_burst + per_byte * rec


QUIET = ((0.85, 1.0), (0.85, 1.0))
"""The CPU shares a quiet machine gives the forwarding lcore and the capture thread (no run
starved: `capture.verdicts`)."""


def synthetic_runs(
    seed: int = 0,
    noise: float = 0.0,
    sinks=("null", "tmpfs"),
    true: dict = TRUE,
    shares: tuple[tuple[float, float], tuple[float, float]] = QUIET,
) -> pd.DataFrame:
    """One run per sink, writer and size, the forwarding lcore's and capture thread's CPU
    shares drawn at random from `shares`; `noise` multiplies each measured CPU cost by 1 +-
    noise (uniform)."""
    rng = np.random.default_rng(seed)
    rows = []
    run_id = 0
    for sink in sinks:
        for tool, fmt in WRITERS:
            writer = writer_name(tool, fmt)
            row = tool_of(writer)
            for frame in SIZES:
                run_id += 1
                pkt = frame - 4.0
                rec = float(record_bytes(fmt, np.array(pkt), true["options_bytes"]))
                calls = float(calls_per_record(writer, np.array(rec)))
                fwd = true["fwd_base_ns"] + true["fwd_per_byte_ns"] * pkt
                cold = float(cold_bytes(row.pool_mbufs(2048), pkt, CACHE_BYTES))
                prod = true["prod_fixed_ns"][writer] + true["prod_per_byte_ns"] * pkt
                # a delivered copy's mbuf comes round the whole pool: its cold lines with it
                handoff = true["handoff_ns"] + true["prod_cold_byte_ns"] * cold
                cons = (
                    true["cons_fixed_ns"][writer]
                    + (
                        true["cons_per_byte_ns"][sink] * rec
                        + true["cons_cold_byte_ns"][sink] * cold
                    )
                    * touches_bytes(writer, sink)
                    + true["write_call_ns"][sink] * calls
                )
                fwd_share, cap_share = rng.uniform(*shares[0]), rng.uniform(*shares[1])
                lost_waking = 0.0
                for _ in range(20):  # the loss waking follows the copies' rate, which follows it
                    flow = solve(
                        np.array(fwd),
                        np.array(prod),
                        np.array(handoff),
                        np.array(cons),
                        copies=1.0,
                        lcores=fwd_share,
                        cores=cap_share,
                        arrivals=np.inf,
                        wakeup_loss=lost_waking,
                    )
                    fwd_cpu = fwd + prod + handoff * float(flow.delivered)
                    hold = 2048 / (fwd_share * 1e9 / fwd_cpu)  # ring over copies per second
                    lost_waking = wakeup_loss(hold) if row.sleeps else 0.0
                share = float(flow.delivered)
                # dumpcap sleeps when it keeps up; dpdk-pdump polls without sleeping
                slept = row.sleeps and not bool(flow.saturated)
                jitter = rng.uniform(1 - noise, 1 + noise, 3)
                fwd_cpu = (fwd + prod + handoff * share) * jitter[0]
                seconds = 3.0
                fwd_pps = fwd_share * 1e9 / fwd_cpu
                copies = round(fwd_pps * seconds)
                written = round(copies * share)
                rows.append(
                    {
                        "run_id": run_id,
                        "started": pd.Timestamp("2026-11-27 18:00"),
                        "dpdk_version": "DPDK 22.11.11",
                        "tool": tool,
                        "port": "null",
                        "frame_bytes": float(frame),
                        "fwd_lcores": 1,
                        "direction": "rx",
                        "copies_per_packet": 1,
                        "format": fmt,
                        "snaplen": 0,
                        "ring_size": 2048,
                        "sink": sink,
                        "seconds": seconds,
                        "fwd_pps_no_capture": 1e9 / fwd,
                        "fwd_pps": fwd_pps,
                        "fwd_cpu_ns_no_capture": fwd * jitter[1],
                        "fwd_cpu_ns": fwd_cpu,
                        "fwd_cpu_share": fwd_share,
                        "copies": copies,
                        "dropped": copies - written,
                        "written": written,
                        "loss": 1 - written / copies,
                        "file_packets": -1 if sink == "null" else written,
                        "capture_pps": written / seconds,
                        # a consumer that keeps up sleeps between bursts: its CPU per record
                        # is then an upper bound (1.3x here), which the fit must not use
                        "capture_cpu_ns": cons * jitter[2] * (1.3 if slept else 1.0),
                        "capture_cpu_share": cap_share,
                        "bytes_per_record": -1.0 if sink == "null" else rec,
                        "write_calls_per_packet": calls,
                        "capture_sleeps_per_s": 1000.0 if slept else 0.0,
                        "pool_mbufs": row.pool_mbufs(2048),
                        "cache_bytes": CACHE_BYTES,
                        "packets_per_timestamp": 32.0,
                        "inversions": 0,
                        "crashed": False,
                    }
                )
    return pd.DataFrame(rows)

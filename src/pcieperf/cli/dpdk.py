"""The `dpdk` group: real dpdk-testpmd runs and the runs stored (pcieperf.dpdk.testpmd)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _real, _store, _whole, dpdk, testpmd
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.dpdk_fwd import _add_dpdk_fwd_command
from pcieperf.results import format_table

SECONDS_PER_DAY = 86_400  # the longest `dpdk run`: a longer one is a typo (it was found hanging)


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
    _add_dpdk_fwd_command(dpdk_sub, "fwd")  # `dpdk-fwd` in the group it belongs to (issue 16)

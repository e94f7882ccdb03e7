"""`trace demand`, `trace merge`, `trace synth` and `trace convert`: captures priced, merged,
made and rewritten (pcieperf.net)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _link, _warn, archiving, engine, ethernet, nic, trace
from pcieperf.cli._output import _emit
from pcieperf.cli.nic import _nic_paths
from pcieperf.units import parse_duration_ns, parse_rate


def _archive_label(result: dict) -> dict:
    """An archive port's result with a `file` line for the text output."""
    if "port" not in result:
        return result
    files = f"{result['files']} files, {result['first_file']} .. {result['last_file']}"
    return result | {"file": f"port {result['port']} ({files})"}


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
            cost=nic.demand_cost(profile, link, window, dma_paths),
            profile=profile.name,
            capacity_gbps=link.tlp_bytes_per_s * 8 / 1e9,
            window_ns=window,
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

"""`trace demand`, `trace merge`, `trace synth` and `trace convert`: captures priced, merged,
made and rewritten (pcieperf.net.api and pcieperf.nic.captures: `pp.capture_demand`,
`pp.merge_captures`, `pp.synth_capture`, `pp.convert_capture`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import link_options
from pcieperf.cli._output import emit
from pcieperf.errors import UsageError
from pcieperf.net import api
from pcieperf.nic.captures import capture_demand


def _read_options(args: argparse.Namespace) -> dict:
    """--skip-bad and --strict, as the API's keyword arguments."""
    return {"skip_bad": args.skip_bad, "strict": args.strict}


def cmd_trace_demand(args: argparse.Namespace) -> None:
    """The PCIe bandwidth captures need per window from a NIC profile, per file or per port of
    an archive, on Dask."""
    result = capture_demand(
        args.files,
        profile=args.profile,
        paths=args.paths,
        window=args.window,
        archive=args.archive,
        scheduler=args.scheduler,
        debug=args.debug,
        **_read_options(args),
        **link_options(args),
    )
    emit(args, result)


def cmd_trace_merge(args: argparse.Namespace) -> None:
    """Merge captures into one file in time order (pcapng keeps every interface), or with
    --append write them one after another in the order given, as mergecap -a."""
    result = api.merge_captures(
        args.files,
        args.output,
        force=args.force,
        append=args.append,
        scheduler=args.scheduler,
        debug=args.debug,
        **_read_options(args),
    )
    emit(args, result)


def cmd_trace_synth(args: argparse.Namespace) -> None:
    """Write a synthetic capture: a size mix arriving constant, Poisson or in on/off bursts."""
    result = api.synth_capture(
        args.output,
        eth=args.eth,
        sizes=args.sizes,
        pps=args.pps,
        duration=args.duration,
        arrival=args.arrival,
        burst=args.burst,
        flows=args.flows,
        seed=args.seed,
        force=args.force,
    )
    emit(args, result)


def cmd_trace_convert(args: argparse.Namespace) -> None:
    """Rewrite a capture as ns-resolution pcap or pcapng, packet for packet."""
    if (args.out is None) == (args.output is None):
        raise UsageError("give the output once: trace convert IN OUT, or -o OUT")
    result = api.convert_capture(
        args.file,
        args.out or args.output,
        shift_time=args.shift_time,
        force=args.force,
        **_read_options(args),
    )
    emit(args, result)

"""Fuzz targets for pcieperf's Python input parsers: one function per target, bytes in.

The invariant every target checks: the parser returns (a value that satisfies the target's
assertions) or raises pcieperf.errors.PcieperfError. Any other exception, or a hang, is a
bug. Parsers that take a path get the bytes through a real file, so decoding is fuzzed too;
parsers of command-line values get them decoded as Python decodes argv (surrogateescape).
The first byte of an input picks options where a parser has them, so one corpus covers all.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

from pcieperf import units
from pcieperf.dpdk import testpmd
from pcieperf.dpdk.port import parse_page
from pcieperf.iommu.platform import load_platform
from pcieperf.measure import counters
from pcieperf.measure.counters.formats import names as counter_formats
from pcieperf.net import ethernet
from pcieperf.nic.nic import evaluate
from pcieperf.nic.profile import load_profile
from pcieperf.pcie.link import Link
from pcieperf.pciebench import bench, sim
from pcieperf.pciebench.calibrate import host_link
from pcieperf.pciebench.calibration_file import load_calibration
from pcieperf.pciebench.device import load_device
from pcieperf.pciebench.host import parse_host_facts

_SCRATCH = Path(tempfile.mkdtemp(prefix="pcieperf-fuzz-"))


def scratch_file(name: str, data: bytes) -> Path:
    """Write `data` to a file called `name` in this process's scratch folder."""
    path = _SCRATCH / name
    path.write_bytes(data)
    return path


def _pick(data: bytes, options: tuple) -> tuple[object, bytes]:
    """One of `options`, chosen by the first byte, and the rest of the input."""
    if not data:
        return options[0], b""
    return options[data[0] % len(options)], data[1:]


def argv_text(data: bytes) -> str:
    """Bytes as Python turns a command-line argument into str on POSIX."""
    return data.decode("utf-8", "surrogateescape")


# --- counter files -----------------------------------------------------------------------------

_COUNTER_OPTIONS = tuple(
    (source, lenient, delimiter)
    for source in (None, *counter_formats())
    for lenient in (False, True)
    for delimiter in (None, ",", ";")
)


def counter_file(data: bytes) -> None:
    """`counters.parse` on any file, with or without --format, --lenient, --delimiter."""
    (source, lenient, delimiter), body = _pick(data, _COUNTER_OPTIONS)
    samples = counters.parse(
        scratch_file("counters.csv", body), source, lenient=lenient, delimiter=delimiter
    )
    assert len(samples) >= 0


# --- testpmd output ----------------------------------------------------------------------------


def testpmd_output(data: bytes) -> None:
    """What `testpmd.run` reads from testpmd's output (decoded with errors="replace", as the
    pipe is read): the statistics of each port and the figures a run reports from them."""
    _, ports = testpmd.parse_output(data.decode("utf-8", "replace"))
    for port in ports:
        figures = [port.rx_pps, port.tx_pps]
        if port.rx_bursts:
            figures += testpmd.burst_histogram(port.rx_bursts, port.rx_packets).values()
        assert all(math.isfinite(x) and x >= 0 for x in figures), figures


# --- TOML loaders ------------------------------------------------------------------------------


def nic_profile(data: bytes) -> None:
    """`load_profile` on a user .toml path, and the profile priced at 64 B and 1518 B."""
    profile = load_profile(str(scratch_file("profile.toml", data)))
    evaluate(
        profile,
        Link(gen=3, lanes=8),
        ethernet.Ethernet(40),
        [ethernet.PacketMix.fixed(64), ethernet.PacketMix.fixed(1518)],
    )


def host_toml(data: bytes) -> None:
    """`sim.load_host`, and the link it describes (every consumer builds it)."""
    host = sim.load_host(scratch_file("host.toml", data))
    assert host.link.tlp_gbps > 0


def device_toml(data: bytes) -> None:
    """`load_device`."""
    load_device(scratch_file("device.toml", data))


def calibration_toml(data: bytes) -> None:
    """`load_calibration`."""
    load_calibration(scratch_file("calibration.toml", data))


def platform_toml(data: bytes) -> None:
    """`load_platform` (the calibration plus its [reference_host])."""
    load_platform(scratch_file("platform.toml", data))


# --- command-line values -----------------------------------------------------------------------


def _rate(text: str) -> None:
    value = units.parse_rate(text)
    assert math.isfinite(value), value
    assert value >= 0, value


def _duration(text: str) -> None:
    value = units.parse_duration_ns(text)
    assert isinstance(value, int), value
    assert value >= 1, value


def _int_list(text: str) -> None:
    assert all(isinstance(v, int) for v in units.parse_int_list(text, "--sizes"))


def _batch_hist(text: str) -> None:
    hist = units.parse_batch_histogram(text)
    assert all(b >= 0 for b in hist), hist
    assert all(math.isfinite(c) and c >= 0 for c in hist.values()), hist


def _mix(text: str) -> None:
    mix = ethernet.parse_mix(text)
    assert math.isclose(float(mix.weights.sum()), 1.0), mix
    assert math.isfinite(mix.mean_frame_bytes), mix


def _page(text: str) -> None:
    parse_page(text)


_VALUE_PARSERS: tuple[Callable[[str], None], ...] = (
    _rate,
    _duration,
    _int_list,
    _batch_hist,
    _mix,
    _page,
)


def cli_values(data: bytes) -> None:
    """--pps/--rate, --duration/--window, --sizes, --batch-hist, a size mix, --page."""
    parser, body = _pick(data, _VALUE_PARSERS)
    parser(argv_text(body))


# --- pcie-bench results ------------------------------------------------------------------------

# One name per column layout and per branch of bench.file_kind (bw, lat, cdf, not a result).
_BENCH_NAMES = ("bw_dma_off_rd.csv", "lat_dma_sizes.csv", "lat_cmd_details_cdf.csv", "x.csv")


def bench_csv(data: bytes) -> None:
    """`bench.read_result_csv` on any file under each result-file name."""
    name, body = _pick(data, _BENCH_NAMES)
    table = bench.read_result_csv(scratch_file(str(name), body))
    assert table.rows > 0


def host_facts(data: bytes) -> None:
    """`parse_host_facts` on sys-lspci.txt, sys-cpuinfo.txt and sys-dma-addrs.txt
    (split at NUL bytes, read with errors="replace" as store.parse_result_dir reads them),
    and the link the facts describe."""
    parts = data.decode("utf-8", "replace").split("\0")
    facts = dict(zip(("lspci", "cpuinfo", "dma-addrs"), parts, strict=False))
    found = parse_host_facts(facts)
    for policy in ("rcb", "mps"):
        assert host_link(found, policy).tlp_gbps > 0


TARGETS: dict[str, Callable[[bytes], None]] = {
    "counter_file": counter_file,
    "testpmd_output": testpmd_output,
    "nic_profile": nic_profile,
    "host_toml": host_toml,
    "device_toml": device_toml,
    "calibration_toml": calibration_toml,
    "platform_toml": platform_toml,
    "cli_values": cli_values,
    "bench_csv": bench_csv,
    "host_facts": host_facts,
}
# Targets whose input is a TOML document: fuzz.py adds the structure-aware toml_mutator.
TOML_TARGETS = {"nic_profile", "host_toml", "device_toml", "calibration_toml", "platform_toml"}

"""The capture tools' table (`capture.tools`, issue 43 item 7): a third tool is one row and its
parser, as CONTRIBUTING.md says ("Adding a capture tool"). A throwaway tool added that way here
is offered by `capture run`, started, read, stored and fitted like the shipped two."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import pcieperf as pp
from pcieperf.capture import fit, run, tools
from pcieperf.errors import PcieperfError, UsageError
from tests.capture.model_synthetic import synthetic_runs
from tests.helpers.cli import run_cli
from tests.helpers.dpdk import NOTHING_LEFT, leftovers_of, needs_dpdk

_COUNTS = re.compile(r"Packets received/dropped on interface '[^']*': ([0-9]+)/([0-9]+)")


def demo_command(spec: tools.ToolRun) -> list[str]:
    """A throwaway tool, written as CONTRIBUTING.md says: dpdk-dumpcap under another name,
    writing pcap only (-P) through libpcap's pcap_dump, cut at the run's snap length."""
    command = ["stdbuf", "-oL", spec.binary, f"--file-prefix={spec.prefix}", "-i", spec.port]
    command += ["-q", "-w", spec.out, "-N", str(spec.ring_size), "-P"]
    return command + (["-s", str(spec.snaplen)] if spec.snaplen else [])


def parse_demo(output: str) -> tools.Output:
    """Its closing `Packets received/dropped on interface 'P': R/D` (app/dumpcap/main.c)."""
    found = _COUNTS.findall(output)
    if not found:
        raise PcieperfError(f"demo printed no packet counts: {tools.last_lines([output])}")
    received, dropped = (int(n) for n in found[-1])
    return tools.Output(received - dropped, received)


DEMO = tools.CaptureTool(
    name="demo",
    binary="dpdk-dumpcap",
    env="PCIEPERF_DEMO",
    writers=(tools.Writer("demo", "pcap", tools.MBUF_COPY, True),),
    command=demo_command,
    parse=parse_demo,
    capturing="Capturing on",
    pool_mbufs=lambda ring: 2 * ring,
    rings=1,
    sleeps=True,
    counts_drops=True,
    stamped="stamped per burst when copied",
    snaplen=True,
    path_bytes=None,
    capture_threads=1,
)


@pytest.fixture
def demo_tool(monkeypatch):
    monkeypatch.setattr(tools, "TOOLS", [*tools.TOOLS, DEMO])


def test_the_shipped_tools_are_rows_of_one_table():
    assert tools.names() == ("dumpcap", "pdump")
    assert set(tools.writers()) == {"pcapng", "pcap", "pdump"}  # a calibration's cost keys
    assert [t.formats for t in tools.TOOLS] == [("pcapng", "pcap"), ("pcap",)]


def test_a_tool_added_by_its_row_is_offered_and_checked(demo_tool, capsys, tmp_path):
    code, text, _ = run_cli(capsys, "capture", "run", "--help")
    assert code == 0
    assert "{dumpcap,pdump,demo}" in text
    cfg = run.CaptureConfig(tool="demo", snaplen=96)
    assert (cfg.file_format, cfg.capture_tool.pool_mbufs(cfg.ring_size)) == ("pcap", 4096)
    with pytest.raises(UsageError, match="`tool` demo writes pcap only"):
        run.CaptureConfig(tool="demo", format="pcapng")
    links = tmp_path / "links"
    links.mkdir()
    command = run._tool_command(cfg, "dpdk-dumpcap", "pfx", Path("/dev/shm/x/capture.pcap"), links)
    assert command == [
        "stdbuf", "-oL", "dpdk-dumpcap", "--file-prefix=pfx", "-i", "net_null0", "-q", "-w",
        "/dev/shm/x/capture.pcap", "-N", "2048", "-P", "-s", "96",
    ]  # fmt: skip
    # its closing counts, as the runner reads them: 1000 copies, 10 dropped at a full ring
    said = "Packets received/dropped on interface 'net_null0': 1000/10 (1.0)\n"
    counts = run._counts(DEMO, said, 1000.0)
    assert (counts.received, counts.dropped, counts.written) == (1000, 10, 990)


def test_a_tool_added_by_its_row_is_fitted(demo_tool):
    # dpdk-pdump's synthetic runs relabelled as the demo's: its writer gets costs of its own
    runs = synthetic_runs()
    runs.loc[runs["tool"] == "pdump", "tool"] = "demo"
    cal = fit.fit(runs, "synthetic")
    assert set(cal.producer.fixed_ns) == {"pcapng", "pcap", "demo"}
    assert set(cal.consumer("null").fixed_ns) == {"pcapng", "pcap", "demo"}
    runs.loc[runs.index[0], "tool"] = "nope"
    with pytest.raises(
        UsageError, match="tool = 'nope' is not allowed; use one of dumpcap, pdump, demo"
    ):
        fit.fit(runs, "synthetic")


@needs_dpdk
@pytest.mark.slow
def test_a_tool_added_by_its_row_captures(demo_tool, tmp_path):
    # The whole run, table-driven: the demo's command line, its "capturing" line, its parser,
    # its pool and its record. pcap records of 1500 B frames cut at 96 B: a 16 B header and
    # 96 B of data each (pcap-savefile(5)), after the file's 24 B header; the bytes it wrote
    # are those of the records in the file (`written` counts the copies its ring accepted).
    got = pp.capture_run(
        tool="demo", frame=1500, snaplen=96, sink="tmpfs", seconds=1, db=tmp_path / "s.duckdb"
    ).to_json()
    assert (got["tool"], got["format"], got["snaplen"], got["pool_mbufs"]) == (
        "demo",
        "pcap",
        96,
        4096,
    )
    assert got["written"] == got["copies"] - got["dropped"] > 0
    assert abs(got["file_packets"] - got["written"]) <= got["ring_size"]
    file_bytes = got["bytes_per_record"] * got["written"]
    assert file_bytes == pytest.approx(24 + (16 + 96) * got["file_packets"], rel=1e-6)
    assert leftovers_of(os.getpid()) == NOTHING_LEFT

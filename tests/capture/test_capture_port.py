"""`capture run --port` end to end with the real dpdk-testpmd and capture tools (issue 43 item
4): a veth pair made here, one end in a network namespace of the test's own where a sender
writes UDP frames onto it, the other driven by testpmd through net_af_packet and forwarded
back out while the tool copies it. Everything made here is removed, also when a test fails;
names carry the test process's id, so that two test runs never collide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pcieperf as pp
from tests.helpers.cli import run_cli
from tests.helpers.dpdk import NOTHING_LEFT, leftovers_of, needs_dpdk

WAIT_S = 120.0  # a generous deadline for conditions on a loaded 2-core machine
POLL_S = 0.05
# The sender's frames alternate between two UDP ports, each with a length of its own, without
# FCS (14 B Ethernet + 20 B IPv4 + 8 B UDP + payload): a filter for one keeps its length alone.
KEPT = (40404, 142)
OTHER = (40405, 98)

# Sends Ethernet/IPv4/UDP frames to the MAC given, one every millisecond (the pace, not a
# wait), to the two (port, bytes) alternately, each with its sequence number, until its stdin
# closes; prints how many it sent.
SENDER = r"""
import select, socket, struct, sys
iface, dst = sys.argv[1], bytes.fromhex(sys.argv[2])
kinds = [(int(sys.argv[3]), int(sys.argv[4])), (int(sys.argv[5]), int(sys.argv[6]))]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
src = s.getsockname()[4]
sent = 0
while not select.select([sys.stdin], [], [], 0.001)[0]:
    port, size = kinds[sent % 2]
    payload = struct.pack("!Q", sent).ljust(size - 42, b"\0")
    udp = struct.pack("!HHHH", 50000, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes([10, 201, 0, 2]), bytes([10, 201, 0, 1]))
    sent += s.send(dst + src + b"\x08\x00" + ip + udp) > 0
print(sent, flush=True)
"""

needs_ip = pytest.mark.skipif(
    shutil.which("ip") is None, reason="needs iproute2's ip (Debian iproute2) for a veth pair"
)


@dataclass(frozen=True)
class Veth:
    """A veth pair: `host` in this namespace, its peer in the namespace `netns`."""

    host: str
    peer: str
    netns: str


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _quiet(netns: str | None, interface: str) -> None:
    """No IPv6 on `interface` (a kernel without IPv6 has no such knob, and is quiet anyway):
    the kernel would send its own neighbour discovery on it."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    knob = Path("/proc/sys/net/ipv6/conf") / interface / "disable_ipv6"
    code = f"import pathlib; p = pathlib.Path({str(knob)!r}); p.exists() and p.write_text('1')"
    subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, check=True)


@pytest.fixture
def veth() -> Iterator[Veth]:
    """A veth pair, both ends up, its peer in a namespace of its own; removed at the end."""
    tag = f"pp{os.getpid()}"
    pair = Veth(f"{tag}h", f"{tag}p", f"pcieperf-test-{os.getpid()}")
    _ip("netns", "add", pair.netns)
    try:
        _ip("link", "add", pair.host, "type", "veth", "peer", "name", pair.peer)
        _ip("link", "set", pair.peer, "netns", pair.netns)
        _quiet(None, pair.host)
        _quiet(pair.netns, pair.peer)
        _ip("link", "set", pair.host, "up")
        _ip("-n", pair.netns, "link", "set", pair.peer, "up")
        yield pair
    finally:
        subprocess.run(["ip", "link", "del", pair.host], capture_output=True, check=False)
        _ip("netns", "del", pair.netns)  # its end of the pair goes with it
    assert not Path(f"/sys/class/net/{pair.host}").exists()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert pair.netns not in names.split()


def _counter(interface: str, name: str) -> int:
    return int(Path(f"/sys/class/net/{interface}/statistics/{name}").read_text())


@pytest.fixture
def sending(veth: Veth) -> Iterator[subprocess.Popen]:
    """The sender writing frames onto the peer, to the host end's MAC, from the namespace;
    yielded once the host end has received some."""
    mac = Path(f"/sys/class/net/{veth.host}/address").read_text().strip().replace(":", "")
    command = ["ip", "netns", "exec", veth.netns, sys.executable, "-c", SENDER]
    proc = subprocess.Popen(
        [*command, veth.peer, mac, *(str(n) for n in (*KEPT, *OTHER))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        before, deadline = _counter(veth.host, "rx_packets"), time.monotonic() + WAIT_S
        while _counter(veth.host, "rx_packets") < before + 10:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"no frames on {veth.host} after {WAIT_S} s"
            time.sleep(POLL_S)
        yield proc
    finally:
        proc.communicate(timeout=WAIT_S)  # closes its stdin: it stops
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def nothing_left():
    """The capture run of this test process leaves nothing behind (other runs may go on)."""
    yield
    assert leftovers_of(os.getpid()) == NOTHING_LEFT


@needs_dpdk
@needs_ip
@pytest.mark.slow
def test_dumpcap_captures_a_wires_frames_through_af_packet(veth, sending, tmp_path, nothing_left):
    out, kept, db = tmp_path / "wire.pcapng", f"udp dst port {KEPT[0]}", tmp_path / "s.duckdb"
    got = pp.capture_run(port=veth.host, filter=kept, out=out, seconds=1, db=db).to_json()
    assert (got["port"], got["device"], got["capture_filter"]) == ("af_packet", veth.host, kept)
    # testpmd received the sender's frames (about 1000/s) and counted their bytes; with IPv6
    # off on both ends nothing else crosses the pair: half of each length, and the FCS.
    assert got["fwd_pps"] > 0
    assert got["frame_bytes"] == pytest.approx((KEPT[1] + OTHER[1]) / 2 + 4, abs=1)
    # The file holds what dumpcap wrote (give or take its ring at the stop): the frames that
    # passed the filter alone, each copied when received and when testpmd sent it back out.
    frames = pp.read_capture(out)
    assert len(frames) == got["file_packets"] > 0
    assert abs(got["file_packets"] - got["written"]) <= got["ring_size"]
    assert set(frames["len"]) == {KEPT[1]}
    assert got["dropped"] == 0  # a thousand frames a second never fill a 2048-copy ring
    shown = pp.capture_show(got["run_id"], db=db).to_text()
    assert f"copied      port {veth.host} (af_packet), filter '{kept}'" in shown


@needs_dpdk
@needs_ip
@pytest.mark.slow
def test_pdump_captures_one_direction_of_a_wire(veth, sending, tmp_path, capsys, nothing_left):
    db = str(tmp_path / "s.duckdb")
    code, text, err = run_cli(
        capsys, "capture", "run", "--port", veth.host, "--tool", "pdump", "--capture-format",
        "pcap", "--rx-only", "--queue", "0", "--sink", "tmpfs", "--seconds", "1", "--db", db,
        "--json",
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(text)
    code, got_text, err = run_cli(capsys, "capture", "show", str(got["run_id"]), "--db", db)
    assert code == 0, err
    assert (got["direction"], got["copies_per_packet"], got["queue"]) == ("rx", 1, 0)
    assert f"copied      port {veth.host} (af_packet), Rx only, queue 0" in got_text
    # Rx copies only, one record a frame received while it ran: what pdump says it wrote, give
    # or take its two rings, drained into the file after it counts (app/pdump/main.c).
    assert got["file_packets"] > 0
    assert abs(got["file_packets"] - got["written"]) <= 2 * got["ring_size"]
    assert got["frame_bytes"] == pytest.approx((KEPT[1] + OTHER[1]) / 2 + 4, abs=1)

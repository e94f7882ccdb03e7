"""DPDK's capture tools as a capture run starts them: where they are, the libraries they must
preload, their command lines, and what they print. Both are secondary processes of a running
primary (dpdk-testpmd); `dumpcap` writes pcapng or pcap itself, batching writes per burst
(app/dumpcap/main.c), `pdump` hands every copy to a net_pcap port, whose libpcap `pcap_dump`
writes it record by record (app/pdump/main.c, drivers/net/pcap)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pcieperf.dpdk.testpmd import find_binary
from pcieperf.errors import PcieperfError

TOOLS = {"dumpcap": "dpdk-dumpcap", "pdump": "dpdk-pdump"}
"""Each tool's binary, as Debian's dpdk-dev package ships it (22.11: /usr/bin)."""
TOOL_ENV = {"dumpcap": "PCIEPERF_DUMPCAP", "pdump": "PCIEPERF_PDUMP"}
# Shared libraries that register mempool drivers. Secondary and primary must register them in
# the same order, or they number the mempool ops differently and every copy the primary makes
# into the secondary's pool fails (DPDK Bugzilla 1073): the secondary preloads the primary's.
_MEMPOOL_DRIVER = re.compile(r"\s(/\S*/librte_mempool_[a-z0-9_]+\.so[.0-9]*)\s")
_RECEIVED = re.compile(r"Packets received/dropped on interface '([^']*)': ([0-9]+)/([0-9]+)")
CAPTURING = {
    "dumpcap": "Capturing on",  # app/dumpcap/main.c, once the primary copies for it
    "pdump": "capture for (",  # app/pdump/main.c dump_packets: " core (N), capture for (K) tuples"
}
"""The line each tool prints once it is capturing."""
# app/pdump/main.c copies rx-dev/tx-dev into char[TX_STREAM_SIZE] (64) with strlcpy: a longer
# path is cut short silently, and the capture goes to a file of that name.
PDUMP_PATH_BYTES = 63
PDUMP_POOL_MBUFS = 65535  # app/pdump/main.c MBUFS_PER_POOL: total-num-mbufs unless given
_PDUMP_WRITTEN = re.compile(r"-packets transmitted to vdev:\s*([0-9]+)")


def find(tool: str) -> str:
    """The tool's binary: $PCIEPERF_DUMPCAP / $PCIEPERF_PDUMP, else on PATH."""
    return find_binary(TOOLS[tool], TOOL_ENV[tool])


def mempool_preload(primary: str) -> str:
    """LD_PRELOAD for a secondary of `primary`: the mempool driver libraries the primary links,
    in its link order (as `ldd` lists them)."""
    done = subprocess.run(["ldd", primary], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PcieperfError(f"ldd {primary} failed: {done.stderr.strip()}")
    return ":".join(_MEMPOOL_DRIVER.findall(done.stdout + "\n"))


def pool_mbufs(tool: str, ring_size: int) -> int:
    """The mbufs of the pool a tool's copies are made in: dumpcap's twice its ring
    (app/dumpcap/main.c create_mempool), dpdk-pdump's own default."""
    return 2 * ring_size if tool == "dumpcap" else PDUMP_POOL_MBUFS


def rings(tool: str) -> int:
    """The rings a tool's copies wait in: dumpcap's one, dpdk-pdump's two (Rx copies and Tx
    copies, app/pdump/main.c create_mp_ring_vdev)."""
    return 1 if tool == "dumpcap" else 2


@dataclass(frozen=True)
class ToolCounts:
    """What a capture tool reports at its end: copies the primary made for it (`received`,
    ring-full drops included) and those dropped because its ring was full."""

    received: int
    dropped: int

    @property
    def written(self) -> int:
        """Records that reached the tool and were written."""
        return self.received - self.dropped


def dumpcap_command(
    binary: str,
    prefix: str,
    port: str,
    out: Path,
    *,
    pcap: bool,
    snaplen: int | None,
    ring_size: int,
) -> list[str]:
    """dpdk-dumpcap capturing `port` of the primary `prefix` into `out` until SIGINT; stdout
    line-buffered (stdbuf) so that its `Capturing on` line arrives when it is printed."""
    command = ["stdbuf", "-oL", binary, f"--file-prefix={prefix}", "-i", port, "-q"]
    command += ["-w", str(out), "-N", str(ring_size)]
    if snaplen:
        command += ["-s", str(snaplen)]
    return command + (["-P"] if pcap else [])


def pdump_command(binary: str, prefix: str, out: str, *, ring_size: int) -> list[str]:
    """dpdk-pdump copying port 0's Rx and Tx (every queue) of the primary `prefix` into one
    net_pcap port writing `out` (pcap only) until SIGINT; stdout line-buffered."""
    spec = f"port=0,queue=*,rx-dev={out},tx-dev={out},ring-size={ring_size}"
    return ["stdbuf", "-oL", binary, f"--file-prefix={prefix}", "--", "--pdump", spec]


def parse_pdump(output: str) -> int:
    """Records dpdk-pdump handed to its pcap port: its closing `-packets transmitted to vdev`
    (it does not learn how many copies the primary dropped because its ring was full)."""
    found = _PDUMP_WRITTEN.findall(output)
    if not found:
        raise PcieperfError(
            f"dpdk-pdump printed no packet counts: {last_lines(output.splitlines())}"
        )
    return int(found[-1])


def parse_dumpcap(output: str) -> ToolCounts:
    """The closing `Packets received/dropped on interface 'P': R/D (x%)` line."""
    found = _RECEIVED.findall(output)
    if not found:
        tail = " | ".join(line for line in output.splitlines()[-3:] if line.strip())
        raise PcieperfError(f"dpdk-dumpcap printed no packet counts: {tail or 'no output'}")
    _, received, dropped = found[-1]
    return ToolCounts(int(received), int(dropped))


def last_lines(lines: list[str], count: int = 3) -> str:
    """The last non-empty lines a tool printed, joined, for a one-line error."""
    kept = [line.strip() for line in lines if line.strip()][-count:]
    return " | ".join(kept) or "no output"

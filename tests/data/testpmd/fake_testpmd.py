"""A stand-in for dpdk-testpmd whose statistics blocks come when a test says so, for testing
how `pcieperf dpdk run` waits for a rate without depending on how fast the machine is.

It ignores its arguments and prints in testpmd's format (app/test-pmd/testpmd.c, as in
pcap-2ports-finite.txt) one port's periodic blocks: $FAKE_TESTPMD_BLOCKS of them at once, then
block k each time the file go-k appears in $FAKE_TESTPMD_DIR. After printing block k it creates
printed-k there. On SIGINT it creates `stopped`, prints the final forward statistics and exits
0, as testpmd does; with $FAKE_TESTPMD_EXIT set it prints them right after the first blocks.

Every block forwards 1 000 000 packets (Rx-pps 1000000 from the second block on; the first has
no rate, as in testpmd) in full bursts of 32.
"""

import os
import signal
import sys
import time
from pathlib import Path

PACKETS_PER_BLOCK = 1_000_000
BURST = 32
POLL_S = 0.05
LIFETIME_S = 600  # never outlive a broken test by long


def block(k: int) -> str:
    """Periodic block k (1-based) for port 0."""
    packets = PACKETS_PER_BLOCK * k
    pps = 0 if k == 1 else PACKETS_PER_BLOCK
    return f"""
Port statistics ====================================
  ######################## NIC statistics for port 0  ########################
  RX-packets: {packets}      RX-missed: 0          RX-bytes:  {packets * 60}
  RX-errors: 0
  RX-nombuf:  0
  TX-packets: {packets}      TX-errors: 0          TX-bytes:  {packets * 60}

  Throughput (since last show)
  Rx-pps:      {pps}          Rx-bps:      {pps * 480}
  Tx-pps:      {pps}          Tx-bps:      {pps * 480}
  ############################################################################
"""


def final(blocks: int) -> str:
    """The final forward statistics after `blocks` periodic blocks."""
    packets = PACKETS_PER_BLOCK * blocks
    return f"""
Telling cores to stop...
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: {packets}          RX-dropped: 0             RX-total: {packets}
  TX-packets: {packets}          TX-dropped: 0             TX-total: {packets}
  RX-bursts : {packets // BURST} [0% of 0 pkts + 100% of {BURST} pkts]
  ----------------------------------------------------------------------------
Done.
"""


def main() -> int:
    """Print blocks as told, stop on SIGINT."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    folder = Path(os.environ["FAKE_TESTPMD_DIR"])
    printed = 0
    print("EAL: RTE Version: 'DPDK 22.11.0-fake'", flush=True)

    def emit() -> None:
        nonlocal printed
        printed += 1
        print(block(printed), flush=True)
        (folder / f"printed-{printed}").touch()

    for _ in range(int(os.environ.get("FAKE_TESTPMD_BLOCKS", "1"))):
        emit()
    limit = time.monotonic() + LIFETIME_S
    while not os.environ.get("FAKE_TESTPMD_EXIT"):
        if signal.sigtimedwait({signal.SIGINT}, POLL_S) is not None:
            (folder / "stopped").touch()
            break
        if time.monotonic() > limit:
            return 3
        if (folder / f"go-{printed + 1}").exists():
            emit()
    print(final(printed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

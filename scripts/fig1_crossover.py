"""Re-derive the simple-NIC crossover of the paper's Figure 1 under different assumptions.

Prints the smallest frame from which the simple NIC keeps up with 40 GbE on Gen3 x8 (MPS 256,
MRRS 512): pcieperf's own model, and pcie-bench's published assumptions with and without the
receive-path term its code loses (`=` for `+=`, the 24 B Rx descriptor-fetch request).
Run: python3 scripts/fig1_crossover.py   (numbers quoted in docs/model.md)
"""

from dataclasses import replace

import numpy as np

from pcieperf.net.ethernet import Ethernet
from pcieperf.nic import nic
from pcieperf.nic.profile import load_profile
from pcieperf.nic.rows import fixed_rows
from pcieperf.pcie.link import Link

FRAMES = np.arange(64, 1519)
LOST_REQUEST_BYTES = 24  # MRd with a 4 DW header + 8 B framing


def crossover(pps: np.ndarray, line_pps: np.ndarray) -> int:
    """First frame from which the NIC keeps up at every larger size."""
    failing = np.flatnonzero(pps < line_pps)
    return int(FRAMES[failing[-1] + 1]) if failing.size else int(FRAMES[0])


def main() -> None:
    """Print the crossover under each set of assumptions."""
    simple = load_profile("simple")
    wide = replace(
        simple,
        rx=tuple(replace(o, addr64=True) for o in simple.rx),
        tx=tuple(replace(o, addr64=True) for o in simple.tx),
    )
    eth = Ethernet(40)
    # pcie-bench: MPS-sized completions, DLLP overhead without the lane divisor (8x on x8), and
    # an Ethernet line with the FCS left off the wire.
    pciebench_link = Link(
        completion_policy="mps", ack_interval_symbols=203 / 8, fc_interval_symbols=203 / 8
    )
    pciebench_line = eth.rate_gbps * 1e9 / 8 / (np.maximum(FRAMES - 4, 64) + 20)
    rows = []
    for label, profile, link, line, lost in [
        ("pcieperf (RCB-64 completions, 3 DW MMIO)", simple, Link(), None, 0),
        ("pcieperf with 64-bit MMIO addresses", wide, Link(), None, 0),
        ("pcie-bench assumptions, term restored", wide, pciebench_link, pciebench_line, 0),
        (
            "pcie-bench assumptions, term lost (as published)",
            wide,
            pciebench_link,
            pciebench_line,
            LOST_REQUEST_BYTES,
        ),
    ]:
        result = nic.evaluate(profile, link, eth, fixed_rows(FRAMES))
        busiest = np.maximum(result.up_bytes_per_pkt - lost, result.down_bytes_per_pkt)
        pps = link.tlp_bytes_per_s / busiest
        rows.append((label, crossover(pps, result.line_pps if line is None else line)))
    for label, frame in rows:
        print(f"{label:52s} {frame:5d} B")


if __name__ == "__main__":
    main()

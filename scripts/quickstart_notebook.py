"""Write docs/examples/quickstart.ipynb: the public API from a link to counters explained.

The notebook is kept as source here (cells as plain strings, reviewed like code) and written
unexecuted; tests/test_notebook.py runs it with nbclient, so it cannot rot. Rerun after editing:
    python scripts/quickstart_notebook.py
"""

from pathlib import Path

import nbformat

OUT = Path(__file__).resolve().parents[1] / "docs" / "examples" / "quickstart.ipynb"

CELLS = [
    (
        "markdown",
        """# pcieperf quickstart

From a PCIe link to measured counters explained, with the public API (`import pcieperf as pp`).
Every function here is what a `pcieperf` command runs; results show as tables and become pandas
DataFrames with `.to_frame()` (units are in the column names: `_gbps` = 10⁹ bit/s, `_mpps`,
`_bytes`, `_ns`).""",
    ),
    (
        "code",
        """import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import pcieperf as pp

# The repository's example counter file (hand-written from pcm-iio's format: tests/data/counters)
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "tests" / "data").is_dir())
PCM_CSV = ROOT / "tests" / "data" / "counters" / "pcm-iio-skx.csv"
work = Path(tempfile.mkdtemp(prefix="pcieperf-quickstart-"))""",
    ),
    (
        "markdown",
        """## 1. The link: what is left for TLPs after encoding, DLLPs and SKP ordered sets""",
    ),
    (
        "code",
        """import pandas as pd

widths = ((3, 8), (3, 16), (4, 8), (4, 16), (5, 16))
links = pd.concat([pp.link(gen=g, lanes=w).to_frame() for g, w in widths], ignore_index=True)
links[["gen", "lanes", "raw_gbps", "encoded_gbps", "tlp_gbps"]]""",
    ),
    ("markdown", """## 2. DMA: effective bandwidth of one transfer size, TLP headers and all"""),
    (
        "code",
        """dma = pp.dma(gen=3, lanes=8, op="write", sizes=range(64, 1537, 32)).to_frame()
ax = dma.plot(x="size", y="effective_gbps", legend=False, title="Gen3 x8 DMA writes")
ax.set_xlabel("transfer size (B)")
ax.set_ylabel("effective bandwidth (Gb/s)")
plt.show()
dma.head()""",
    ),
    ("markdown", """## 3. A NIC: packets per second the link allows, and the bottleneck"""),
    (
        "code",
        """frames = [64, 128, 256, 512, 1024, 1518]
nic = pp.nic(profile="dpdk", gen=3, lanes=8, eth=40, sizes=frames).to_frame()
rates = nic.assign(pcie_mpps=nic.pcie_max_pps / 1e6, line_mpps=nic.line_rate_pps / 1e6)
ax = rates.plot(x="size", y=["pcie_mpps", "line_mpps"], marker="o", logy=True)
ax.set_xlabel("frame (B)")
ax.set_ylabel("Mpps")
plt.show()
nic""",
    ),
    ("markdown", """## 4. DPDK forwarding: PCIe bandwidth per direction at a packet rate"""),
    (
        "code",
        """fwd = pp.dpdk_forwarding(pps=10e6, frame=64, batch=32)
fwd.to_frame()""",
    ),
    ("markdown", """## 5. A capture: synthesise one, read it packet by packet, summarise it"""),
    (
        "code",
        """capture = work / "imix.pcap"
pp.synth_capture(capture, sizes="imix", pps="2M", duration="20ms", arrival="onoff")
packets = pp.read_capture(capture)
ax = packets["len"].plot.hist(bins=40, title="frame sizes in the capture")
ax.set_xlabel("frame (B)")
plt.show()
packets.head()""",
    ),
    ("code", """pp.capture_stats([capture]).to_frame()"""),
    (
        "markdown",
        """## 6. Counters: import what pcm-iio measured and explain it against the model""",
    ),
    (
        "code",
        """counters = pp.read_counters(PCM_CSV)
per_metric = counters.pivot_table(index="t_s", columns="metric", values="value", aggfunc="sum")
ax = per_metric.plot(title="pcm-iio, summed over stacks")
ax.set_ylabel("bytes/s")
plt.show()
counters.head()""",
    ),
    ("code", """pp.explain(counters=PCM_CSV, pps="10M", frame=64).to_frame()"""),
]


def main() -> None:
    """Write the notebook, unexecuted."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb.cells = [make[kind](source) for kind, source in CELLS]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, OUT)


if __name__ == "__main__":
    main()

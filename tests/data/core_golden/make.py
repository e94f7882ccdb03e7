"""Records the calls the Python models make into the Rust core (`simulate`, `port_misses`,
`port_simulate`) and what each returned, for the regression test tests/test_core_golden.py.

The recorded outputs are the reference for speed work on rust/core (sim.rs, iotlb.rs,
dataplane.rs, ddio.rs): data structures and loop mechanics may change, results may not, bit
for bit. Recorded at 5d588da (main after iommu14's semantic changes, before the speed work
of branch speedrust was merged); re-record them only for a deliberate change of the model's
semantics, and say so in the commit.

Run from the project root: python3 tests/data/core_golden/make.py
"""

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from pcieperf._native import core
from pcieperf.dpdk.port import PortSetup
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import Traffic, load_platform
from pcieperf.iommu.stream import count_misses
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.pciebench import sim
from pcieperf.pciebench.bench import Point
from pcieperf.pciebench.device import DeviceProfile

OUT = Path(__file__).resolve().parent / "calls.json"
RECORDED = ("simulate", "port_misses", "port_simulate")


def digest(value: object) -> object:
    """A JSON-able form of a core output value: arrays as length, sum and SHA-256 of bytes."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value, dtype=np.float64)
        return {
            "len": int(data.size),
            "sum": float(data.sum()),
            "sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        }
    return value


def outputs(out: dict) -> dict:
    """A core function's result dict in recorded form."""
    return {key: digest(value) for key, value in sorted(out.items())}


class Recorder:
    """Wraps the core's functions and keeps every call with its result."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.module = core()
        self.originals = {name: getattr(self.module, name) for name in RECORDED}
        for name in RECORDED:
            setattr(self.module, name, self.wrap(name))

    def wrap(self, name: str):
        original = self.originals[name]

        def call(*args):
            out = original(*args)
            self.calls.append({"function": name, "args": list(args), "out": outputs(out)})
            return out

        return call


def bench_points() -> None:
    """pcie-bench simulations: reads, writes, rw and write-then-read; IOMMU off and on."""
    device = DeviceProfile(
        name="golden", source="test", tags=32, read_ns=10.0, read_line_ns=1.0, write_ns=20.0,
        write_line_ns=0.5, datapath_ns=2.0, datapath_line_ns=0.25, fixed_latency_ns=100.0,
    )  # fmt: skip
    host = sim.HostProfile(
        name="golden", source="test", mps=256, mrrs=512, completion_policy="mps", addr64=True,
        llc_latency_ns=400.0, ddio_latency_ns=380.0, dram_latency_ns=480.0,
        remote_extra_ns=80.0, llc_bytes=8 << 20, ddio_bytes=1 << 20, write_line_ns=1.0,
        partial_line_ns=30.0, posted_credits=64, iotlb_entries=64, walk_ns=200.0,
        walk_busy_ns=150.0, walkers=4,
    )  # fmt: skip
    for iommu_mode in ("off", "nosp"):
        h = replace(host, iommu=iommu_mode)
        for test, pattern, cache, size, window in (
            ("BW_DMA_RD", "Rand", "Cold", 64, 8 << 10),
            ("BW_DMA_WR", "Rand", "HWarm", 512, 1 << 20),
            ("BW_DMA_RW", "Seq", "Cold", 2048, 64 << 20),
            ("BW_DMA_RD", "Seq", "DWarm", 100, 16 << 20),
            ("LAT_DMA_RD", "Rand", "Cold", 64, 4 << 20),
            ("LAT_DMA_WRRD", "Rand", "DThrash", 256, 1 << 20),
        ):
            point = Point(test, pattern, cache, 0, 0, window, size)
            sim.simulate(point, h, device, transactions=30_000, seed=3)


def port_setups() -> None:
    """DPDK port models: counts and timed runs over pages, layouts, IOVA modes, rings,
    several ports and queues, polls of fewer packets, IMIX, and three platforms."""
    cases = [
        ("e5-v4", PortSetup(page="4k", rxd=1024, txd=1024), "64"),
        ("e5-v4", PortSetup(page="4k", layout="packed", rxd=128, txd=128), "imix"),
        ("e5-v4", PortSetup(page="2m", rxd=512, txd=512), "64"),
        ("e5-v4", PortSetup(page="4k", iova="pa", rxd=256, txd=256), "64"),
        (
            "skylake-sp",
            PortSetup(page="4k", ports=2, queues=2, cross_port=True, pool=16384),
            "imix",
        ),
        ("skylake-sp", PortSetup(page="4k", rxd=1024, txd=1024, poll_delay_us=2.0), "64"),
        ("epyc-zen4", PortSetup(page="4k", rxd=2048, txd=2048), "1518"),
    ]
    for name, setup, mix in cases:
        platform = load_platform(platform=name)
        traffic = Traffic(parse_mix(mix), Ethernet(40))
        Model(platform, traffic, 20_000).evaluate(setup)
    # Set-associative and random-replacement IOTLBs with a page-walk cache, counted only.
    platform = load_platform()
    traffic = Traffic(parse_mix("imix"), Ethernet(40))
    for ways, replacement, pwc in ((8, "lru", 0), (4, "random", 16), (0, "random", 4)):
        params = replace(platform.iommu, iotlb_ways=ways, replacement=replacement, pwc_entries=pwc)
        count_misses(PortSetup(page="4k", rxd=512, txd=512), traffic, params,
                           packets=50_000)  # fmt: skip


def main() -> None:
    recorder = Recorder()
    bench_points()
    port_setups()
    OUT.write_text(json.dumps(recorder.calls, indent=1) + "\n")
    counts = {name: sum(c["function"] == name for c in recorder.calls) for name in RECORDED}
    print(f"recorded {len(recorder.calls)} calls {counts} into {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""IOMMU model speed (issues 4, 15): simulated packets per second of the DPDK address stream.

Counts IOTLB misses for --count-packets packets per setup (address stream + IOTLB only, no
timing; once without and once with the platform's DDIO/LLC model), and runs the timed model
(stream + IOTLB + DDIO + device, link and walkers, in the load state it decides) for
--timed-packets packets, on one core. Setups: 4 KiB (DPDK layout and packed), 2 MiB; rxd/txd
128 and 1024; 64 B and IMIX. Each figure is the median of --runs runs, with their spread.
Target (issue 15): >= 40 million simulated packets per second for the address stream + IOTLB.
Run: python3 benchmarks/bench_iommu.py [--runs 5] [--json-out F.json]
"""

import time
from itertools import product

from _rates import Rates, finish, parser
from pcieperf._native import core
from pcieperf.dpdk.iommu.model import Model
from pcieperf.dpdk.iommu.platform import Traffic, load_platform
from pcieperf.dpdk.iommu.stream import port_params
from pcieperf.dpdk.port import LAYOUTS, PortSetup
from pcieperf.net.ethernet import Ethernet, parse_mix

TARGET = 40e6


def setups():
    """Every (setup, traffic) pair the benchmark times."""
    for page, layout, ring, mix in product(("4k", "2m"), LAYOUTS, (128, 1024), ("64", "imix")):
        setup = PortSetup(page=page, layout=layout, rxd=ring, txd=ring)
        yield setup, Traffic(parse_mix(mix), Ethernet(40))


def one_run(rates: Rates, count_packets: int, timed_packets: int) -> None:
    """Times every setup once and records the three figures of this run."""
    platform = load_platform()
    counted = timed = 0
    count_s = ddio_s = timed_s = 0.0
    for setup, traffic in setups():
        params = port_params(setup, traffic, platform.iommu, count_packets)
        start = time.perf_counter()
        out = core().port_misses(params | {"warmup": 0})
        count_s += time.perf_counter() - start
        counted += out["packets"]
        start = time.perf_counter()
        core().port_misses(params | {"warmup": 0, "llc": platform.memory.llc.shape()})
        ddio_s += time.perf_counter() - start
        model = Model(platform, traffic, timed_packets)
        start = time.perf_counter()
        state = model.evaluate(setup).state
        timed_s += time.perf_counter() - start
        # Light: the light count and its timed run; a full ring: the light count, the state's
        # timed run and its count.
        timed += (2 if state == "light" else 3) * timed_packets
    rates.add("address stream + IOTLB packets/s", counted, count_s, TARGET)
    rates.add("address stream + IOTLB + DDIO packets/s", counted, ddio_s)
    rates.add("full model (counts + timed run, incl. warm-up) packets/s", timed, timed_s)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--count-packets", type=int, default=5_000_000, help="per setup, counted")
    p.add_argument("--timed-packets", type=int, default=1_000_000, help="per setup, timed")
    args = p.parse_args()
    rates = Rates()
    for _ in range(args.runs):
        one_run(rates, args.count_packets, args.timed_packets)
    finish(rates, args.json_out)


if __name__ == "__main__":
    main()

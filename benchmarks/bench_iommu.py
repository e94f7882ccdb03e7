"""IOMMU model speed (issue 4): simulated packets per second of the DPDK address stream.

Counts IOTLB misses for 5 M packets per setup (address stream + IOTLB only, no timing; once
without and once with the platform's DDIO/LLC model), and runs the timed model (stream + IOTLB
+ DDIO + device, link and walkers, in the load state it decides) for 1 M packets, on one core.
Setups: 4 KiB (DPDK layout and packed), 2 MiB; rxd/txd 128 and 1024; 64 B and IMIX.
Target: >= 20 million simulated packets per second for the address stream + IOTLB.
Run: python3 benchmarks/bench_iommu.py [--json-out F.json]
"""

import time
from itertools import product

from _json_out import write_figures
from pcieperf import iommu
from pcieperf._native import core
from pcieperf.ethernet import Ethernet, parse_mix

COUNT_PACKETS = 5_000_000
TIMED_PACKETS = 1_000_000


def main() -> None:
    platform = iommu.load_platform()
    counted = timed = 0
    count_s = ddio_s = timed_s = 0.0
    for page, layout, ring, mix in product(
        ("4k", "2m"), iommu.LAYOUTS, (128, 1024), ("64", "imix")
    ):
        setup = iommu.PortSetup(page=page, layout=layout, rxd=ring, txd=ring)
        traffic = iommu.Traffic(parse_mix(mix), Ethernet(40))
        params = iommu.port_params(setup, traffic, platform.iommu, COUNT_PACKETS)
        start = time.perf_counter()
        out = core().port_misses(params | {"warmup": 0})
        count_s += time.perf_counter() - start
        counted += out["packets"]
        start = time.perf_counter()
        core().port_misses(params | {"warmup": 0, "llc": platform.memory.llc.shape()})
        ddio_s += time.perf_counter() - start
        model = iommu.Model(platform, traffic, TIMED_PACKETS)
        start = time.perf_counter()
        state = model.evaluate(setup).state
        timed_s += time.perf_counter() - start
        # Light: the light count and its timed run; a full ring: the light count, the state's
        # timed run and its count.
        timed += (2 if state == "light" else 3) * TIMED_PACKETS
    print(
        f"address stream + IOTLB: {counted / count_s / 1e6:.1f} M packets/s "
        f"({counted / 1e6:.0f} M packets in {count_s:.2f} s; target 20 M/s)"
    )
    print(f"address stream + IOTLB + DDIO: {counted / ddio_s / 1e6:.1f} M packets/s")
    print(
        f"full model (counts + timed run, incl. warm-up): {timed / timed_s / 1e6:.1f} M packets/s"
    )
    write_figures(
        {
            "stream_iotlb_packets_per_s": counted / count_s,
            "stream_iotlb_ddio_packets_per_s": counted / ddio_s,
            "full_model_packets_per_s": timed / timed_s,
        }
    )


if __name__ == "__main__":
    main()

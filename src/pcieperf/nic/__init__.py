"""NIC and driver models: declarative profiles (`profile`: TOML, `[device]` facts, expressions;
built-in ones in `profiles/`) priced per packet in PCIe bytes and TLPs per direction
(`pricing`), against the line rate (`nic`); one packet's loopback latency and the in-flight
DMAs a rate needs (`latency`, on a host's DMA latencies: `host`); the PCIe bandwidth captures
need, priced by a profile (`captures`: `pp.capture_demand`). The public functions are in `api`
(`pp.nic`, `pp.profiles`, `pp.profile`, `pp.latency`).

May import: pcie, net, pciebench (pcie-bench latency files and the calibration a host's latency
comes from), errors, units, _native, _config, _numpy, _values. No store, runner or
report.
"""

"""NIC and driver models: declarative profiles priced per packet in PCIe bytes and TLPs per
direction (`nic`, built-in profiles in `profiles/`), and one packet's loopback latency and the
in-flight DMAs a rate needs (`latency`). `captures` holds `pp.capture_demand`: the PCIe
bandwidth captures need, priced by a NIC profile.

May import: pcie, net, errors, units, _native. No store, runner or report.
"""

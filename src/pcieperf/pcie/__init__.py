"""The PCIe model: a link per direction (`link`), the cost of one read or write in TLPs and
wire bytes (`tlp`), and how a buffer's address splits into TLPs (`alignment`).

May import: errors, units, _native, _numpy, _values. Nothing here knows about NICs, DPDK, captures
or storage.
"""

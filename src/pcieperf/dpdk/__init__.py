"""DPDK data planes: the one port setup (`port.PortSetup`, `port.DEFAULT_PORT`), the forwarding
estimate (`forwarding`), the testpmd runner (`testpmd`) and the public functions (`api`:
`pp.dpdk_forwarding`, `pp.dpdk_fwd_trace`). The IOMMU model of a port is the `iommu` package.

May import: pcie, net, nic, pciebench (the host calibration), errors, units, _native, _config,
interrupts (testpmd stops on SIGTERM as on Ctrl-C), statedir (private folders for the links its
device arguments name). The model modules (port, forwarding) import
no store and no runner.
"""

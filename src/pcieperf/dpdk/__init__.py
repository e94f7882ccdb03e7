"""DPDK data planes: the one port setup (`port.PortSetup`), the forwarding estimate
(`forwarding`), the IOMMU/IOTLB and DDIO model of a port (`iommu/`: platform, stream, model,
advise), the platform profiles it runs on (`platforms`, data in `platforms/`), the testpmd
runner (`testpmd`) and the public functions (`api`: `pp.iommu.sim/gain/advise`, `pp.platforms`).

May import: pcie, net, nic, pciebench (the host calibration), errors, units, _native, _config,
interrupts (testpmd stops on SIGTERM as on Ctrl-C). The model modules (forwarding, iommu,
platforms) import no store and no runner.
"""

"""DPDK data planes: the forwarding estimate (`forwarding`), the IOMMU/IOTLB and DDIO model of
a port (`iommu`), the platform profiles it runs on (`platforms`, data in `platforms/`), and the
testpmd runner (`testpmd`).

May import: pcie, net, nic, pciebench (the host calibration), errors, units, _native. The model
modules (forwarding, iommu, platforms) import no store and no runner.
"""

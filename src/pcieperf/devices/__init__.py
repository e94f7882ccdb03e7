"""PCI devices of this machine, or of a saved lspci text, read and priced (issue 42): `sysfs`
(/sys/bus/pci/devices: ids, class, driver, NUMA node, link, IOMMU group; hugepages, CPU nodes),
`config_space` (configuration space bytes decoded: the capability list walked to the PCI Express
capability), `lspci` (`lspci -vv` text of any version read back), `express` (the capability's
fields and what they mean), `device` (one PCI function), `pci_ids` (names from pci.ids),
`inventory` (one input's devices and host), `nics` (the NIC table by id, `nics.csv`),
`settings` (what a device gives the models, with evidence), `pricing` (a NIC's 64 B ceiling on
its link and retrained), `findings` (what to change, with the numbers behind it), `text` (the
table for people) and `api` (`pp.devices`, `pp.device_options`).

May import: pcie, net, nic, dpdk (the port's ring limits), iommu (the IOMMU model), errors,
units, results. It models nothing itself: every number is the pcie, nic, latency or iommu
model's. No store, runner or report.

`pp.devices()` is `api.devices`.
"""

"""What users measure: counter importers for pcm-iio, perf and VTune (`counters`), the DuckDB
store of results and imports (`store`), counters explained against the model (`explain`), and
a platform's IOMMU fitted to measured IOTLB counters (`iommu_fit`); the public functions that
read measurements (`api`: `pp.iommu.fit`, `pp.data_import/data_ls/data_show`) and `pp.iommu`
itself (`iommu_api`: the model's sim/gain/advise beside fit).

May import: every model package (pcie, net, nic, dpdk, pciebench), errors, units. No report, no CLI.
"""

"""What users measure: counter importers for pcm-iio, perf and VTune (`counters`), the DuckDB
store of results and imports (`store`; `store_lock` waits for another process's turn), counters
explained against the model (`explain`), and a platform's IOMMU fitted to measured IOTLB
counters (`iommu_fit`). Public functions: `api` (`pp.iommu.fit`, `pp.data_import/data_ls/
data_show`), `records` (`pp.read_counters`, `pp.import_counters`, `pp.counter_imports`,
`pp.dpdk_run`, `pp.dpdk_runs`); `pp.store.open` (in `store`) reads the store as DataFrames.

May import: every model package (pcie, net, nic, dpdk, iommu, pciebench), errors, units,
outputs. No report, no CLI.
"""

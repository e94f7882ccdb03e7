"""The default report: `data` (the model sweeps each figure draws, as DataFrames), `plots`
(matplotlib: the report's figures and every command's `--plot`), `measured` (`data plot`'s
figures of the store), `html` (the files and the self-contained index.html), `api`
(`pp.report(out=...)`, which `pcieperf report` calls).

`pp.report(out="DIR")` is `api.report`.
May import: every model package (pcie, net, nic, dpdk, iommu, pciebench), measure (the store),
capture and devices (this machine's NICs, `report --devices`). Nothing imports the report but
the CLI.
"""

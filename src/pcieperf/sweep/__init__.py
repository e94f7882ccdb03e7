"""Design-space sweeps: every combination of declared keyword values of `nic`, `dma`,
`iommu sim` or `bench sim`, evaluated through their API functions in chunks on Dask and
written to one Parquet file (docs/scale.md). `spec` (the TOML spec or a mapping of its keys),
`commands` (the sweepable commands: API function, keywords, check, evaluation), `plan` (names
and values checked, points, the calls a chunk makes, a chunk's evaluation), `check` (every
point checked before any work; the estimate), `run` (parts, resume, lock, the joined file),
`api` (`pp.sweep(spec, output)`, which `pcieperf sweep` calls).

`pp.sweep(spec, output)` is `api.sweep`.
May import: pcie, net, nic, dpdk, iommu, pciebench, engine and the base modules (errors,
units, progress, results, outputs, _config). Nothing imports the sweep but the CLI.
"""

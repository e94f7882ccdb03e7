"""DPDK packet capture (pdump, dpdk-dumpcap): real capture runs measured beside testpmd, the
capture path as a model, and its calibration from stored runs (issue 26).

Modules: `run` (a capture run: testpmd as primary, the tool as secondary, what each thread did
per packet), `lock` (one capture run at a time on a machine), `leftovers` (what a run makes,
recorded, and undone by the next run if it is killed), `hugepages` (the run's hugepage memory,
made and undone), `tools` (the capture
tools' command lines and output), `threads` (CPU time per thread from /proc), `records`
(`pp.capture_run`, `pp.capture_runs`, `pp.capture_show`: runs stored and judged), `model`
(the capture path as a model, `pp.capture_model`) and `calibration` (its costs fitted from
stored runs, `pp.capture_calibrate`; the shipped one in `calibrations/`).

May import: every model package (pcie, net, nic, dpdk, iommu, pciebench), measure (the store),
errors, units, outputs, interrupts, statedir. No report, no CLI.
"""

"""DPDK packet capture (pdump, dpdk-dumpcap): real capture runs measured beside testpmd, the
capture path as a model, and its calibration from stored runs (issue 26).

Modules, in three rooms; a module imports only modules named before it here, never one after
(also not inside a function: tests/test_architecture.py checks the order):

- shared: `tools` (one row per capture tool: binary, command line, output, writers, and what
  the run and the model need to know of it), `path` (the designs, formats and sinks),
  `primitives` (a machine's probe: the primitives its costs are made of),
  `machine` (the machine a run was made on), `stored` (a run's stored columns; the store makes
  the table from them), `verdicts` (what a run's own measurements say about it).
- the model and its calibration: `flow` (the fixed point), `pool` (the copies' pool in the
  cache), `calibration` (the calibration file), `setup` (the model's inputs), `travel` (costs
  carried to another kind of machine by the ratio of their primitives), `costs` (what each
  thread spends per item), `evaluate` (the path per frame size, with bounds), `advice` (the
  verdict and what to change), `model_text`, `model` (`pp.capture_model`), `fit` (costs
  fitted to runs), `placement` (where the host put the two CPUs), `calibrate`
  (`pp.capture_calibrate`; the shipped calibration in `calibrations/`). `import
  pcieperf.capture.model` loads no runner and no store.
- the runner: `threads` (CPU time per thread from /proc), `probe` (`pp.capture_probe`: the
  primitives timed here), `intervals`, `processes`,
  `hugepages`, `lock` (one capture run at a time on a machine), `leftovers` (what a run makes,
  recorded, and undone by the next run if it is killed), `port` (a real port to forward on,
  checked in sysfs), `bpf` (a capture filter compiled by libpcap before a run), `run` (a
  capture run: testpmd as primary, the tool as secondary, what
  each thread did per packet), `records` (`pp.capture_run`, `pp.capture_runs`,
  `pp.capture_show`: runs stored and judged), and on top `here` (`pp.capture_calibrate_here`:
  the runs a calibration needs, made on this machine).

May import: every model package (pcie, net, nic, dpdk, iommu, pciebench), measure (the store),
errors, units, outputs, interrupts, statedir. No report, no CLI.
"""

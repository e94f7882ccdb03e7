"""Ethernet and captures: line rates and frame overheads (`ethernet`, `wire`), capture files
read, written, merged, summarised and synthesised (`trace`), and archives of many captures
summarised (`archive`) or merged by time ranges (`archive_merge`) on a Dask cluster. The public
functions are in `api` (`pp.read_capture`, `pp.capture_stats`, `pp.merge_captures`,
`pp.synth_capture`, `pp.convert_capture`).

May import: pcie, errors, units, progress, engine, _native, _numpy, _values, outputs. No NIC model,
store or report.
"""

"""Ethernet and captures: line rates and frame overheads (`ethernet`, `wire`), capture files
read, written, merged, summarised and synthesised (`trace`), and archives of many captures
summarised on a Dask cluster (`archive`).

May import: pcie, errors, units, progress, engine, _native, _lazy. No NIC model, store or report.
"""

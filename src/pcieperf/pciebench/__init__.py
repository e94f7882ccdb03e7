"""The pcie-bench methodology: benchmark definitions and result files (`bench`), the DMA-engine
simulator driver (`sim`), calibration files and fitting (`calibrate`, data in `calibrations/`),
predictions in pcie-bench's own file format (`predict`) and their validation (`validate`).

May import: pcie, errors, units, progress, _native. The store imports this, not the reverse.
"""

"""The pcie-bench methodology: benchmark definitions and result files (`bench`), the DMA-engine
simulator driver (`sim`), a host's facts and latency fit (`host`), the calibration file
(`calibration_file`, data in `calibrations/`) and the device-wide fit (`calibrate`), the IOTLB
walker a prediction assumes (`walker`) and the host's own bandwidth rows, weighed (`weigh`)
before they pin it (`pin`), predictions in pcie-bench's own file format (`predict`), their
validation (`validate`), and the public functions (`api`, reached as `pp.bench`: load, tests,
sim, calibrate, predict, validate).

May import: pcie, errors, units, progress, _native, _config, outputs (files published whole). The
store imports this, not the reverse.
"""

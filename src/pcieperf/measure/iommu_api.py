"""`pp.iommu`: the questions of the CLI's `iommu` group in one place. `sim`, `gain` and
`advise` ask the model (pcieperf.dpdk.api); `fit` fits it to a host's measured IOTLB counters
(pcieperf.measure.api, which is why this namespace lives in `measure`)."""

from __future__ import annotations

from pcieperf.dpdk.api import advise, gain, inputs, sim
from pcieperf.measure.api import iommu_fit as fit

__all__ = ["advise", "fit", "gain", "inputs", "sim"]


def __dir__() -> list[str]:
    """dir() and tab completion show the API (`__all__`), not the helpers imported here."""
    return list(__all__)

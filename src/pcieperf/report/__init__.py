"""The default report: `data` (the model sweeps each figure draws, as DataFrames), `plots`
(matplotlib: the report's figures and every command's `--plot`), `html` (the files and the
self-contained index.html), `api` (`pp.report(out=...)`, which `pcieperf report` calls).

The package is callable, `pp.report(out="DIR")`, as `api.report`.
May import: every model package (pcie, net, nic, dpdk, iommu, pciebench), measure (the store),
capture and devices (this machine's NICs, `report --devices`). Nothing imports the report but
the CLI.
"""

from __future__ import annotations

from collections.abc import Callable

from pcieperf._callable import callable_package


def _api() -> Callable[..., object]:
    """`pcieperf.report.api.report`, which calling the package `pp.report(out=...)` calls."""
    from pcieperf.report.api import report

    return report


callable_package(__name__, _api)

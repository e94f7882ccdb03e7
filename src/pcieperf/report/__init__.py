"""The default report: `data` (the model sweeps each figure draws, as DataFrames), `plots`
(matplotlib: the report's figures and every command's `--plot`), `html` (the files and the
self-contained index.html), `api` (`pp.report(out=...)`, which `pcieperf report` calls).

The package is callable, `pp.report(out="DIR")`, as `api.report`.
May import: every model package and measure. Nothing imports the report but the CLI.
"""

from __future__ import annotations

import sys
import types


class _Report(types.ModuleType):
    """The package, callable as `api.report` so that `pp.report(...)` writes a report."""

    def __call__(self, **kwargs: object) -> object:
        """Write the report: `pcieperf.report.api.report`'s keywords."""
        from pcieperf.report.api import report

        return report(**kwargs)  # type: ignore[arg-type]


sys.modules[__name__].__class__ = _Report

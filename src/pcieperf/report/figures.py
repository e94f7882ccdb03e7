"""The `--plot` entry points under the name the commands import them by; they live in `plots`
(the report itself is split into `data`, `plots` and `html`)."""

from pcieperf.report.plots import (
    plot_advice,
    plot_explanation,
    plot_measured,
    plot_trace_demand,
    plot_validation,
)

__all__ = [
    "plot_advice",
    "plot_explanation",
    "plot_measured",
    "plot_trace_demand",
    "plot_validation",
]

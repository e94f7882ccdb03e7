"""`python -m pcieperf.cli`: the same as the `pcieperf` command."""

from pcieperf.cli import run

run()

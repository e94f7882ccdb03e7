"""`python -m pcieperf.cli`: the same as the `pcieperf` command."""

import sys

from pcieperf.cli import main

sys.exit(main())

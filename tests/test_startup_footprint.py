"""Start-up of the light commands (issue 15 item 4): `pcieperf --help`, `link` and `profiles`
import none of numpy, pandas, duckdb, scipy or matplotlib, which take most of a process's start
(measured with `python -X importtime`: numpy alone ~60-100 ms of a 120 ms budget). Not timed:
a timed test would depend on the machine's load."""

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "duckdb", "scipy", "matplotlib")

# Runs the CLI in a fresh interpreter and reports which heavy modules were really loaded
# (a module registered by importlib's LazyLoader but never used is not).
RUN = """
import json, sys
from pcieperf.cli import main
heavy = sys.argv.pop(1).split(",")
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = [
    m for m in heavy
    if m in sys.modules and type(sys.modules[m]).__name__ != "_LazyModule"
]
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def run(*argv: str, modules: tuple[str, ...] = HEAVY) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RUN, ",".join(modules), *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        [],
        ["link", "--json"],
        ["link", "--gen", "6", "--lanes", "16"],
        ["trace", "--help"],
        ["profiles", "--json"],
        ["profiles", "testpmd-fwd", "--json"],  # its cl(pkt) is checked as the profile is read
    ],
)
def test_light_commands_import_no_heavy_module(argv):
    # Exit 0 (argparse's --help exits 0; `pcieperf` alone, a usage error, 2) and an empty
    # list: none of HEAVY was imported.
    assert run(*argv) == {"code": 0 if argv else 2, "loaded": []}


@pytest.mark.parametrize("argv", [["--help"], ["link", "--json"], ["dma", "--sizes", "64"]])
def test_light_commands_do_not_import_shutil_or_pathlib(argv):
    # argparse's formatter imports shutil (and bz2, lzma) for the terminal width: ~7 M
    # instructions of each start-up (callgrind, `pcieperf link`: 235.9 M -> 229.3 M); the
    # CLI's formatter reads the width itself (tests/cli/test_cli_help.py: same help text).
    # pathlib (with urllib.parse and ipaddress) only where a file is checked or named: ~16 M
    # more (link 229.3 M -> 213.3 M, --help 154.6 M -> 138.5 M).
    assert run(*argv, modules=("shutil", "pathlib")) == {"code": 0, "loaded": []}


@pytest.mark.parametrize(
    "argv",
    [
        ["nic"],  # no sizes: the defaults give nothing to price
        ["nic", "--sizes", "64,imix", "--profile", "nosuch"],
        ["nic", "--sizes", "64", "--paths", "rx,up"],
    ],
)
def test_nic_usage_errors_import_no_heavy_module(argv):
    # Exit 2 (a usage error), decided before the numpy model is imported.
    assert run(*argv) == {"code": 2, "loaded": []}


def test_a_model_command_still_loads_numpy():
    # The check above can fail: `nic --breakdown` evaluates the numpy model, and the same
    # probe sees it (`dma` and `nic` with a few sizes no longer do: tests/pcie/test_tlp_scalar.py,
    # tests/nic/test_nic_scalar.py).
    assert run("nic", "--sizes", "64", "--breakdown", "--json")["loaded"] == ["numpy"]

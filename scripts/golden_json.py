"""Golden replay of every command's JSON (issue 30): the README's lines, every --help example and
a line per shipped NIC profile and IOMMU platform, each run with `--json` in a clone-like folder
of its own. `record` writes what they print to tests/data/golden/; `check` replays them and says
which differ, byte for byte (exit 1), so that a restructuring can show it changed no output.
Lines that need DPDK, root or a stored run are left out; volatile values (wall-clock seconds,
the folder's path) are replaced by a placeholder. Run: python scripts/golden_json.py record|check
[--only TEXT] [--rel R]; tests/test_golden_json.py replays the recording with a float tolerance
(another CPU's SIMD may round a last bit differently)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pcieperf
from pcieperf import outputs
from pcieperf.cli.examples import ordered, readme_lines
from pcieperf.iommu.profiles import builtin_platforms
from pcieperf.nic.profile import builtin_profiles

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden"
SHARED = Path(os.environ.get("PCIEPERF_SHARED_DATA") or ROOT.parent / "shared" / "data")
RUN_S = 600  # a generous deadline per line on a loaded 2-core machine
# Lines left out: real DPDK runs and what reads them, the figure report (its JSON lists files),
# and `devices` of the machine it runs on (its own devices; a saved lspci text stays in).
LEFT_OUT = re.compile(
    r"dpdk run |capture (run|show|probe)|--from-run|pcieperf report|devices\s*(#|$)"
)
VOLATILE_KEYS = frozenset({"seconds", "cpu_s", "imported_at"})  # clock readings
# Values that describe the machine the replay runs on (issue 41): checked for their form, then
# replaced by a placeholder, so that the recording holds on any machine.
MACHINE_FORMS = {
    "this_machine": lambda v: isinstance(v, str) and re.fullmatch(r".+, [0-9]+ CPUs", v),
    "measured_here": lambda v: v is None or isinstance(v, bool),
}
# Lines that read what `data import` stored from the measured data.
READS_STORED_RESULTS = re.compile(r"data (ls|show|plot)")
OUTPUT = re.compile(r"(?:-o|--out)\s+(\S+)")
WORK = "<work>"
# Floats compared with a tolerance are also equal within this of each other: the values are ns,
# ns per byte, Gb/s, Mpps and shares, and a fit's parameter at its bound of 0 comes out as
# rounding noise (`bench calibrate`'s partial_line_ns: 1.15e-36 on one replay, 1.39e-36 on
# the next).
ABS_TOL = 1e-12
# BLAS on one thread: a fit's last digits follow how many threads sum a product (`bench
# calibrate`'s read_ns moved by 3e-9 once Dask had set OMP_NUM_THREADS=1 in the environment).
ONE_BLAS_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def places(work: Path) -> dict[str, str]:
    """The folders a line's JSON may name, each by a placeholder, so that the recording holds on
    any machine: the clone it ran in, the installed package (data files such as platform
    profiles), the repository and the measured data, most specific first."""
    return {
        str(work): WORK,
        str(Path(pcieperf.__file__).resolve().parent): "<pcieperf>",
        str(ROOT): "<root>",
        str(SHARED.resolve()): "<shared>",
    }


def recorded_lines() -> Iterator[str]:
    """Lines beyond the docs': every NIC profile and IOMMU platform on the default frames."""
    for profile in builtin_profiles():
        yield f"pcieperf nic --profile {profile} --sizes 64,256,1518,imix"
    for platform in builtin_platforms():
        yield f"pcieperf iommu sim --platform {platform} --page 4k --rxd 1024 --frame 64"


def suites() -> dict[str, list[str]]:
    """Each suite's lines, in the order they run (later lines read what earlier ones write)."""
    readme = readme_lines((ROOT / "README.md").read_text())
    examples = [line for _, line in ordered()]
    return {"readme": readme, "examples": examples, "recorded": list(recorded_lines())}


def command(line: str) -> str:
    """The line without its comment, with `--json` before any arguments passed through."""
    line = line.split("  #", 1)[0].strip()
    if "--json" in line.split():
        return line
    head, sep, tail = line.partition(" -- ")
    return f"{head} --json{' ' + sep.strip() + ' ' + tail if sep else ''}"


def runnable(lines: list[str], only: str = "") -> list[str]:
    """The lines the replay runs here: no DPDK, and without the measured data none that reads
    it, what `data import` stored from it, or a file an earlier such line writes."""
    kept, not_made = [], set()
    for line in lines:
        reads = set(line.split())
        needs_shared = (
            "../shared/data" in line or READS_STORED_RESULTS.search(line) or (reads & not_made)
        )
        if LEFT_OUT.search(line) or (needs_shared and not SHARED.is_dir()):
            not_made.update(p for out in OUTPUT.findall(line) for p in (out, out.rstrip("/")))
        elif only in line:
            kept.append(line)
    return kept


def clone(top: Path) -> Path:
    """A folder laid out as a clone's root: tests/ and ../shared/data linked in."""
    work = top / "pcieperf"
    work.mkdir()
    (work / "tests").symlink_to(ROOT / "tests")
    (top / "shared").mkdir()
    if SHARED.is_dir():
        (top / "shared" / "data").symlink_to(SHARED)
    return work


def steady(value: object, named: dict[str, str]) -> object:
    """The JSON value with wall-clock figures and the folders of `named` (`places`) replaced by
    placeholders."""
    if isinstance(value, dict):
        return {k: _steady_item(k, v, named) for k, v in value.items()}
    if isinstance(value, list):
        return [steady(v, named) for v in value]
    if isinstance(value, str):
        for folder, placeholder in named.items():
            value = value.replace(folder, placeholder)
    return value


def _steady_item(key: str, value: object, named: dict[str, str]) -> object:
    """One key's value steadied: a clock reading or a machine's description of the right form
    becomes a placeholder (one of the wrong form stays, for the comparison to show)."""
    if key in VOLATILE_KEYS:
        return "<volatile>"
    if key in MACHINE_FORMS and MACHINE_FORMS[key](value):
        return "<machine>"
    return steady(value, named)


def run(line: str, work: Path) -> object:
    """One line's JSON, steadied; a failing line is recorded as its exit status and stderr."""
    env = (
        os.environ | ONE_BLAS_THREAD | {"PCIEPERF_DB": str(work / "store.duckdb"), "COLUMNS": "100"}
    )
    done = subprocess.run(
        ["bash", "-c", command(line)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    if done.returncode != 0:
        return {"exit": done.returncode, "stderr": steady(done.stderr, places(work))}
    return steady(json.loads(done.stdout), places(work))


def replay(name: str, lines: list[str], only: str = "") -> dict[str, object]:
    """Every runnable line of one suite, run in order in a fresh clone."""
    with tempfile.TemporaryDirectory(prefix=f"golden-{name}-") as top:
        work = clone(Path(top))
        return {line: run(line, work) for line in runnable(lines, only)}


def replay_all(only: str = "") -> dict[str, dict[str, object]]:
    """Every suite's replay, the suites side by side (each in a folder of its own)."""
    with ThreadPoolExecutor() as pool:
        runs = {name: pool.submit(replay, name, lines, only) for name, lines in suites().items()}
        return {name: run.result() for name, run in runs.items()}


def canonical(value: object) -> str:
    """The JSON text two replays are compared by."""
    return json.dumps(value, indent=1, sort_keys=True) + "\n"


def difference(got: object, want: object, rel: float, where: str = "") -> str | None:
    """Where two JSON values first differ (a key path and both values), floats within `rel` of
    each other counting as equal (0: bit for bit); None where they are equal."""
    if isinstance(got, float) and isinstance(want, float) and rel > 0:
        near = math.isclose(got, want, rel_tol=rel, abs_tol=ABS_TOL)
        same = near or (math.isnan(got) and math.isnan(want))
        return None if same else f"{where or '/'}: {got!r} != {want!r}"
    if isinstance(got, dict) and isinstance(want, dict) and got.keys() == want.keys():
        found = (difference(got[k], want[k], rel, f"{where}/{k}") for k in got)
        return next((d for d in found if d), None)
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        pairs = enumerate(zip(got, want, strict=True))
        found = (difference(g, w, rel, f"{where}[{i}]") for i, (g, w) in pairs)
        return next((d for d in found if d), None)
    if canonical(got) == canonical(want):
        return None
    return f"{where or '/'}: {canonical(got)[:200].strip()} != {canonical(want)[:200].strip()}"


def close(got: object, want: object, rel: float) -> bool:
    """Whether two JSON values are equal, floats within `rel` of each other (0: bit for bit)."""
    return difference(got, want, rel) is None


def golden(name: str) -> dict[str, object]:
    """One suite's recording."""
    return json.loads((GOLDEN / f"{name}.json").read_text())


def differences(name: str, replayed: dict[str, object], rel: float = 0.0) -> list[str]:
    """The lines of one suite whose JSON is not the recording's (or was never recorded)."""
    recorded = golden(name)
    found = []
    for line, value in replayed.items():
        if line not in recorded:
            found.append(f"{name}: not recorded: {line}")
        elif where := difference(value, recorded[line], rel):
            found.append(f"{name}: differs at {where}: {line}")
    return found


def record() -> int:
    """Write every suite's replay to tests/data/golden/NAME.json."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, replayed in replay_all().items():
        outputs.write_text(GOLDEN / f"{name}.json", canonical(replayed), force=True)
    return 0


def check(only: str, rel: float) -> int:
    """Replay every suite and name each line whose JSON differs from the recording."""
    found = [line for name, got in replay_all(only).items() for line in differences(name, got, rel)]
    print("\n".join([*found, f"{len(found)} lines differ"]))
    return 1 if found else 0


def main() -> int:
    """Record or check."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("record", "check"))
    parser.add_argument("--only", default="", help="check only lines containing this text")
    parser.add_argument("--rel", type=float, default=0.0, help="float tolerance of check")
    args = parser.parse_args()
    return record() if args.mode == "record" else check(args.only, args.rel)


if __name__ == "__main__":
    sys.exit(main())

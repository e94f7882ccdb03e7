"""Issue 16's `--format table|json|csv` on every command, `--json` kept as `--format json`, and
`--version`: every command is run with `--json` and with `--format csv`, and its CSV must parse
with the csv module into the rows its JSON holds (same count, same keys, same values)."""

import csv
import io
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from pcieperf.capture.calibration import DEFAULT_CALIBRATION, runs_file
from pcieperf.capture.stored import add_run
from pcieperf.cli import main
from pcieperf.measure.store import Store
from pcieperf.results import column_name, csv_text, json_rows
from tests.helpers import PCIE_BENCH, ROOT, TESTS_DATA
from tests.helpers.cli import ALL, run_cli
from tests.helpers.dpdk import needs_dpdk, needs_testpmd, recorded_run_row
from tests.helpers.hosts import write_host_toml

PCM = TESTS_DATA / "counters" / "pcm-iio-skx.csv"
HOST_DIR = PCIE_BENCH / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
SHARED = f"the shared pcie-bench data ({PCIE_BENCH}) is absent"

# One cheap, valid command line per command; {name} is a file from `inputs` or, for {out}, a
# fresh folder of this run's own (the JSON and CSV runs write their outputs apart).
RUNS = {
    "link": "link",
    "dma": "dma --sizes 64,1500",
    "nic": "nic --sizes 64,256,imix",
    "profiles": "profiles",
    "devices": "devices",
    "latency": "latency --sizes 64,128 --read-ns 560",
    "dpdk-fwd": "dpdk-fwd --pps 10M --pkt 64",
    "dpdk fwd": "dpdk fwd --pps 14.88M --frame 64 --batch 8",
    "explain": "explain --counters {pcm} --pps 10M --frame 68",
    "dpdk run": "dpdk run --seconds 1 --db {out}/runs.duckdb",
    "dpdk runs": "dpdk runs --db {db}",
    "capture run": "capture run --frame 128 --seconds 1 --db {out}/cap.duckdb",
    "capture runs": "capture runs --db {db}",
    "capture show": "capture show 1 --db {db}",
    "data import": "data import {host_dir} --db {out}/data.duckdb",
    "data ls": "data ls --db {db}",
    "data show": f"data show {HOST_DIR.name} --test BW_RD --db {{db}}",
    "data plot": "data plot --view size --size 64 -o {out}/p.png --db {db}",
    "bench tests": "bench tests",
    "bench sim": "bench sim --host {host} --device nfp6000 --sizes 64,128",
    "bench calibrate": "bench calibrate {host_dir} -o {out}/cal.toml",
    "bench predict": "bench predict --host {host_dir} --out {out}/pred --transactions 2000",
    "bench host": "bench host {host_dir} -o {out}/host.toml",
    "validate": "validate --measured {host_dir} --predicted {host_dir}",
    "iommu sim": "iommu sim --frame 64",
    "iommu gain": "iommu gain --from-rxd 1024 --to-rxd 128 --sizes 64,128",
    "iommu advise": "iommu advise --page 4k --frame 64",
    "iommu fit": "iommu fit --counters {pcm} --pps 7M --rxd 1024 --frame 64",
    "platforms": "platforms",
    "trace stats": "trace stats {pcap} {pcap}",
    "trace demand": "trace demand {pcap}",
    "trace merge": "trace merge {pcap} {pcap} -o {out}/m.pcapng",
    "trace synth": "trace synth --sizes 64 --pps 1M --duration 1ms -o {out}/s.pcap",
    "trace convert": "trace convert {pcap} -o {out}/c.pcapng",
    "capture model": "capture model --design per-packet --sizes 64,imix",
    "capture calibrate": "capture calibrate --csv {capture_runs} -o {out}/capture.toml",
    "capture probe": "capture probe --fresh --repeats 3 --db {out}/probe.duckdb",
    "counters import": "counters import {pcm} --db {out}/c.duckdb",
    "counters ls": "counters ls --db {db}",
    "counters show": "counters show 1 --db {db}",
    "report": "report -o {out}/report",
    "sweep": "sweep {spec} -o {out}/grid.parquet",
}
NEEDS_SHARED = {
    "data import",
    "data show",
    "data plot",
    "bench calibrate",
    "bench predict",
    "bench host",
}
NEEDS_SHARED |= {"validate"}
COMMANDS = sorted(" ".join(path) for path, parser in ALL if parser.get_default("func"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The files the command lines name: a capture, a host profile, a sweep spec and a store
    holding a counter import (and, where the shared data is here, one pcie-bench host)."""
    root = tmp_path_factory.mktemp("inputs")
    files = {"pcm": str(PCM), "host_dir": str(HOST_DIR), "db": str(root / "store.duckdb")}
    files |= {"pcap": str(root / "a.pcap"), "host": str(root / "host.toml")}
    files["spec"] = str(root / "spec.toml")
    files["capture_runs"] = str(runs_file(DEFAULT_CALIBRATION))  # the shipped calibration's
    write_host_toml(Path(files["host"]))
    Path(files["spec"]).write_text('command = "dma"\n[axes]\nsizes = [64, 128]\nlanes = [4, 8]\n')
    return files


def run(capsys, argv, files, out):
    """Run one command line (words) with its placeholders filled; returns stdout (exit code 0)."""
    out.mkdir()
    words = [w.format(out=out, **files) for w in argv.split()]
    code, stdout, err = run_cli(capsys, *words)
    assert code == 0, err
    return stdout


@pytest.fixture(scope="module")
def prepared(inputs, tmp_path_factory):
    """`inputs` with its capture written and its store filled (by the CLI itself)."""
    synth = "trace synth --sizes 64:1,1518:1 --pps 1M --duration 2ms -q -o {pcap}"
    assert main(synth.format(**inputs).split()) == 0
    assert main(["counters", "import", inputs["pcm"], "--db", inputs["db"], "-q"]) == 0
    if HOST_DIR.is_dir():
        assert main(["data", "import", str(HOST_DIR), "--db", inputs["db"], "-q"]) == 0
    with Store(Path(inputs["db"])) as store:  # a real capture run, recorded on this machine
        add_run(store, recorded_run_row())
    return inputs


# A command whose one run changes what a second (the CSV after the JSON) would find.
RUN_ELSEWHERE = {"counters rm": "tests/measure/test_counters.py, on a store of its own"}


def test_every_command_has_a_run():
    # 43 commands: the 50 of test_cli_help less the seven groups, which print their help.
    assert sorted([*RUNS, *RUN_ELSEWHERE]) == COMMANDS
    assert len(COMMANDS) == 43


# One observation whose list of objects is its parts (a forwarding estimate's terms): one row.
ONE_ROW = {"dpdk-fwd", "dpdk fwd"}


def expected_rows(payload, command):
    """How many rows a command's JSON holds, counted the way issue 16 defines them: a list's
    items; an object's one list of objects (but one row for `ONE_ROW`); else the object."""
    if command in ONE_ROW:
        return 1
    if isinstance(payload, list):
        return len(payload)
    tables = [v for v in payload.values() if isinstance(v, list) and v]
    tables = [v for v in tables if all(isinstance(i, dict) for i in v)]
    return len(tables[0]) if len(tables) == 1 else 1


def first_row_scalars(payload):
    """The first row's plain (number or text) fields as the JSON has them, nested ones under
    `a_b` names (docs/units.md, "Column names")."""
    row = payload[0] if isinstance(payload, list) else payload
    flat = {}

    def walk(value, prefix):
        for key, item in value.items():
            if isinstance(item, dict):
                walk(item, f"{prefix}{column_name(key)}_")
            elif isinstance(item, int | float | str) and not isinstance(item, bool):
                flat[f"{prefix}{column_name(key)}"] = item

    walk(row if isinstance(row, dict) else {}, "")
    return flat


NAME = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*")


def _count_words():
    """docs/units.md's unit words and the words that say what a unitless number counts."""
    section = (ROOT / "docs" / "units.md").read_text().split("## Column names", 1)[1]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    return set(re.findall(r"`([a-z0-9]+)`", "\n".join(table)))


WORDS = _count_words()


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_tidy(rows):
    """docs/units.md's column rules: snake_case names, no JSON in a cell, and every numeric
    column named with a unit or with what it counts (`per_file`/`per_test`: validate's MAPE)."""
    for name in rows[0]:
        assert NAME.fullmatch(name), name
        cells = [row[name] for row in rows if row[name] != ""]
        assert not any(c.startswith(("[", "{")) for c in cells), name
        if cells and all(_is_number(c) for c in cells):
            words = set(name.split("_"))
            assert words & WORDS or name.startswith(("per_file_", "per_test_")), name


REAL = {"dpdk run": needs_testpmd, "capture run": needs_dpdk}


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=REAL.get(c, ())) for c in sorted(RUNS)], ids=sorted(RUNS)
)
def test_csv_holds_the_rows_of_the_json(capsys, prepared, tmp_path, command):
    if command in NEEDS_SHARED and not HOST_DIR.is_dir():
        pytest.skip(SHARED)
    payload = json.loads(run(capsys, f"{RUNS[command]} --json", prepared, tmp_path / "json"))
    text = run(capsys, f"{RUNS[command]} --format csv", prepared, tmp_path / "csv")
    text = text.replace(str(tmp_path / "csv"), str(tmp_path / "json"))  # its own outputs
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == expected_rows(payload, command)
    if not rows:
        assert text == ""
        return
    header = text.splitlines()[0].split(",")
    assert len(header) == len(set(header))  # one column per key
    assert_tidy(rows)
    # The first row's plain fields are columns with the JSON's values (dpdk run, capture run
    # and capture probe measure anew each time; sweep says how long it took and what it
    # estimated from one point).
    scalars = first_row_scalars(payload)
    assert scalars.keys() <= rows[0].keys()
    if command not in ("dpdk run", "capture run", "capture probe"):
        timed = {k for k in scalars if k == "seconds" or k.startswith("estimate_")}
        shown = {k: type(v)(rows[0][k]) for k, v in scalars.items() if k not in timed}
        assert shown == {k: v for k, v in scalars.items() if k not in timed}


def test_json_is_format_json(capsys):
    # --json stays, as an alias: the same bytes as --format json (dpdk-fwd's estimate).
    argv = ["dpdk-fwd", "--pps", "10M", "--pkt", "64"]
    assert run_cli(capsys, *argv, "--json")[1] == run_cli(capsys, *argv, "--format", "json")[1]


def test_csv_by_hand():
    # A list of rows; a nested object as a_b columns; a list of numbers or names inside a row as
    # one text, "; " between items; None as an empty cell; the header in first-seen key order.
    payload = [{"size": 64, "gbps": 1.5, "link": {"gen": 3}, "sizes": [1, 2]}, {"size": 128}]
    assert csv_text(payload) == ("size,gbps,link_gen,sizes\n64,1.5,3,1; 2\n128,,,\n")
    # An object holding one table: one row per item, the object's fields repeated as context.
    table = {"profile": "dpdk", "rows": [{"size": 64}, {"size": 128}]}
    assert json_rows(table) == [{"profile": "dpdk", "size": 64}, {"profile": "dpdk", "size": 128}]
    # ... under the list's name where a name would be there twice.
    clash = {"size": "all", "rows": [{"size": 64}]}
    assert json_rows(clash) == [{"size": "all", "rows_size": 64}]
    assert json_rows({"a": 1, "b": {"c": None}}) == [{"a": 1, "b_c": ""}]
    # ... or, not expanded (one observation and its parts), one row: each item's fields under
    # its name (a `term`), or under its place where the items have no name.
    estimate = {
        "pps": 1e6,
        "terms": [{"term": "Rx packet", "gbps": 2.0}, {"term": "Tx", "gbps": 1}],
    }
    assert json_rows(estimate, expand=False) == [
        {"pps": 1e6, "terms_rx_packet_gbps": 2.0, "terms_tx_gbps": 1}
    ]
    assert json_rows({"ifs": [{"id": 0}, {"id": 1}]}, expand=False) == [
        {"ifs_0_id": 0, "ifs_1_id": 1}
    ]
    # Keys as snake_case names: pcapng-style ranges, comparisons and dots (capinfos' buckets,
    # a p99.9 statistic).
    names = ["<64", "65-127", ">1518", "p99.9", "HWarm", "bw_dma_off_rd.csv", "E5-2620v3"]
    assert [column_name(n) for n in names] == [
        "lt_64",
        "65_to_127",
        "gt_1518",
        "p99_9",
        "hwarm",
        "bw_dma_off_rd_csv",
        "e5_2620v3",
    ]


def test_a_bad_format_is_one_line_exit_2(capsys):
    code, out, err = run_cli(capsys, "link", "--format", "xml")
    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1] == (
        "pcieperf link: error: argument --format: 'xml' is not allowed; choose one of table, "
        "json, csv (see --help)"
    )


def test_the_counter_tool_s_old_format_spelling_still_works(capsys, tmp_path):
    # `counters import FILE --format pcm-iio` (README) now means --counters-format, with a
    # deprecation line.
    db = str(tmp_path / "c.duckdb")
    code, out, err = run_cli(
        capsys, "counters", "import", str(PCM), "--format", "pcm-iio", "--db", db, "--json"
    )
    assert code == 0
    assert err.strip() == (
        "pcieperf: warning: --format pcm-iio for the counter file is deprecated; use "
        "--counters-format pcm-iio"
    )
    assert json.loads(out)["source"] == "pcm-iio"


def test_version_from_the_package_metadata(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0
    assert out == f"pcieperf {version('pcieperf')}\n"
    assert version("pcieperf") == "0.1.0"  # pyproject.toml [project] version

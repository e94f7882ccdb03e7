"""`pcieperf sweep`: a grid of `nic`, `dma`, `iommu sim` and `bench sim` options on Dask.

Every row must equal what the command itself prints for that point (the same calls), a local
cluster of two worker processes must give the same table as the in-process engine, a worker
killed mid-run must not change the result, and a sweep that stopped must resume without
evaluating again the chunks it wrote.
"""

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("distributed", reason="the dask extra (pip install 'pcieperf[dask]')")
pq = pytest.importorskip("pyarrow.parquet", reason="the dask extra (pyarrow)")
pa = pytest.importorskip("pyarrow", reason="the dask extra (pyarrow)")

import duckdb  # noqa: E402

from pcieperf import engine  # noqa: E402
from pcieperf.sweep.api import checked_plan  # noqa: E402
from pcieperf.sweep.commands import COMMANDS  # noqa: E402
from pcieperf.sweep.plan import Axis, Plan, axis_indices, evaluate_chunk  # noqa: E402
from pcieperf.sweep.run import parts_dir, run, write_part  # noqa: E402
from pcieperf.sweep.spec import Spec  # noqa: E402
from tests.helpers.cli import run_cli  # noqa: E402

_sweep_dma = COMMANDS["dma"].evaluation  # `dma` points as `pp.sweep` evaluates them

# A fast device and a host with a small IOTLB (the numbers of tests/helpers/hosts.py's profiles).
DEVICE_TOML = """name = "dev"
source = "test"
tags = 32
read_ns = 0.0
read_line_ns = 0.0
write_ns = 20.0
write_line_ns = 0.0
datapath_ns = 0.0
datapath_line_ns = 0.0
fixed_latency_ns = 100.0
"""
HOST_TOML = """name = "host"
source = "test"
mps = 256
mrrs = 512
completion_policy = "mps"
addr64 = true
llc_latency_ns = 400.0
ddio_latency_ns = 380.0
dram_latency_ns = 480.0
remote_extra_ns = 80.0
llc_bytes = 8388608
ddio_bytes = 1048576
write_line_ns = 0.0
partial_line_ns = 30.0
posted_credits = 64
iotlb_entries = 64
walk_ns = 300.0
walk_busy_ns = 50.0
walkers = 1
"""

# One spec per command; every one has at least two axes, one of them the command's own kind of
# parameter (link, operation, ring and page, test). Small: each point is simulated or priced.
SPECS = {
    "nic": """command = "nic"
chunk = 7
[options]
profile = "dpdk"
pps = "20M"
[axes]
gen = [3, 4]
lanes = [8, 16]
vlan = [false, true]
sizes = [64, 65, 128, 1518, "imix"]
""",
    "dma": """command = "dma"
chunk = 5
[options]
offset = 32
[axes]
op = ["read", "write", "rw"]
mps = [128, 256]
sizes = { from = 60, to = 68, step = 4 }
""",
    "iommu sim": """command = "iommu sim"
chunk = 2
[options]
packets = 4000
[axes]
page = ["4k", "2m"]
rxd = [128, 1024]
frame = ["64", "imix"]
""",
    "bench sim": """command = "bench sim"
chunk = 3
[options]
host = "host.toml"
device = "device.toml"
transactions = 2000
windows = "8192,65536"
[axes]
test = ["BW_DMA_RD", "LAT_DMA_RD"]
cache = ["HWarm", "Cold"]
sizes = [64, 256]
""",
}


@pytest.fixture
def specs(tmp_path, monkeypatch):
    """The four specs (and bench sim's profiles) in a fresh current folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "host.toml").write_text(HOST_TOML)
    (tmp_path / "device.toml").write_text(DEVICE_TOML)
    paths = {}
    for name, text in SPECS.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.toml"
        paths[name].write_text(text)
    return paths


def make_plan(path, evaluate=None):
    """The plan `pp.sweep` makes of a spec file (optionally with another evaluation)."""
    return checked_plan(Path(path), evaluate)


def sweep_cli(capsys, *argv):
    code, out, err = run_cli(capsys, "sweep", *map(str, argv), "--json")
    assert code == 0, err
    return json.loads(out)


def command_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def spec_argv(plan, row):
    """The command line of the point a sweep row came from."""
    words = plan.spec.command.split()
    for name, value in [*plan.spec.options.items(), *((a, row[a]) for a in plan.spec.axes)]:
        if isinstance(value, bool):
            words += [f"--{name}"] if value else []
        else:
            words.append(f"--{name.replace('_', '-')}={value}")
    return words


# ---------------------------------------------------------------------------------------------
# Rows are the commands' own results


def _present(value: object) -> object:
    """A Parquet struct has every key any row has (null where a row has none, e.g. the
    `iommu_walks` bound of a 2 MiB-page point); the command prints only those present."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


@pytest.mark.parametrize("command", list(SPECS))
def test_every_row_is_what_the_command_prints(specs, capsys, command):
    out = sweep_cli(capsys, specs[command], "-o", "out.parquet")
    table = pq.read_table("out.parquet").to_pylist()
    plan = make_plan(specs[command])
    per_point = {"nic": 1, "dma": 1, "iommu sim": 1, "bench sim": 2}[command]  # 2 windows
    # the product of the axes' lengths: 2*2*2*5, 3*2*3 (60..68 step 4), 2*2*2, 2*2*2
    assert (
        out["points"]
        == plan.points
        == {"nic": 40, "dma": 18, "iommu sim": 8, "bench sim": 8}[command]
    )
    assert out["rows"] == len(table) == plan.points * per_point
    assert out["chunks"] == out["chunks_evaluated"] == -(-plan.points // plan.spec.chunk)
    for start in range(0, len(table), per_point):
        rows = table[start : start + per_point]
        printed = command_json(capsys, *spec_argv(plan, rows[0]))
        printed = printed if isinstance(printed, list) else [printed]
        assert len(printed) == per_point
        for row, expected in zip(rows, printed, strict=True):
            for key, value in expected.items():
                if key in row and key not in plan.spec.axes:  # an axis column is as given
                    assert _present(row[key]) == (
                        str(value) if key == "size" and command == "nic" else value
                    ), key
    assert not Path("out.parquet.parts").exists()  # the parts are gone once joined


def test_output_is_readable_by_duckdb_with_the_spec_in_its_metadata(specs, capsys):
    sweep_cli(capsys, specs["dma"], "-o", "dma.parquet")
    # A 64 B read from offset 32 (hand-computed): one read request up (64 B < MRRS 512), and
    # the completer splits the data at every 64 B Read Completion Boundary (the default
    # --completion rcb): bytes 32..63 and 64..95, two completions down.
    rows = duckdb.sql(
        "select op, mps, size, tlps_up, tlps_down from 'dma.parquet' "
        "where op = 'read' and mps = 128 and size = 64"
    ).fetchall()
    assert rows == [("read", 128, 64, 1, 2)]
    meta = json.loads(pq.read_schema("dma.parquet").metadata[b"pcieperf.sweep"])
    assert meta["command"] == "dma"
    assert meta["axes"]["sizes"] == [60, 64, 68]  # the range, expanded (to included)


def test_sizes_are_joined_into_one_call_per_run(specs):
    calls = []

    def counting(args):
        calls.append(args["sizes"])
        return COMMANDS["nic"].evaluation(args)

    plan = make_plan(specs["nic"], counting)
    assert plan.vector == 3  # sizes, the last axis
    table = evaluate_chunk(plan, plan.bounds(0))
    # chunk 0 = points 0..6: the five sizes of (gen 3, x8, no vlan), then two of the next run.
    assert calls == ["64,65,128,1518,imix", "64,65"]
    assert table.num_rows == 7


def test_a_mix_axis_keeps_sizes_apart(tmp_path, capsys, monkeypatch):
    # `nic --sizes 64 --mix M` prints the size's row, then the mix's: joining sizes would put
    # the mix rows after all sizes, so a mix on an axis turns joining off.
    monkeypatch.chdir(tmp_path)
    spec = write_spec(
        tmp_path, 'command = "nic"\n[axes]\nmix = ["64:7,1518:1", "128:1"]\nsizes = [64, 256]\n'
    )
    plan = make_plan(spec)
    assert plan.vector is None
    rows = sweep_cli(capsys, spec, "-o", "m.parquet")["rows"]
    table = pq.read_table("m.parquet").to_pylist()
    assert rows == len(table) == 4 * 2  # 4 points, each a size row and a mix row
    for start in range(0, len(table), 2):
        printed = command_json(capsys, *spec_argv(plan, table[start]))
        assert [r["max_pps"] for r in table[start : start + 2]] == [p["max_pps"] for p in printed]


# ---------------------------------------------------------------------------------------------
# One engine: in-process, local:2, tcp://


def in_process_table(plan, out):
    with engine.connect(engine.Scheduler()) as client:
        run(plan, out, client, force=False)
    return pq.read_table(out)


def test_local2_gives_the_in_process_table_for_every_command(specs, local2, tmp_path):
    for command, path in specs.items():
        plan = make_plan(path)
        expected = in_process_table(plan, tmp_path / f"{command}-1.parquet")
        summary = run(plan, tmp_path / f"{command}-2.parquet", local2, force=False)
        assert summary["workers"] == 2
        assert pq.read_table(tmp_path / f"{command}-2.parquet").equals(expected), command


def test_the_command_line_with_local2_gives_the_in_process_file(specs, capsys):
    assert sweep_cli(capsys, specs["dma"], "-o", "a.parquet")["scheduler"] == "in-process"
    summary = sweep_cli(capsys, specs["dma"], "-o", "b.parquet", "--scheduler", "local:2")
    assert summary["scheduler"] == "local:2"
    assert summary["workers"] == 2
    assert pq.read_table("a.parquet").equals(pq.read_table("b.parquet"))


def killing_once(marker):
    """A dma evaluation that ends its worker process the first time it runs anywhere."""

    def evaluate(args):
        if not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)  # the worker dies mid-task, as on an OOM kill
        return _sweep_dma(args)

    return evaluate


def test_a_worker_killed_mid_run_changes_nothing(specs, local2, tmp_path):
    plan = make_plan(specs["dma"])
    expected = in_process_table(plan, tmp_path / "expected.parquet")
    killing = make_plan(specs["dma"], killing_once(str(tmp_path / "killed")))
    summary = run(killing, tmp_path / "out.parquet", local2, force=False)
    assert (tmp_path / "killed").exists()  # a worker did die
    assert summary["chunks_evaluated"] == plan.chunks
    assert pq.read_table(tmp_path / "out.parquet").equals(expected)


def test_tcp_scheduler_gives_the_in_process_table(specs, capsys, tmp_path):
    from distributed import LocalCluster

    in_process = sweep_cli(capsys, specs["nic"], "-o", "a.parquet")
    with LocalCluster(
        processes=False,
        n_workers=2,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        remote = sweep_cli(capsys, specs["nic"], "-o", "b.parquet", "--scheduler", address)
    assert remote["scheduler"] == address
    assert in_process["scheduler"] == "in-process"
    assert pq.read_table("a.parquet").equals(pq.read_table("b.parquet"))


# ---------------------------------------------------------------------------------------------
# Resume


class CrashError(Exception):
    """Stands for the driver dying (power, OOM kill) after some parts were written."""


def crash(*_):
    raise CrashError


def crash_after_two(written):
    """A part writer that writes two parts (their chunks appended to `written`), then dies."""

    def write(parts, index, table):
        if len(written) == 2:
            raise CrashError
        write_part(parts, index, table)
        written.append(index)

    return write


def test_a_stopped_sweep_resumes_without_evaluating_written_chunks(specs, tmp_path):
    calls = tmp_path / "calls"

    def counting_into(path):
        def counting(args):
            with path.open("a") as f:  # one line per evaluation, whatever thread runs it
                f.write(f"{args['op']} {args['mps']} {args['sizes']}\n")
            return _sweep_dma(args)

        return counting

    plan = make_plan(specs["dma"])
    expected = in_process_table(plan, tmp_path / "expected.parquet")
    out = tmp_path / "out.parquet"
    written = []

    with engine.connect(engine.Scheduler()) as client:
        with pytest.raises(CrashError):
            run(
                # the crashed run's own file: its chunks still in flight may finish later
                make_plan(specs["dma"], counting_into(tmp_path / "crashed")),
                out,
                client,
                force=False,
                write=crash_after_two(written),
            )
        assert not out.exists()
        assert sorted(p.name for p in parts_dir(out).glob("part-*")) == [
            f"part-{i:08d}.parquet" for i in sorted(written)
        ]
        summary = run(make_plan(specs["dma"], counting_into(calls)), out, client, force=False)
    # 18 points in chunks of 5 = 4 chunks (5, 5, 5, 3 points); 2 were written before the crash.
    assert summary["chunks_resumed"] == 2
    assert summary["chunks_evaluated"] == 2
    resumed_points = sum(plan.bounds(i)[2] - plan.bounds(i)[1] for i in written)
    # sizes is a range axis joined per run, so count points, not calls: each line names its sizes
    evaluated = sum(len(line.split()[2].split(",")) for line in calls.read_text().splitlines())
    assert evaluated == plan.points - resumed_points
    assert pq.read_table(out).equals(expected)


def test_a_part_a_crash_cut_short_is_done_again(specs, tmp_path):
    # Parts are written without an fsync (sweep.write_part): after a power loss a part may be
    # a name with no whole file behind it; the resumed sweep reads each part's Parquet footer
    # and redoes the chunk of one that has none, so the output is the uninterrupted one.
    plan = make_plan(specs["dma"])
    expected = in_process_table(plan, tmp_path / "expected.parquet")
    out = tmp_path / "out.parquet"
    written = []

    with engine.connect(engine.Scheduler()) as client:
        with pytest.raises(CrashError):
            run(plan, out, client, force=False, write=crash_after_two(written))
        cut = parts_dir(out) / f"part-{written[0]:08d}.parquet"
        cut.write_bytes(cut.read_bytes()[:10])  # what the page cache had not yet written
        summary = run(plan, out, client, force=False)
    assert (summary["chunks_resumed"], summary["chunks_evaluated"]) == (1, 3)  # 4 chunks
    assert pq.read_table(out).equals(expected)


def test_progress_counts_points_and_starts_at_what_was_resumed(specs, tmp_path, monkeypatch):
    seen = []

    class Bar:
        def __init__(self, total):
            self.total, self.updates = total, []

        def update(self, amount=1):
            self.updates.append(amount)

    from contextlib import contextmanager

    @contextmanager
    def bar(total, desc, unit="it", **_):
        seen.append(Bar(total))
        yield seen[-1]

    monkeypatch.setattr(engine.progress, "bar", bar)
    plan = make_plan(specs["dma"])
    out = tmp_path / "out.parquet"
    with engine.connect(engine.Scheduler()) as client:
        with pytest.raises(CrashError):
            run(plan, out, client, force=False, write=crash)
        parts = parts_dir(out)
        write_part(parts, 1, evaluate_chunk(plan, plan.bounds(1)))  # chunk 1 done
        run(plan, out, client, force=False)
    # 18 points in chunks of 5: chunk 1 (5 points) resumed, counted first; then 5, 5 and 3
    # as the futures of chunks 0, 2 and 3 finish (in any order).
    assert seen[-1].total == plan.points == 18
    assert seen[-1].updates[0] == 5
    assert sorted(seen[-1].updates[1:]) == [3, 5, 5]


# ---------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, before any work


def write_spec(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('command = "link"\n[axes]\ngen = [3]\n', "command 'link' is not allowed"),
        ('command = "dma"\n[axes]\n', "[axes] a non-empty table"),
        ('command = "dma"\n[axes]\nsizes = []\n', "give a non-empty list or a range"),
        ('command = "dma"\nrows = 3\n[axes]\nmps = [128]\n', "unknown key 'rows'"),
        ('command = "dma"\nchunk = 0\n[axes]\nmps = [128]\n', "chunk 0 is not allowed"),
        ('command = "dma"\n[axes]\nmps = { from = 9, to = 1 }\n', "from <= to"),
        ('command = "dma"\n[axes]\nmps = [[128]]\n', "give a number, string or boolean"),
        ('command = "dma"\n[options]\nmps = 128\n[axes]\nmps = [128]\n', "both a fixed option"),
        ('command = "dma"\n[axes]\nmtu = [1500]\n', "'mtu' is not a sweepable option of `dma`"),
        ('command = "nic"\n[axes]\ntrace = ["a.pcap"]\n', "'trace' is not a sweepable option"),
        # the API's own checks: the link's generation, dma's operation
        ('command = "dma"\n[axes]\ngen = ["x"]\n', "(gen='x'): generation 'x' is not allowed"),
        ('command = "dma"\n[axes]\nop = ["read", "fly"]\n', "(op='fly'): operation 'fly' is not"),
        ('command = "dma"\n[axes]\naddr32 = [1]\n', "addr32 = 1 is not allowed; use true/false"),
        ('command = "dma"\n[axes]\nmps = [100, 256]\n', "point 0 of 2 (mps=100): MPS 100"),
        ('command = "nic"\n[axes]\ngen = [3]\n', "give frame sizes with `sizes`"),
        ("command = [\n", ".toml: not valid TOML"),
    ],
)
def test_a_bad_spec_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    code, _out, err = run_cli(
        capsys, "sweep", str(write_spec(tmp_path, text)), "-o", str(tmp_path / "o.parquet")
    )
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert message in err, err
    assert not (tmp_path / "o.parquet").exists()
    assert not parts_dir(tmp_path / "o.parquet").exists()  # failed before any work


def test_nothing_the_user_gave_is_overwritten_without_force(specs, capsys, tmp_path):
    (tmp_path / "keep.parquet").write_text("mine")
    code, _, err = run_cli(capsys, "sweep", str(specs["dma"]), "-o", "keep.parquet")
    assert code == 2
    assert "exists; pass --force" in err
    assert (tmp_path / "keep.parquet").read_text() == "mine"
    (tmp_path / "x.parquet.parts").mkdir()
    (tmp_path / "x.parquet.parts" / "mine.txt").write_text("mine")
    for force in ([], ["--force"]):  # a folder that is not ours is never deleted
        code, _, err = run_cli(capsys, "sweep", str(specs["dma"]), "-o", "x.parquet", *force)
        assert code == 2
        assert "is not a pcieperf sweep's parts folder" in err
    assert (tmp_path / "x.parquet.parts" / "mine.txt").read_text() == "mine"
    assert sweep_cli(capsys, specs["dma"], "-o", "keep.parquet", "--force")["rows"] == 18


def test_parts_of_another_spec_are_kept_unless_forced(specs, capsys, tmp_path):
    plan = make_plan(specs["dma"])
    with engine.connect(engine.Scheduler()) as client, pytest.raises(CrashError):
        run(plan, tmp_path / "o.parquet", client, force=False, write=crash)
    code, _, err = run_cli(capsys, "sweep", str(specs["nic"]), "-o", "o.parquet")
    assert code == 2
    assert "holds the parts of another sweep" in err
    assert sweep_cli(capsys, specs["nic"], "-o", "o.parquet", "--force")["rows"] == 40


# ---------------------------------------------------------------------------------------------
# Grid arithmetic


@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
)
def test_axis_indices_are_the_mixed_radix_digits_of_the_point(sizes, data):
    axes = tuple(Axis(f"a{i}", list(range(n)), list(range(n))) for i, n in enumerate(sizes))
    spec = Spec("s", "dma", {}, {a.dest: a.given for a in axes}, 1)
    plan = Plan(spec, _sweep_dma, {}, axes, None, "")
    start = data.draw(st.integers(0, plan.points - 1))
    stop = data.draw(st.integers(start + 1, plan.points))
    idx = axis_indices(plan, start, stop)
    for point, digits in zip(range(start, stop), idx.tolist(), strict=True):
        value = 0
        for digit, n in zip(digits, sizes, strict=True):
            assert 0 <= digit < n
            value = value * n + digit  # the last axis fastest
        assert value == point


@given(chunk=st.integers(1, 18), data=st.data())
def test_the_table_does_not_depend_on_the_chunk_size(tmp_path_factory, chunk, data):
    # The same grid cut into chunks of any size, joined in order, is the same table: joining
    # sizes inside a chunk (runs cut at chunk edges) changes nothing, value for value.
    folder = tmp_path_factory.mktemp("chunks")
    order = data.draw(st.permutations(["op", "mps", "sizes"]))  # sizes last or not
    axes = {"op": '["read", "rw"]', "mps": "[128, 512]", "sizes": "[60, 64, 65, 1500]"}
    lines = "".join(f"{name} = {axes[name]}\n" for name in order)
    whole = make_plan(write_spec(folder, f'command = "dma"\nchunk = 16\n[axes]\n{lines}'))
    cut = make_plan(write_spec(folder, f'command = "dma"\nchunk = {chunk}\n[axes]\n{lines}', "c"))
    tables = [evaluate_chunk(cut, cut.bounds(i)) for i in range(cut.chunks)]
    assert pa.concat_tables(tables).equals(evaluate_chunk(whole, whole.bounds(0)))

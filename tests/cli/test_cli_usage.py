"""Issue 13's bad cases, one regression test each: outputs checked before any work, absurd rates
refused, rates beyond the link warned about, progress bars only on a terminal, --quiet."""

import json
import os
import subprocess
import sys

import pytest

from pcieperf.errors import UsageError, require_new_file, require_new_folder
from pcieperf.pciebench import predict
from pcieperf.units import parse_int_list, parse_rate
from tests.helpers import TESTS_DATA
from tests.helpers.cli import run_cli as run

PCM = TESTS_DATA / "counters" / "pcm-iio-skx.csv"  # a pcm-iio sample
CAPTURE = TESTS_DATA / "dpdk2211" / "one-lcore-640.pcap"


def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_bench_predict_into_an_existing_file_fails_before_simulating(tmp_path, monkeypatch):
    # It used to simulate all 1376 rows and then fail with FileExistsError (exit 1).
    def no_simulation(*_args, **_kwargs):
        raise AssertionError("simulated before checking --out")

    monkeypatch.setattr(predict, "simulate", no_simulation)
    out = tmp_path / "predicted.csv"
    out.write_text("mine")
    with pytest.raises(UsageError, match="is a file; give a folder"):
        predict.predict_files(None, None, out)
    assert out.read_text() == "mine"


def test_report_into_an_existing_file_is_a_usage_error(capsys, tmp_path):
    # It used to end in NotADirectoryError ("internal error", exit 1).
    target = tmp_path / "report.html"
    target.write_text("mine")
    code, _, err = run(capsys, "report", "-o", str(target))
    assert code == 2
    assert "exists and is not a folder" in one_error_line(err)
    assert target.read_text() == "mine"


def test_report_into_a_missing_parent_is_a_usage_error(capsys, tmp_path):
    code, _, err = run(capsys, "report", "-o", str(tmp_path / "no" / "such" / "dir"))
    assert code == 2
    assert "does not exist" in one_error_line(err)


@pytest.mark.parametrize("rate", ["1e30", "2e12", "1000000G"])
def test_absurd_rates_are_usage_errors(capsys, rate):
    # 1e30 used to print a 30-digit rate and exit 0; the limit is 1e12 per second.
    code, out, err = run(capsys, "dpdk-fwd", "--pps", rate)
    assert code == 2
    assert out == ""
    assert "above 1e12" in one_error_line(err)


def test_the_rate_limit_itself_is_allowed():
    assert parse_rate("1e12") == 1e12
    assert parse_rate("1000G") == 1e12


def test_a_rate_beyond_the_link_warns_and_still_answers(capsys):
    # 100 Mpps of 64 B frames needs 100e6 x 183.25 B x 8 = 146.6 Gb/s up on Gen3 x8, which
    # carries 62.2 (dpdk-fwd's own estimate); the link caps forwarding at 42.44 Mpps.
    code, out, err = run(capsys, "dpdk-fwd", "--pps", "100M", "--json")
    assert code == 0
    assert json.loads(out)["max_pps"] == pytest.approx(42.44e6, rel=1e-3)
    line = one_error_line(err)
    assert line.startswith("pcieperf: warning: 100 Mpps needs 146.6 Gb/s up")
    assert "at most 42.44 Mpps" in line


def test_a_rate_within_the_link_does_not_warn(capsys):
    code, _, err = run(capsys, "dpdk-fwd", "--pps", "10M")
    assert code == 0
    assert err == ""


def test_nic_warns_for_the_sizes_the_rate_does_not_fit(capsys):
    # 40 GbE carries 40e9 / ((1518 + 20) * 8) = 3.25 Mpps of 1518 B frames, 59.5 Mpps of 64 B
    # frames: 20 Mpps is over the line only at 1518.
    code, _, err = run(capsys, "nic", "--sizes", "64,1518", "--pps", "20M")
    assert code == 0
    line_warning = [w for w in err.splitlines() if "the line carries" in w]
    assert line_warning == [
        "pcieperf: warning: 20 Mpps is more than the line carries for size 1518 (at most 3.25 Mpps)"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["iommu", "sim", "--packets", "99999999999999999999999"], "use 1 to 1000000000"),
        (["iommu", "sim", "--packets", "0"], "use 1 to 1000000000"),
        (["bench", "sim", "--host", "h", "--device", "d", "--transactions", "-1"], "use 1 to"),
        (["link", "--ack-interval", "nan"], "give a finite number"),
        (["dpdk-fwd", "--batch", "inf"], "give a finite number"),
        (["dma", "--offset", "1.5"], "is not a whole number"),
        # Found by the CLI property test: an empty path name with --trace was an AttributeError.
        (["nic", "--trace", "x.pcap", "--paths", ""], "path '' is not allowed"),
        # The CLI property test found `dpdk run --seconds 2305843009213693952` forwarding forever.
        (["dpdk", "run", "--seconds", "2305843009213693952"], "the most is 86400"),
        (["dma", "--sizes", "99999999999999999999999"], "too large"),
        # Found by scripts/hostile_probe.py (issue 28): an empty --delimiter was a ValueError
        # ("empty separator"), a window past 64-bit nanoseconds an OverflowError.
        (
            ["explain", "--counters", str(PCM), "--pps", "10M", "--frame", "64", "--delimiter="],
            "--delimiter '' is not allowed; give one character",
        ),
        (["trace", "demand", str(CAPTURE), "--window", "1e30"], "the longest is 1e+09 s"),
        (["nic", "--trace", str(CAPTURE), "--window", str(10**20)], "the longest is 1e+09 s"),
        # ... and a path the system refuses (ENAMETOOLONG here; EACCES for a user) an OSError
        # from Path.is_dir, wherever a command first touched it.
        (["latency", "--host", "n" * 300], f"{'n' * 300}: File name too long"),
        (["validate", "--measured", "n" * 300, "--predicted", "p"], "File name too long"),
    ],
)
def test_huge_and_non_finite_numbers_are_usage_errors(capsys, argv, message):
    # These used to escape as OverflowError / ValueError: "internal error", exit 1.
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in one_error_line(err)


def test_size_lists_are_bounded():
    assert parse_int_list("64,2147483648", "size") == [64, 2**31]
    with pytest.raises(UsageError, match="too large"):
        parse_int_list("2147483649", "size")


def test_outputs_must_be_regular_files(tmp_path):
    fifo = tmp_path / "out.pcap"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        require_new_file(fifo, force=True)
    with pytest.raises(UsageError, match="not a regular file"):
        require_new_file("/dev/null", force=True)
    with pytest.raises(UsageError, match="is a folder"):
        require_new_file(tmp_path, force=True)
    with pytest.raises(UsageError, match="does not exist"):
        require_new_file(tmp_path / "missing" / "x.png", force=False)
    with pytest.raises(UsageError, match="exists; pass `force`"):
        require_new_file(__file__, force=False)
    require_new_file(__file__, force=True)  # an existing regular file with --force is fine


def test_output_folders(tmp_path):
    require_new_folder(tmp_path / "new", force=False)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(UsageError, match="not empty"):
        require_new_folder(tmp_path / "full", force=False)
    require_new_folder(tmp_path / "full", force=True)


def test_plot_checked_before_the_sweep(capsys, tmp_path):
    # iommu advise sweeps for seconds; an unusable plot file is refused first.
    code, _, err = run(capsys, "iommu", "advise", "--plot", str(tmp_path / "advice.pdf"))
    assert code == 2
    assert "must end in .png or .svg" in one_error_line(err)


def test_a_query_does_not_create_the_store(capsys, tmp_path):
    store = tmp_path / "new.duckdb"
    code, out, _ = run(capsys, "dpdk", "runs", "--json", "--db", str(store))
    assert code == 0
    assert json.loads(out) == []
    assert not store.exists()


def test_a_file_that_is_not_a_store_is_a_usage_error(capsys, tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a database")
    code, _, err = run(capsys, "counters", "ls", "--db", str(bogus))
    assert code == 2
    assert f"cannot open the store {bogus}" in one_error_line(err)


def test_no_progress_noise_when_stderr_is_not_a_terminal(tmp_path):
    # iommu gain shows a bar on a terminal; into a pipe (a log file) it writes nothing at all.
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "iommu", "gain", "--sizes", "64"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_bars_are_drawn_on_a_terminal_and_quiet_silences_them():
    # A pseudo-terminal as stderr, as a person's shell gives it.
    pty = pytest.importorskip("pty")
    drawn = _stderr_on_a_terminal(pty, ["iommu", "gain", "--sizes", "64,128"])
    assert "simulating" in drawn
    assert "simulating" not in _stderr_on_a_terminal(pty, ["iommu", "gain", "--sizes", "64", "-q"])


def _stderr_on_a_terminal(pty, argv):
    """Run the CLI with stderr on a pseudo-terminal of 100 columns; returns what it drew."""
    import fcntl
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcieperf.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=600) == 0
    os.close(leader)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("command", [["trace", "convert"], ["counters", "import"]])
def test_a_link_loop_given_as_input_is_named_in_one_line(capsys, tmp_path, command):
    # scripts/hostile_probe.py (issue 28): Path.resolve raised RuntimeError("Symlink loop")
    # (Python 3.11) before the file was opened; open(2) says ELOOP.
    loop = tmp_path / "loop.pcap"
    loop.symlink_to(loop)
    outputs = [str(tmp_path / "o.pcapng")] if command[0] == "trace" else []
    db = ["--db", str(tmp_path / "s.duckdb")] if command[0] == "counters" else []
    code, _, err = run(capsys, *command, str(loop), *outputs, *db)
    assert code == 2
    assert f"{loop}: Too many levels of symbolic links" in one_error_line(err)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["nic", "--window", "nan"], "--window only goes with --trace"),
        (["nic", "--skip-bad", "--window", "5ms"], "--window, --skip-bad only go with --trace"),
        (["dpdk-fwd", "--poll", "2us"], "--poll only goes with --trace"),
    ],
)
def test_a_companion_of_trace_without_it_is_refused(capsys, argv, named):
    # Issue 28's probe found `nic --window=nan` accepted and ignored: a companion of --trace
    # is read only from a capture, so without one it is an error, not silence.
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert named in err

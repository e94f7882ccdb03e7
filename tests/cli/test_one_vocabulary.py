"""One vocabulary (issue 44): a parameter is checked by one rule in every command that takes it,
units are read as people write them, counted nouns agree with their count, every --help shows
its defaults, and `-q` leaves out what only confirms a written file."""

import json

import pytest

from pcieperf.text import plural
from tests.helpers import TESTS_DATA
from tests.helpers.cli import refused, run_cli

PCM = str(TESTS_DATA / "counters" / "pcm-iio-skx.csv")
FRAME_COMMANDS = [
    ["nic", "--sizes"],
    ["latency", "--sizes"],
    ["dpdk-fwd", "--frame"],
    ["iommu", "sim", "--frame"],
    ["capture", "model", "--sizes"],
    ["explain", "--counters", PCM, "--pps", "7M", "--frame"],
]
RATE_COMMANDS = [
    ["nic", "--sizes", "64", "--pps"],
    ["latency", "--pps"],
    ["dpdk-fwd", "--pps"],
    ["capture", "model", "--pps"],
    ["explain", "--counters", PCM, "--frame", "64", "--pps"],
    ["iommu", "fit", "--counters", PCM, "--pps"],
]


@pytest.mark.parametrize("frame", ["32", "20000"])
@pytest.mark.parametrize("command", FRAME_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_frame_size_is_refused_alike_everywhere(capsys, command, frame):
    # 802.3's smallest frame is 64 B (clause 4.4.2); 9216 B the usual jumbo maximum.
    err = refused(capsys, *command, frame)
    assert f"frame size {frame} is not allowed; use 64 to 9216 bytes" in err


@pytest.mark.parametrize("rate", ["0", "-5M"])
@pytest.mark.parametrize("command", RATE_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_packet_rate_is_refused_alike_everywhere(capsys, command, rate):
    err = refused(capsys, *command, rate)
    assert f"packet rate '{rate}' is not allowed; give a rate above 0" in err


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        (["--eth", "25G"], ["--eth", "25"]),
        (["--eth", "25GbE"], ["--eth", "25"]),
        (["--lanes", "x16"], ["--lanes", "16"]),
        (["--gen", "3.0"], ["--gen", "3"]),
        (["--gen", "gen4"], ["--gen", "4"]),
    ],
)
def test_units_are_read_as_people_write_them(capsys, written, plain):
    got = run_cli(capsys, "nic", "--sizes", "64", "--json", *written)
    want = run_cli(capsys, "nic", "--sizes", "64", "--json", *plain)
    assert got[0] == 0, got[2]
    assert json.loads(got[1]) == json.loads(want[1])


def test_a_half_lane_is_still_refused(capsys):
    assert "'x1.5' is not a whole number" in refused(capsys, "link", "--lanes", "x1.5")


def test_counted_nouns_agree_with_their_count():
    assert [plural(1, "file"), plural(2, "file"), plural(1.0, "lcore")] == [
        "1 file",
        "2 files",
        "1 lcore",
    ]
    assert plural(2.5, "copy", "copies") == "2.5 copies"


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["nic"], "(default: 40, or --device's)"),
        (["nic"], "(default: testpmd-fwd, or --device's)"),
        (["trace", "demand"], "(default: 3)"),
        (["iommu", "gain"], "(default: 64,128,256,imix)"),
    ],
)
def test_help_shows_the_defaults(capsys, command, shown):
    code, out, _ = run_cli(capsys, *command, "--help")
    assert code == 0
    assert shown in " ".join(out.split())


def test_a_per_cent_in_a_description_is_shown_once(capsys):
    _, out, _ = run_cli(capsys, "explain", "--help")
    assert "15 %" in out
    assert "%%" not in out


def test_quiet_leaves_out_what_only_confirms_a_written_file(capsys, tmp_path):
    out = tmp_path / "x.pcap"
    synth = ("trace", "synth", "--duration", "1ms", "-o", str(out))
    assert run_cli(capsys, *synth, "-q") == (0, "", "")
    assert out.stat().st_size > 0
    code, said, _ = run_cli(capsys, *synth, "--force")
    assert code == 0
    assert said.startswith("1000 packets")  # 1 ms at the default 1 Mpps

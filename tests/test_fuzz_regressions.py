"""Regressions for the crashes the fuzz targets (fuzz/python/targets.py, fuzz/README.md) found,
each with its input as literal bytes, and a short hypothesis run of every target so the
harness itself cannot rot: each parser returns or raises PcieperfError, nothing else."""

import contextlib
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcieperf.errors import CounterFileError, PcieperfError, ProfileError, UsageError
from pcieperf.iommu.platform import load_platform
from pcieperf.measure import counters
from pcieperf.net import ethernet
from pcieperf.nic.profile import load_profile
from pcieperf.pciebench import sim
from pcieperf.pciebench.calibration_file import load_calibration
from pcieperf.pciebench.device import load_device
from pcieperf.pciebench.host import parse_host_facts
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "fuzz" / "python"))
import targets

# Latin-1 "café": 0xe9 opens a 3-byte UTF-8 sequence, and `"` is no continuation byte
# (RFC 3629 §3), so this is not UTF-8.
LATIN1_TOML = b'name = "caf\xe9"\n'


def test_pcm_iio_name_column_after_the_row_end_is_a_truncated_row(tmp_path):
    # Minimized by hand from fuzz/artifacts/counter_file/bug-c5ec468dc301: the header puts
    # Name after the counters, the row stops before it. Was IndexError at cells[index["Name"]].
    path = tmp_path / "pcm.csv"
    path.write_bytes(
        b"Date,Time,Socket,Part,IB write (bytes),Name\n2026-11-21,23:08:10.123,Socket0,Part0,5\n"
    )
    # Line 2 is the row; it has 5 fields, Name is the 6th column.
    with pytest.raises(CounterFileError, match="line 2: truncated row"):
        counters.parse(path, "pcm-iio")


@pytest.mark.parametrize(
    "load",
    [sim.load_host, load_device, load_calibration, load_platform],
    ids=["host", "device", "calibration", "platform"],
)
def test_toml_loaders_refuse_non_utf8_in_one_line(tmp_path, load):
    # Found by host_toml/device_toml/calibration_toml/platform_toml (first seconds of each):
    # UnicodeDecodeError escaped sim.load_toml. Byte 11 is the 0xe9 of "caf\xe9".
    path = tmp_path / "x.toml"
    path.write_bytes(LATIN1_TOML)
    with pytest.raises(ProfileError, match=r"x\.toml: not UTF-8 text \(byte 11: "):
        load(path)


def test_nic_profile_refuses_non_utf8_in_one_line(tmp_path):
    # Found by nic_profile at its 12th execution: UnicodeDecodeError escaped load_profile.
    path = tmp_path / "p.toml"
    path.write_bytes(LATIN1_TOML)
    with pytest.raises(ProfileError, match=r"p\.toml: not UTF-8 text \(byte 11: "):
        load_profile(str(path))


def test_a_size_mix_with_an_infinite_count_is_refused():
    # fuzz/artifacts/cli_values/bug-b8297cbfc664 (after its parser-choice byte 0x04):
    # float("78e884") is inf, and the mix came back with weights [0, nan].
    with pytest.raises(UsageError, match=r"mix '64:7,64:78e884': counts must be finite"):
        ethernet.parse_mix("64:7,64:78e884")


def test_a_size_mix_of_huge_finite_counts_keeps_its_weights():
    # Equal counts weigh 1/2 each; their sum (2e308) overflows a float, the counts do not.
    mix = ethernet.parse_mix("64:1e308,128:1e308")
    assert mix.weights.tolist() == [0.5, 0.5]


def test_a_size_mix_of_a_superscript_digit_is_refused():
    # fuzz/artifacts/cli_values/bug-568dd8df9022 (after its byte 0x3a, which picks parse_mix):
    # "¹".isdigit() is true but int("¹") raises ValueError, which escaped.
    with pytest.raises(UsageError, match="packet mix entry '¹' in '¹' is malformed"):
        ethernet.parse_mix(b"\xc2\xb9".decode())


def test_a_nic_profile_whose_rx_is_not_a_list_of_tables_is_refused(tmp_path):
    # Minimized from fuzz/artifacts/nic_profile/bug-7a8917533384 (toml_mutator made rx a
    # date): was TypeError iterating it.
    path = tmp_path / "p.toml"
    path.write_bytes(b'name = "n"\nsource = "s"\nrx = 2026-11-21\n')
    with pytest.raises(
        ProfileError, match=r"rx = datetime.date\(2026, 11, 21\); expected \[\[rx\]\]"
    ):
        load_profile(str(path))


def test_host_facts_with_an_empty_lspci_block_say_no_device(tmp_path):
    # fuzz/artifacts/host_facts/bug-11ae4131ba38 is b"\0\0": all three files empty. The empty
    # lspci block has no first line; was IndexError.
    facts = {"lspci": "", "cpuinfo": "", "dma-addrs": ""}
    with pytest.raises(UsageError, match="no device of vendor 'Netronome' found"):
        parse_host_facts(facts)


# The shipped calibration's [device] and [host] tables, shortened (src/pcieperf/calibrations).
CALIBRATION_HEAD = (
    b'[device]\nname = "d"\nsource = "s"\ntags = 25\nread_ns = 6.9\nread_line_ns = 8.9\n'
    b"write_ns = 18.1\nwrite_line_ns = 3.0\ndatapath_ns = 3.9\ndatapath_line_ns = 5.4\n"
    b"fixed_latency_ns = 0.0\n"
    b"[host]\nwrite_line_ns = 9.8\npartial_line_ns = 2.0\nwalk_busy_ns = 50.8\nwalkers = 1\n"
    b'posted_credits = 64\ncompletion_policy = "mps"\n'
)


@pytest.mark.parametrize(
    ("fit", "message"),
    [
        # Minimized from fuzz/artifacts/calibration_toml/bug-157232629f23 (toml_mutator turned
        # hosts into 0): was TypeError from zip().
        (b"hosts = 0", r"\[fit\]: hosts = 0; expected a list of text"),
        # Was ValueError from int("x"), and TypeError from list(3).
        (b'points = "x"', r"\[fit\]: points = 'x'; expected a whole number >= 0"),
        (b"left_out = 3", r"\[fit\]: left_out = 3; expected a list of text"),
        (
            b'mape_pct = ["a"]',
            r"\[fit\]: mape_pct = \['a'\]; expected a list of finite numbers >= 0",
        ),
    ],
)
def test_calibration_fit_table_types_are_checked(tmp_path, fit, message):
    path = tmp_path / "cal.toml"
    path.write_bytes(CALIBRATION_HEAD + b"[fit]\n" + fit + b"\n")
    with pytest.raises(ProfileError, match=message):
        load_calibration(path)


def test_calibration_with_a_valid_fit_table_still_loads(tmp_path):
    path = tmp_path / "cal.toml"
    path.write_bytes(
        CALIBRATION_HEAD + b'[fit]\nhosts = ["a", "b"]\nmape_pct = [2.5, 3]\npoints = 7\n'
    )
    cal = load_calibration(path)
    # The values written above, hosts paired with their MAPE in order.
    assert cal.fit_mape_pct == {"a": 2.5, "b": 3}
    assert cal.points == 7
    assert cal.left_out == []


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=512))
def test_every_fuzz_target_returns_or_raises_ours(name, data):
    with contextlib.suppress(PcieperfError):  # anything else fails the test
        targets.TARGETS[name](data)

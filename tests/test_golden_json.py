"""Every command's JSON is what it was when recorded (issue 30: a restructuring must not change
a single output): scripts/golden_json.py replays the README's lines, every --help example and a
line per shipped NIC profile and platform, and compares them with tests/data/golden/. Floats
may differ in their last bits on another CPU (numpy picks SIMD kernels per CPU, BLAS sums in
another order), and a least-squares fit multiplies such a difference by its condition number:
`bench calibrate`'s read_ns moved by 2.7e-9 between two machines (issue 41) and between two
replays here, one beside other work. So floats are compared to 1e-6, 370 times the largest
drift seen; everything else exactly, and values that describe the machine
(golden_json.MACHINE_FORMS) by their form. After an intended change:
`python scripts/golden_json.py record`, and say why in the commit."""

import pytest

from tests.helpers import SHARED
from tests.helpers.scripts import golden_json

REL = 1e-6


@pytest.fixture(scope="module")
def replayed():
    return golden_json.replay_all()


@pytest.mark.parametrize("suite", ["readme", "examples", "recorded"])
def test_every_json_is_the_recorded_one(suite, replayed):
    assert golden_json.differences(suite, replayed[suite], REL) == []


def test_the_replay_covers_the_docs_and_every_shipped_profile_and_platform(replayed):
    # 6 NIC profiles and 6 platforms shipped (nic/profiles/, iommu/platforms/) at recording.
    assert len(replayed["recorded"]) == len(golden_json.golden("recorded")) == 12
    # every runnable README line replayed: 48 of 56 (7 need DPDK or report, one reads the
    # machine it runs on: `pcieperf devices`)
    if SHARED.is_dir():
        assert len(replayed["readme"]) == len(golden_json.golden("readme")) == 48


def test_a_changed_number_or_key_is_a_difference():
    want = {"mpps": 48.21, "limited_by": "read_requests"}
    assert golden_json.close(
        {"mpps": 48.21 * (1 + 1e-12), "limited_by": "read_requests"}, want, REL
    )
    assert not golden_json.close({"mpps": 48.22, "limited_by": "read_requests"}, want, REL)
    assert not golden_json.close({"mpps": 48.21, "limited_by": "pcie_up"}, want, REL)
    assert not golden_json.close({"mpps": 48.21}, want, REL)
    assert not golden_json.close(1, 1.0000001, 0.0)
    assert golden_json.close({"ns": 1.15e-36}, {"ns": 1.39e-36}, REL)  # zero, as a fit gives it
    assert not golden_json.close({"ns": 1e-9}, {"ns": 2e-9}, REL)


def test_the_machine_is_checked_for_its_form_not_its_text():
    intel = {"this_machine": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz, 16 CPUs"}
    amd = {"this_machine": "AMD EPYC, 2 CPUs"}
    assert golden_json.steady(intel, {}) == golden_json.steady(amd, {})
    assert golden_json.steady({"this_machine": "16"}, {}) == {"this_machine": "16"}
    assert golden_json.steady({"measured_here": False}, {}) == {"measured_here": "<machine>"}


def test_volatile_values_are_placeholders_and_paths_are_the_clones():
    value = {"seconds": 1.5, "out": "/tmp/x/pcieperf/a.png", "rows": [{"imported_at": "2026"}]}
    steady = golden_json.steady(value, {"/tmp/x/pcieperf": "<work>"})
    assert steady == {
        "seconds": "<volatile>",
        "out": "<work>/a.png",
        "rows": [{"imported_at": "<volatile>"}],
    }


def test_lines_needing_dpdk_are_left_out_and_the_json_flag_goes_before_passed_arguments():
    assert golden_json.runnable(["pcieperf dpdk run --pcap a.pcap -- --burst=16"]) == []
    line = "pcieperf dpdk run --pcap a.pcap --seconds 3 -- --burst=16"
    assert (
        golden_json.command(line)
        == "pcieperf dpdk run --pcap a.pcap --seconds 3 --json -- --burst=16"
    )
    assert golden_json.command("pcieperf link --gen 3  # Gb/s") == "pcieperf link --gen 3 --json"

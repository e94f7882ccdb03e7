"""One device model per NIC: the `[device]` table of NIC profiles, and `nic`, `dpdk-fwd` and
`iommu sim` evaluating the same profile, agreeing or naming why they do not."""

import json
from dataclasses import replace
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.dpdk import forwarding
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import ProfileError
from pcieperf.iommu.model import Model
from pcieperf.iommu.platform import Traffic, load_platform
from pcieperf.iommu.stream import forwarding_nic, transaction_classes
from pcieperf.net.ethernet import Ethernet, PacketMix, parse_mix
from pcieperf.nic import nic
from pcieperf.nic import profile as profile_model
from pcieperf.nic.profile import builtin_profiles, evaluate_expression, load_profile, parse_profile
from pcieperf.pcie.link import Link
from pcieperf.pciebench.bench import Point
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION, load_calibration
from tests.helpers.cli import run_cli
from tests.helpers.hosts import HOST, write_host_toml

SIZES = ("64", "128", "256", "1518", "imix")
# per simulated run: +-1 % on every rate asserted here (tests/iommu/test_iommu.py)
PACKETS = "50000"
# Bounds that the `nic` model does not have: a simulated rate below the nic model's must name one.
DEVICE_AND_HOST = {"root_complex", "read_requests"}


def cli_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def platform():
    return load_platform()


# --- the three commands on one profile ----------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_nic_dpdk_fwd_and_iommu_sim_agree_or_name_the_cause(capsys, size):
    # Acceptance (issue 14, item 6): Gen3 x8, 40 GbE, the testpmd-fwd profile in all three.
    by_nic = cli_json(capsys, "nic", "--profile", "testpmd-fwd", "--sizes", size)[0]
    by_fwd = cli_json(capsys, "dpdk-fwd", "--mix", size)
    by_sim = cli_json(capsys, "iommu", "sim", "--page", "2m", "--frame", size, "--packets", PACKETS)
    # dpdk-fwd prices the very operations nic prices: the same rate and limits, exactly.
    assert by_fwd["max_pps"] == pytest.approx(by_nic["max_pps"], rel=1e-12)
    assert by_fwd["limited_by"] == by_nic["limited_by"]
    # The simulation knows the nic model's rate and bounds (the link's is the same number).
    assert by_sim["nic_mpps"] == pytest.approx(by_nic["max_pps"] / 1e6, rel=1e-9)
    simulated = by_sim["mpps_no_iommu"]
    if simulated >= 0.99 * by_sim["nic_mpps"]:
        assert simulated <= 1.01 * by_sim["nic_mpps"]
        return
    named = DEVICE_AND_HOST & set(by_sim["limited_by_no_iommu"])
    assert named, by_sim["limited_by_no_iommu"]
    assert min(by_sim["bounds_mpps"][n] for n in named) < by_sim["nic_mpps"]


@pytest.mark.parametrize("size", ["256", "1518", "imix"])
def test_line_rate_sizes_agree_within_one_percent(capsys, size):
    # 256 B, 1518 B and IMIX are below every PCIe and host bound at 40 GbE (nic: line rate
    # from 202 B, docs/model.md), so all three give the line rate.
    by_nic = cli_json(capsys, "nic", "--profile", "testpmd-fwd", "--sizes", size)[0]
    by_sim = cli_json(capsys, "iommu", "sim", "--page", "2m", "--frame", size, "--packets", PACKETS)
    assert by_nic["limited_by"] == ["ethernet"]
    assert by_sim["mpps_no_iommu"] == pytest.approx(by_nic["max_pps"] / 1e6, rel=0.01)
    assert by_sim["limited_by_no_iommu"][0] == "ethernet"


def test_64b_root_complex_bound_is_the_calibrated_write_cost_above_the_link(platform):
    # Per 64 B packet the root complex retires the 60 B packet write and the 32 B Rx
    # write-back (each one line, partly covered: write_line_ns + partial_line_ns) and a 16 B
    # RS write-back every 32 packets: (w + p) * (1 + 1 + 1/32) ns, with w and p the
    # calibration's [host] values. Since the offset sweeps joined the fit (docs/bench.md,
    # "Device offsets") p is ~0 and the bound (~52 Mpps) sits above the link's 42.4, so the
    # simulation gives the nic model's rate, PCIe up.
    cal = load_calibration(DEFAULT_CALIBRATION).shared
    per_packet_ns = (cal.write_line_ns + cal.partial_line_ns) * (2 + 1 / 32)
    model = Model(platform, Traffic(parse_mix("64"), Ethernet(40)), 50_000)
    r = model.evaluate(PortSetup(page="2m"))
    assert r.bounds_mpps["root_complex"] == pytest.approx(1e3 / per_packet_ns, rel=1e-9)
    assert r.bounds_mpps["root_complex"] > r.nic_mpps
    assert r.limited_by_no_iommu[0] == "pcie_up"
    assert r.mpps_no_iommu == pytest.approx(r.nic_mpps, rel=0.01)


def test_dpdk_fwd_default_is_the_64_byte_frame_nic_prices(capsys):
    # Every command's default frame is 64 B incl. FCS (60 B DMA'd): dpdk-fwd's ceiling is nic's
    # 64 B row on the same default profile, 183.25 B up per packet (testpmd-fwd, test_dpdk.py).
    out = cli_json(capsys, "dpdk-fwd")
    assert out["frames"] == "64"
    assert out["pkt"] == 60
    assert out["max_pps"] == pytest.approx(Link().tlp_bytes_per_s / 183.25)
    assert cli_json(capsys, "nic", "--sizes", "64")[0]["max_pps"] == pytest.approx(out["max_pps"])


def test_too_few_read_requests_are_named(platform):
    # 8 read requests: 1.75 reads per packet (1/2 Rx line, 1/4 Tx line, the packet) each held
    # for about the host's 383 ns read latency bound 64 B forwarding near
    # 8 / (1.75 * 0.39 us) = 11.7 Mpps, far below the link's 42.4.
    few = replace(platform.device, device=replace(platform.device.device, read_requests=8))
    model = Model(replace(platform, device=few), Traffic(parse_mix("64"), Ethernet(40)))
    r = model.evaluate(PortSetup(page="2m"))
    assert r.limited_by_no_iommu[0] == "read_requests"
    assert 10 < r.bounds_mpps["read_requests"] < 12
    assert r.mpps_no_iommu <= 1.01 * r.bounds_mpps["read_requests"]
    assert r.mpps_no_iommu < 0.5 * r.nic_mpps


def test_read_requests_that_bind_in_bursts_are_named(platform):
    # 32 read requests (the low end of the XL710's assumed range): on average the tags would
    # allow ~46 Mpps, but a Tx burst asks for 40 at once (32 packets, 8 descriptor lines), so
    # 64 B forwarding falls below the root complex's 41.9 and the run names the tags: the
    # same run with unlimited read requests is faster.
    few = replace(platform.device, device=replace(platform.device.device, read_requests=32))
    model = Model(replace(platform, device=few), Traffic(parse_mix("64"), Ethernet(40)))
    r = model.evaluate(PortSetup(page="2m"))
    assert r.bounds_mpps["read_requests"] > 1.05 * r.mpps_no_iommu
    assert r.mpps_no_iommu < 0.99 * r.bounds_mpps["root_complex"]
    assert r.limited_by_no_iommu == ["read_requests"]


# --- the simulator's classes carry the profile's bytes ------------------------------------------


@pytest.mark.parametrize("mix", ["64", "1518", "imix"])
@pytest.mark.parametrize("rx_desc", [16, 32])
def test_simulated_bytes_per_packet_are_the_nic_models(platform, mix, rx_desc):
    setup = PortSetup(page="2m", rx_desc_bytes=rx_desc)
    traffic = Traffic(parse_mix(mix), Ethernet(40))
    classes = transaction_classes(setup, traffic, platform)
    # Descriptor classes occur once per 64 / desc packets (per RS threshold for the RS
    # write-back); packet classes once per packet of their size.
    per_occurrence = [64 // rx_desc, 64 // rx_desc, 64 // 16, 32]
    weights = traffic.mix.weights

    def per_packet(key):
        descriptors = sum(c[key] / n for c, n in zip(classes[:4], per_occurrence, strict=True))
        packets = np.array(
            [[c[key] for c in classes[4 + 2 * k : 6 + 2 * k]] for k in range(len(weights))]
        )
        return descriptors + float(weights @ packets.sum(axis=1))

    priced = nic.evaluate(
        forwarding_nic(setup, platform), platform.link, Ethernet(40), [traffic.mix]
    )
    assert per_packet("up_bytes") == pytest.approx(float(priced.up_bytes_per_pkt[0]), rel=1e-12)
    assert per_packet("down_bytes") == pytest.approx(float(priced.down_bytes_per_pkt[0]), rel=1e-12)


def test_read_classes_hold_a_tag_per_request_and_writes_none(platform):
    # MRRS 512: a 1514 B packet read is 3 requests (0-512, 512-1024, 1024-1514); a 64 B
    # descriptor line one; posted writes none. Rx DMA is queue 0, Tx DMA queue 1.
    traffic = Traffic(parse_mix("1518"), Ethernet(40))
    classes = transaction_classes(PortSetup(page="2m"), traffic, platform)
    assert [c["tags"] for c in classes] == [1, 0, 1, 0, 0, 3]
    assert [c["queue"] for c in classes] == [0, 0, 1, 1, 0, 1]
    assert [c["read"] for c in classes] == [True, False, True, False, False, True]


def test_descriptor_fetch_bytes_are_device_facts(platform):
    # testpmd-fwd fetches a 64 B line (device.rx_fetch_bytes): 2 Rx descriptors of 32 B or 4
    # of 16 B. Per packet, up: the 24 B MRd (16 B header + 8 B framing) / 2 or / 4; down: the
    # 84 B completion (64 + 12 + 8) / 2 or / 4.
    for desc, share in ((32, 2), (16, 4)):
        cfg = forwarding.ForwardingConfig(rx_desc_bytes=desc)
        term = next(
            t for t in forwarding.forwarding_terms(cfg, Link()) if "Rx descriptors" in t.name
        )
        assert term.wire_up_bytes == pytest.approx(24 / share)
        assert term.wire_down_bytes == pytest.approx(84 / share)


def test_a_mix_costs_the_mean_of_its_packets():
    # dpdk-fwd --mix imix: each term is the 7:4:1 mean of the 64, 594 and 1518 B frames' terms.
    imix = parse_mix("imix")
    mixed = forwarding.forwarding_terms(forwarding.ForwardingConfig(), Link(), mix=imix)
    alone = [
        forwarding.forwarding_terms(forwarding.ForwardingConfig(), Link(), mix=PacketMix.fixed(f))
        for f in (64, 594, 1518)
    ]
    for k, term in enumerate(mixed):
        expected = (
            7 * alone[0][k].wire_up_bytes
            + 4 * alone[1][k].wire_up_bytes
            + alone[2][k].wire_up_bytes
        ) / 12
        assert term.wire_up_bytes == pytest.approx(expected)


# --- the [device] table -------------------------------------------------------------------------


def test_every_builtin_profile_has_a_device_with_its_assumptions_in_range():
    for name in builtin_profiles():
        device = load_profile(name).device
        assert device is not None, name
        assert device.name, name
        assert device.source, name
        for fact, (low, high) in device.assumed.items():
            assert low <= getattr(device, fact) <= high, (name, fact)
    # No datasheet publishes the XL710's outstanding-request limit: it is an assumption.
    assert load_profile("testpmd-fwd").device.assumed["read_requests"] == (32, 256)


def test_division_in_expressions():
    # "rx_fetch_bytes / rx_desc" = 64 / 32: two descriptors per fetch.
    profile = load_profile("testpmd-fwd")
    one = np.array([60])
    assert evaluate_expression("rx_fetch_bytes / rx_desc", profile.names, one, one + 4)[0] == 2
    assert evaluate_expression("rx_desc * 2 / 4", profile.names, one, one + 4)[0] == 16


@settings(max_examples=300)
@given(st.floats(min_value=1e-300, max_value=1e300))
def test_cache_lines_of_a_name_need_no_numpy(value):
    # cl(x) of a Python float (a profile's name, as a profile is checked: `profiles` starts
    # without numpy) is the value numpy gives for the same float, bit for bit (both floor-divide
    # as CPython's float_divmod does).
    python = profile_model._factor_value("cl(x)", {"x": value})
    vectorised = profile_model._factor_value("cl(x)", {"x": np.float64(value)})
    assert type(python) is float
    assert python == float(vectorised)


def test_cache_lines_by_hand():
    # 65 B is two 64 B cache lines, 128 B; 64 B is one.
    assert profile_model._factor_value("cl(x)", {"x": 65.0}) == 128.0
    assert profile_model._factor_value("cl(x)", {"x": 64.0}) == 64.0


PROFILE = """
name = "mine"
source = "test"

[params]
desc = 16

[device]
name = "a NIC"
source = "test"
read_requests = 32
queues = 4
rx_fetch_bytes = 64
tx_fetch_bytes = 64
rx_wb_batch = 1

[device.assumed]
read_requests = [16, 64]

[[rx]]
what = "fetch"
initiator = "dma_read"
size = "rx_fetch_bytes"
every = "rx_fetch_bytes / desc"
"""


def test_a_user_profile_device_prices_its_operations():
    profile = parse_profile(PROFILE, "mine.toml")
    assert profile.device.read_requests == 32
    # 64 B read every 4 packets: (16 + 8) / 4 = 6 B up per packet.
    result = nic.evaluate(profile, Link(), Ethernet(40), [PacketMix.fixed(64)], ("rx",))
    assert float(result.up_bytes_per_pkt[0]) == 6


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("queues = 4\n", ""), r"\[device\] is missing 'queues'"),
        (lambda t: t.replace("queues = 4", "queues = 0"), "device.queues = 0"),
        (lambda t: t.replace("queues = 4", "queues = 2.5"), "device.queues = 2.5"),
        (lambda t: t.replace("queues = 4", "queues = 4\nspeed = 1"), "unknown key 'speed'"),
        (lambda t: t.replace("[16, 64]", "[64, 128]"), r"does not hold device.read_requests = 32"),
        (lambda t: t.replace("[16, 64]", "[16]"), r"use \[low, high\]"),
        (lambda t: t.replace("desc = 16", "desc = 16\nqueues = 2"), "params.queues"),
        (lambda t: t.replace("/ desc", "/ nothing"), "'nothing'"),
    ],
)
def test_malformed_device_tables_name_the_problem(edit, message):
    with pytest.raises(ProfileError, match=message):
        parse_profile(edit(PROFILE), "mine.toml")


def test_iommu_refuses_a_profile_it_cannot_drive(capsys):
    # The 82599 profile does not take the forwarding parameters the port model sets.
    code, _, err = run_cli(capsys, "iommu", "sim", "--profile", "dpdk")
    assert code == 2
    assert "profile 'dpdk' lacks the parameters rx_desc" in err
    assert "\n" not in err.strip()


def test_iommu_refuses_more_queues_than_the_nic_has(capsys, tmp_path):
    builtin = resources.files("pcieperf.nic") / "profiles" / "testpmd-fwd.toml"
    text = builtin.read_text(encoding="utf-8").replace("queues = 1536", "queues = 1")
    path = tmp_path / "one-queue.toml"
    path.write_text(text)
    code, _, err = run_cli(
        capsys, "iommu", "sim", "--profile", str(path), "--queues", "2", "--packets", "1000"
    )
    assert code == 2
    assert "queues 2 is more than" in err


def test_bench_sim_takes_the_nfp6000_engine_by_name(capsys, tmp_path):
    # The pcie-bench engine is a device of `bench`, by name, identical to the calibration's.
    from pcieperf.pciebench import sim

    host = tmp_path / "host.toml"
    write_host_toml(host)
    argv = ["bench", "sim", "--host", str(host), "--sizes", "64", "--transactions", "20000"]
    rows = cli_json(capsys, *argv, "--device", "nfp6000")
    device = load_calibration(DEFAULT_CALIBRATION).device
    point = Point("BW_DMA_RD", "Rand", "HWarm", 0, 0, 8192, 64)
    expected = sim.simulate(point, HOST, device, transactions=20000)
    assert rows[0]["bw_gbps"] == pytest.approx(expected.bw_gbps, rel=1e-12)


def test_the_reports_figures_agree(platform):
    # Figure 1 draws the IOMMU figure's NIC; with 2 MiB pages the IOMMU figure reaches line
    # rate exactly where Figure 1's curve of that NIC does, or names the host bound that holds
    # it below (issue 14: 256 B and IMIX were below line rate there, from 110 B in Figure 1).
    from pcieperf.report import data

    assert platform.device.name in dict(data.FIG1_PROFILES)
    for name in data.IOMMU_MIXES:
        mix = parse_mix(name)
        figure1 = nic.evaluate(platform.device, Link(), Ethernet(40), [mix])
        traffic = Traffic(mix, Ethernet(40))
        r = Model(platform, traffic, 50_000).evaluate(PortSetup(page="2m"))
        at_line = r.mpps_iommu >= 0.99 * r.line_mpps
        if figure1.bottleneck[0] == "ethernet":
            assert at_line or DEVICE_AND_HOST & set(r.limited_by), name
        else:
            assert not at_line, name


@pytest.mark.parametrize(
    ("size", "every", "message"),
    [
        ("1e308 * 1e308", "1", "gives inf bytes"),
        ("1e308 / 1e-10", "1", "gives inf bytes"),
        ("8589934592", "1", "from 1 to 4294967296"),
        ("pkt", "1e-308 * 1e-308", "every '1e-308 \\* 1e-308' gives 0.0"),
        ("pkt", "1e308 / 1e-308", "gives inf; it must be a finite number > 0"),
    ],
)
def test_sizes_and_frequencies_out_of_range_are_refused(size, every, message):
    # Products and quotients can overflow to inf or underflow to 0: a one-line profile error,
    # not a numpy warning or a division by zero.
    text = 'name = "x"\nsource = "s"\n[[rx]]\nwhat = "w"\ninitiator = "dma_write"\n'
    profile = parse_profile(text + f'size = "{size}"\nevery = "{every}"\n', "x.toml")
    with pytest.raises(ProfileError, match=message):
        nic.evaluate(profile, Link(), Ethernet(40), [PacketMix.fixed(64)])


def test_profiles_show_the_device_and_its_assumptions(capsys):
    out = cli_json(capsys, "profiles", "testpmd-fwd")
    assert out["device"]["read_requests"] == 256
    assert out["device"]["assumed"]["read_requests"] == [32, 256]
    code, text, _ = run_cli(capsys, "profiles", "dpdk")
    assert code == 0
    assert "82599" in text
    assert "32-256" in text  # read_requests: assumed, with its range


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--mix", "imix", "--pkt", "60"], "--mix sets the frame sizes; drop --pkt"),
        (["--mix", "64:x"], "packet mix entry '64:x'"),
        (["--mix", "64", "--eth", "33"], "Ethernet rate (Gb/s) 33"),
    ],
)
def test_dpdk_fwd_mix_and_eth_errors_are_one_line(capsys, argv, words):
    code, _, err = run_cli(capsys, "dpdk-fwd", *argv)
    assert code == 2
    assert words in err
    assert "\n" not in err.strip()

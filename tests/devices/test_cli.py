"""`pcieperf devices` and `--device` as a user runs them: this machine's devices in one screen,
every saved lspci text at 80 columns, a model given a device equal to the same model given the
device's values by hand, the provenance of each value, and bad input refused in one line."""

import io
import json

import pytest

from pcieperf.devices.api import device_options
from tests.helpers import PCIE_BENCH, SHARED
from tests.helpers.cli import refused, run_cli

LSPCI = SHARED / "lspci"
TEXTS = sorted(LSPCI.glob("*.txt")) + sorted(PCIE_BENCH.glob("*t630/sys-lspci.txt"))
needs_shared = pytest.mark.skipif(not LSPCI.is_dir(), reason=f"{LSPCI} is absent")
CX4LX = str(LSPCI / "11-cx4lx-x8-to-x4-okmarkers.txt")  # Gen3 x4 of x8


def test_this_machine_in_one_screen(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "devices")
    assert (code, err) == (0, "")
    assert all(len(line) <= 80 for line in out.splitlines())
    code, out, _ = run_cli(capsys, "devices", "--json")
    rows = json.loads(out)
    assert code == 0
    assert rows
    without = [r for r in rows if r["express"] is False]
    if len(without) == len(rows):  # a VM's virtio devices: said to have no PCIe link
        code, out, _ = run_cli(capsys, "devices")
        assert "no PCI Express link" in out
        assert len(out.splitlines()) <= 30


@needs_shared
@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_every_text_reads_whole_at_80_columns(capsys, monkeypatch, path):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "devices", "--lspci", str(path))
    assert (code, err) == (0, "")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "left out to fit" not in out or "driver" in out


@needs_shared
@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_a_downgraded_nic_is_faster_retrained_only_where_the_link_binds(capsys, path):
    _, out, _ = run_cli(capsys, "devices", "--lspci", str(path), "--json")
    for row in json.loads(out):
        if row.get("ceiling_mpps_64") is None:
            continue
        now, capable = row["ceiling_mpps_64"], row["ceiling_mpps_64_capable"]
        link_binds = any(limit.startswith("pcie") for limit in row["limited_by"])
        if row["downgraded"] and link_binds:
            assert capable > now, row["bdf"]
        elif row["downgraded"] is False or not link_binds:
            assert capable == now, row["bdf"]


def hand_typed(found):
    """The flags that give a model what `--device` gave it."""
    return [f"--{k}={v}" for k, v in found.options.items()]


@needs_shared
@pytest.mark.parametrize(
    ("text", "bdf"),
    [
        ("11-cx4lx-x8-to-x4-okmarkers.txt", "08:00.0"),
        ("08-x520-82599-x8-to-x4-2fn.txt", "03:00.1"),
        ("09-e810xxv-gen4-x8.txt", "01:00.0"),
        ("07-cx5ex-gen4-at-gen3-rst.txt", "5e:00.0"),
        ("14-z510-laptop-whole.txt", "01:00.0"),  # a Realtek: not in the NIC table
    ],
)
def test_nic_with_a_device_equals_nic_with_its_values_typed(capsys, text, bdf):
    path = str(LSPCI / text)
    found = device_options(bdf, command="nic", lspci=path)
    assert {"gen", "lanes", "profile"} <= found.from_device.keys()
    common = ["nic", "--sizes", "64,256,1518,imix", "--json"]
    code, by_device, _ = run_cli(capsys, *common, "--lspci", path, "--device", bdf)
    code_typed, typed, _ = run_cli(capsys, *common, *hand_typed(found))
    assert (code, code_typed) == (0, 0)
    rows = json.loads(by_device)
    assert all(row.pop("provenance") == found.to_json() for row in rows)
    assert rows == json.loads(typed)


@needs_shared
@pytest.mark.parametrize(
    "command",
    [
        ["latency", "--sizes", "64,1500"],
        ["dpdk-fwd", "--pps", "10M"],
        ["iommu", "sim", "--packets", "20000"],
    ],
    ids=lambda c: c[0],
)
def test_every_model_takes_the_device(capsys, command):
    name = " ".join(command[:2]) if command[0] == "iommu" else command[0]
    found = device_options("08:00.0", command=name, lspci=CX4LX)
    code, out, _ = run_cli(capsys, *command, "--json", "--lspci", CX4LX, "--device", "08:00.0")
    code_typed, typed, _ = run_cli(capsys, *command, "--json", *hand_typed(found))
    assert (code, code_typed) == (0, 0)
    by_device = json.loads(out)
    for item in by_device if isinstance(by_device, list) else [by_device]:
        assert item.pop("provenance")["from_device"]["lanes"] == 4
    assert by_device == json.loads(typed)


@needs_shared
def test_a_flag_given_stands_over_the_device_and_says_so(capsys):
    _, out, _ = run_cli(
        capsys,
        "nic",
        "--lspci",
        CX4LX,
        "--device",
        "08:00.0",
        "--lanes",
        "8",
        "--sizes",
        "64",
        "--json",
    )
    device = json.loads(out)[0]["provenance"]
    assert (device["given"], "lanes" in device["from_device"]) == ({"lanes": 8}, False)
    assert device["from_device"]["mrrs"] == 512  # DevCtl MaxReadReq 512 bytes in the text
    assert device["evidence"]["tags"].startswith("ExtTag+")
    _, text, _ = run_cli(capsys, "nic", "--lspci", CX4LX, "--device", "08:00.0", "--sizes", "64")
    assert "device 0000:08:00.0 (lspci text" in text


@needs_shared
def test_iommu_sim_says_when_the_nics_profile_does_not_fit():
    found = device_options("08:00.0", command="iommu sim", lspci=CX4LX)
    assert "profile" in found.defaults  # mlx5-dpdk has no descriptor rings


@pytest.mark.parametrize(
    ("content", "argv"),
    [
        (b"", ["devices"]),
        (b"\x00\x01binary", ["devices"]),
        (b"03:00", ["devices"]),
        (b"03:00.0 Ethernet controller: X\n", ["nic", "--sizes", "64", "--device", "03:00.0"]),
        (b"03:00.0 Ethernet controller: X\n", ["nic", "--sizes", "64", "--device", "04:00.0"]),
        (b"03:00.0 Ethernet controller: X\n", ["nic", "--sizes", "64", "--device", "nonsense"]),
        (b"03:00.0 Ethernet controller: X\n", ["devices", "--lcores", "0-3"]),
        (b"03:00.0 Ethernet controller: X\n", ["nic", "--sizes", "64"]),
    ],
    ids=["empty", "binary", "cut", "no-link", "absent", "no-address", "lcores", "lspci-alone"],
)
def test_bad_input_is_refused_in_one_line(tmp_path, capsys, content, argv):
    path = tmp_path / "lspci.txt"
    path.write_bytes(content)
    refused(capsys, *argv, "--lspci", str(path))


@pytest.mark.parametrize(
    "argv",
    [
        ["devices", "--lcores", "a-b"],
        ["devices", "--lcores", "65000"],
        ["devices", "--rxd", "1000"],
        ["devices", "--sysfs", "/nonexistent"],
        ["iommu", "sim", "--device", "00:00.0", "--setup", "talk"],
    ],
)
def test_bad_options_are_refused_in_one_line(capsys, argv):
    refused(capsys, *argv)


@needs_shared
def test_a_text_on_standard_input(capsys, monkeypatch):
    # `lspci -vv | pcieperf devices --lspci -`
    data = (LSPCI / "09-e810xxv-gen4-x8.txt").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run_cli(capsys, "devices", "--lspci", "-", "--json")
    (row,) = json.loads(out)
    assert (code, row["nic"], row["gen"], row["lanes"]) == (
        0,
        "Intel E810-XXV 25 GbE (SFP28)",
        4,
        8,
    )

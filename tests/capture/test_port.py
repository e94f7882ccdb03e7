"""`capture run --port` without DPDK (issue 43 item 4): the port checked in sysfs before
anything starts (a fake sysfs tree made here), the EAL options that drive it, and what each
capture tool can be asked to copy (direction, queue, filter) read from its `CaptureTool` row."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from pcieperf.capture import fit, port, records, run, threads, tools
from pcieperf.capture.calibrate import capture_calibrate
from pcieperf.errors import UsageError
from tests.capture.model_synthetic import synthetic_runs
from tests.helpers import TESTS_DATA
from tests.helpers.cli import refused
from tests.helpers.dpdk import recorded_run_row

ADDRESS = "0000:3b:00.1"


def fake_sysfs(root: Path, driver: str | None = None, interface: str | None = None) -> Path:
    """A sysfs tree with one PCI device at ADDRESS, bound to `driver` (None: to none), and
    a network interface `interface`."""
    device = root / "bus" / "pci" / "devices" / ADDRESS
    device.mkdir(parents=True)
    if driver is not None:
        bound = root / "bus" / "pci" / "drivers" / driver
        bound.mkdir(parents=True)
        (device / "driver").symlink_to(bound)
    if interface is not None:
        (root / "class" / "net" / interface).mkdir(parents=True)
    return root


@pytest.mark.parametrize("driver", ["vfio-pci", "uio_pci_generic", "mlx5_core"])
def test_a_pci_device_dpdk_can_drive_is_allowed_alone(tmp_path, driver):
    sysfs = fake_sysfs(tmp_path, driver)
    found = port.port("3b:00.1", sysfs)  # the domain is 0000 unless given (lspci's short form)
    assert (found.kind, found.device, found.name) == ("pci", ADDRESS, ADDRESS)
    assert found.eal_args(2) == [f"--allow={ADDRESS}"]


def test_a_pci_device_on_a_kernel_driver_is_refused_with_how_to_bind_it(tmp_path):
    sysfs = fake_sysfs(tmp_path, "ixgbe")
    with pytest.raises(UsageError, match=r"bound to ixgbe, a kernel driver DPDK cannot share: "):
        port.port(ADDRESS, sysfs)
    (sysfs / "bus" / "pci" / "devices" / ADDRESS / "net" / "ens1f1").mkdir(parents=True)
    with pytest.raises(UsageError, match="or give its interface ens1f1 to capture through"):
        port.port(ADDRESS, sysfs)
    with pytest.raises(UsageError, match=rf"dpdk-devbind.py --bind=vfio-pci {ADDRESS}"):
        port.port(ADDRESS, sysfs)


def test_a_pci_device_missing_or_unbound_is_refused(tmp_path):
    sysfs = fake_sysfs(tmp_path)
    with pytest.raises(UsageError, match=f"{ADDRESS} is bound to no driver: bind it with"):
        port.port(ADDRESS, sysfs)
    with pytest.raises(UsageError, match=r"0000:3b:00\.2: no such PCI device here"):
        port.port("0000:3b:00.2", sysfs)


def test_an_interface_is_driven_through_net_af_packet(tmp_path):
    sysfs = fake_sysfs(tmp_path, interface="veth7")
    found = port.port("veth7", sysfs)
    assert (found.kind, found.name) == ("af_packet", "net_af_packet0")
    assert found.eal_args(2) == ["--no-pci", "--vdev=net_af_packet0,iface=veth7,qpairs=2"]
    with pytest.raises(UsageError, match=r"nope is neither a PCI address .* nor a network"):
        port.port("nope", sysfs)


def test_an_interface_name_dpdk_would_split_is_refused(tmp_path):
    sysfs = fake_sysfs(tmp_path, interface="a,b")
    with pytest.raises(UsageError, match="DPDK cannot name an interface with one of"):
        port.port("a,b", sysfs)


def test_pdump_copies_the_direction_and_queue_it_is_asked_for():
    spec = tools.ToolRun("dpdk-pdump", "pfx", "net_null0", 0, "/l/out", "pcap", None, 1024, "rx", 1)
    # app/pdump/main.c: rx-dev alone asks for RTE_PDUMP_FLAG_RX, of queue 1 alone
    assert tools.tool("pdump").command(spec)[-1] == ("port=0,queue=1,rx-dev=/l/out,ring-size=1024")
    spec = tools.ToolRun("dpdk-pdump", "pfx", "net_null0", 0, "/l/out", "pcap", None, 64)
    assert tools.tool("pdump").command(spec)[-1] == (
        "port=0,queue=*,rx-dev=/l/out,tx-dev=/l/out,ring-size=64"
    )


def test_dumpcap_takes_a_filter():
    spec = tools.ToolRun(
        "dpdk-dumpcap", "pfx", "net_af_packet0", 0, "/o", "pcapng", None, 64, filter="udp"
    )
    assert tools.tool("dumpcap").command(spec)[-2:] == ["-f", "udp"]


def test_what_a_tool_cannot_copy_is_refused_by_its_row():
    assert [tools.able(f) for f in tools.CHOOSABLE] == [("pdump",), ("pdump",), ("dumpcap",)]
    with pytest.raises(UsageError, match="dpdk-dumpcap copies Rx and Tx together, not Rx alone"):
        run.CaptureConfig(direction="rx")
    with pytest.raises(UsageError, match="dpdk-dumpcap copies every queue of the port, not one"):
        run.CaptureConfig(queue=0)
    with pytest.raises(UsageError, match="dpdk-pdump takes no capture filter"):
        run.CaptureConfig(tool="pdump", format="pcap", filter="udp")
    with pytest.raises(
        UsageError, match=r"`queue` 2 is not allowed; .* \(`lcores` 2\): give 0 to 1"
    ):
        run.CaptureConfig(tool="pdump", format="pcap", fwd_lcores=2, queue=2)
    with pytest.raises(UsageError, match="`filter` needs a file to count what passed it"):
        run.CaptureConfig(filter="udp")
    cfg = run.CaptureConfig(tool="pdump", format="pcap", fwd_lcores=2, queue=1, direction="tx")
    # one queue of two, one direction: half a copy per packet forwarded on both queues
    assert (cfg.copies_per_packet, cfg.copies_per_forwarded) == (1, 0.5)


def test_a_filtered_capture_counts_what_the_file_holds():
    # dpdk-dumpcap's "received" takes in what its filter refused (app/dumpcap/main.c: ifrecv =
    # accepted + filtered; 5918 received of which 2958 passed, measured on a veth pair here):
    # the records written are the file's, the copies those and the ones the ring dropped.
    counts = tools.ToolCounts(5918, 3)
    io, waits = threads.IoCounts(0, 0), threads.Waits(0, 0)
    tool = run.ToolInterval(1.0, 0, 0, io, counts, 0.0, waits, 0.0)
    assert run._filtered(tool, 2958).counts == tools.ToolCounts(2961, 3)


def test_the_cli_names_the_flags_and_the_tool_that_can(capsys):
    err = refused(capsys, "capture", "run", "--rx-only")
    assert "leave out --rx-only/--tx-only (--tool pdump can)" in err
    err = refused(capsys, "capture", "run", "--tool", "pdump", "--filter", "udp")
    assert "leave out --filter (--tool dumpcap can)" in err
    # 17 characters: longer than any interface name can be (IFNAMSIZ 16, its NUL included)
    err = refused(capsys, "capture", "run", "--port", "no-such-port-here")
    assert "--port no-such-port-here is neither a PCI address" in err


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("port", "af_packet", "capture run 4: port = 'af_packet' is not allowed; use one of null"),
        ("capture_filter", "udp", "capture run 4: capture_filter = 'udp' is not allowed; the"),
        ("queue", 0, "capture run 4: queue = 0.0 is not allowed; the model prices copies of"),
    ],
)
def test_a_wire_or_a_part_of_the_copies_is_not_fitted(column, value, message):
    # A wire's rate is not the CPU's, and the model prices every copy of every queue unfiltered
    runs = synthetic_runs()
    runs.loc[3, column] = value
    with pytest.raises(UsageError, match=re.escape(message)):
        fit.fit(runs, "synthetic")


def test_a_run_says_what_it_chose_to_copy_and_nothing_when_it_copied_all():
    row = recorded_run_row()  # a net_null run of every copy, stored before these columns
    assert records._copied_line(row) == []
    row |= {"port": "pci", "device": ADDRESS, "direction": "tx", "queue": 1}
    assert records._copied_line(row | {"capture_filter": "udp"}) == [
        f"copied      port {ADDRESS} (pci), Tx only, queue 1, filter 'udp'"
    ]


def test_calibrate_leaves_out_stored_runs_the_model_does_not_price(tmp_path):
    # A wire port's, one queue's or a filtered run is a real measurement the model cannot
    # price: "every stored run" leaves them out, saying which; asked for by id, it is refused.
    runs = pd.read_csv(
        TESTS_DATA / "capture" / "probed-runs.csv",
        keep_default_na=False,
        na_values=["", "NaN", "nan"],
    )
    first = runs["run_id"].iloc[:3].tolist()
    runs["queue"] = pd.array([0, None, None] + [None] * (len(runs) - 3), dtype="Int64")
    runs["capture_filter"] = [None, "udp", None] + [None] * (len(runs) - 3)
    runs.loc[runs.index[2], "port"] = "af_packet"
    csv = tmp_path / "runs.csv"
    runs.to_csv(csv, index=False)
    got = capture_calibrate(csv=csv, output=tmp_path / "cal.toml")
    assert got.to_json()["unpriced_runs"] == first
    assert not set(first) & set(got.to_json()["runs"])
    said = "left out: 3 runs of a wire port, one queue or a filter, which the model does not price"
    assert f"{said}: {', '.join(map(str, first))}" in str(got)
    with pytest.raises(UsageError, match=rf"capture run {first[2]} is of a wire port"):
        capture_calibrate([first[2]], csv=csv, output=tmp_path / "one.toml")

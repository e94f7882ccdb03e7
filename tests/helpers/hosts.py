"""The simulator's test profiles: a device and a host whose numbers make the pcie-bench
simulator's results easy to check by hand (tests/pciebench/test_sim.py computes them), and the
host as the TOML file `bench sim --host` reads."""

from dataclasses import fields

from pcieperf.pciebench import sim
from pcieperf.pciebench.device import DeviceProfile

DEVICE = DeviceProfile(
    name="dev",
    source="test",
    tags=32,
    read_ns=0.0,
    read_line_ns=0.0,
    write_ns=20.0,
    write_line_ns=0.0,
    datapath_ns=0.0,
    datapath_line_ns=0.0,
    fixed_latency_ns=100.0,
)
HOST = sim.HostProfile(
    name="host",
    source="test",
    mps=256,
    mrrs=512,
    completion_policy="mps",
    addr64=True,
    llc_latency_ns=400.0,
    ddio_latency_ns=380.0,
    dram_latency_ns=480.0,
    remote_extra_ns=80.0,
    llc_bytes=8 << 20,
    ddio_bytes=1 << 20,
    write_line_ns=0.0,
    partial_line_ns=30.0,
    posted_credits=64,
    iotlb_entries=64,
    walk_ns=200.0,
    walk_busy_ns=200.0,
    walkers=4,
)


def write_host_toml(path, host=HOST):
    """`host` as the host profile file `bench sim --host` reads."""
    path.write_text(
        "\n".join(
            f"{f.name} = {v!r}".replace("'", '"').replace("True", "true")
            for f in fields(sim.HostProfile)
            if (v := getattr(host, f.name)) != ""
        )
        + "\n"
    )

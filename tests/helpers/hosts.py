"""The simulator's test profiles, tests/data/sim/{device,host}.toml (benchmarks/bench_sim.py
runs the same files): numbers that make the pcie-bench simulator's results easy to check by
hand (tests/pciebench/test_sim.py computes them), and a host as the TOML file `bench sim
--host` reads."""

from dataclasses import fields

from pcieperf.pciebench import sim
from pcieperf.pciebench.device import load_device
from tests.helpers import TESTS_DATA

SIM_PROFILES = TESTS_DATA / "sim"
DEVICE = load_device(SIM_PROFILES / "device.toml")
HOST = sim.load_host(SIM_PROFILES / "host.toml")


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

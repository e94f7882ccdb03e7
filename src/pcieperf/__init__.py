"""pcieperf: predict, measure and explain the PCIe cost of packet I/O.

Packages, in the order data flows: `pcie` (a link per direction, the cost of one read or
write) -> `net` (line rates, frame overheads, captures) -> `nic` (NIC/driver profiles priced per
packet, loopback latency) -> `dpdk` (forwarding estimate, port setup, testpmd runner) -> `iommu`
(IOMMU/IOTLB + DDIO port model, platforms); `pciebench` (pcie-bench definitions, simulator,
calibration, predict, validate); `devices` (this machine's PCI devices and their links, each NIC
priced by the models above); `measure` (counters, store, explain) -> `capture` (DPDK packet
capture: runs, model, calibration) -> `report` (figures, HTML); `sweep` (design-space sweeps of
the model commands through their API functions, on Dask: `pp.sweep`). `cli` sits on top and
nothing imports it. Top-level modules serve them all: errors, units, text (tables for people),
results, progress, engine (Dask), outputs, interrupts, statedir, _native (the only caller of the
Rust core), _config, _keywords, _numpy, _values, _cache.

The names below are imported on first use (PEP 562), so that `import pcieperf.cli` and the
light commands do not pay for numpy and duckdb: the `TYPE_CHECKING` imports are what type
checkers and editors read, `__getattr__` imports the same names from the same modules
(tests/test_api_exports.py holds the two to each other).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf import iommu  # `pp.iommu`: the package is the namespace
    from pcieperf.capture.calibrate import capture_calibrate
    from pcieperf.capture.here import capture_calibrate_here
    from pcieperf.capture.model import capture_model
    from pcieperf.capture.probe import capture_probe
    from pcieperf.capture.records import capture_run, capture_runs, capture_show
    from pcieperf.devices.api import device_options, devices
    from pcieperf.dpdk.api import dpdk_forwarding, dpdk_fwd_trace
    from pcieperf.errors import PcieperfError, ProfileError, UsageError
    from pcieperf.iommu.api import platforms
    from pcieperf.measure import store
    from pcieperf.measure.api import data_import, data_ls, data_show, explain
    from pcieperf.measure.records import (
        counter_imports,
        counter_remove,
        counter_show,
        dpdk_run,
        dpdk_runs,
        import_counters,
        read_counters,
    )
    from pcieperf.net.api import (
        capture_stats,
        convert_capture,
        merge_captures,
        read_capture,
        synth_capture,
    )
    from pcieperf.net.ethernet import Ethernet, PacketMix, parse_mix
    from pcieperf.nic.api import latency, nic, profile, profiles
    from pcieperf.nic.captures import capture_demand, nic_trace
    from pcieperf.nic.latency import latency_table
    from pcieperf.nic.nic import evaluate
    from pcieperf.nic.profile import load_profile
    from pcieperf.pcie.api import dma, link, make_link
    from pcieperf.pcie.link import Link
    from pcieperf.pciebench import api as bench
    from pcieperf.report.api import data_plot, report
    from pcieperf.sweep.api import sweep

__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "bench",
    "capture_calibrate",
    "capture_calibrate_here",
    "capture_demand",
    "capture_model",
    "capture_probe",
    "capture_run",
    "capture_runs",
    "capture_show",
    "capture_stats",
    "convert_capture",
    "counter_imports",
    "counter_remove",
    "counter_show",
    "data_import",
    "data_ls",
    "data_plot",
    "data_show",
    "device_options",
    "devices",
    "dma",
    "dpdk_forwarding",
    "dpdk_fwd_trace",
    "dpdk_run",
    "dpdk_runs",
    "evaluate",
    "explain",
    "import_counters",
    "iommu",
    "latency",
    "latency_table",
    "link",
    "load_profile",
    "make_link",
    "merge_captures",
    "nic",
    "nic_trace",
    "parse_mix",
    "platforms",
    "profile",
    "profiles",
    "read_capture",
    "read_counters",
    "report",
    "store",
    "sweep",
    "synth_capture",
]
__version__ = "0.1.0"

FUNCTIONS_NAMED_AS_PACKAGES = frozenset({"devices", "nic", "report", "sweep"})
"""`pp.devices`, `pp.nic`, `pp.report` and `pp.sweep` are API functions named as the packages
that hold them."""


class _Pcieperf(ModuleType):
    """The `pcieperf` module, whose `devices`, `nic`, `report` and `sweep` stay the API functions:
    importing the package `pcieperf.nic` would otherwise set `pcieperf.nic` to it (the import
    system names a subpackage on its parent), and `help(pp.nic)` would show the package."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in FUNCTIONS_NAMED_AS_PACKAGES and isinstance(value, ModuleType):
            return  # the package stays in sys.modules["pcieperf.<name>"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Pcieperf


def __getattr__(name: str) -> object:
    """The public names, each from the module that defines it, imported on first use.
    `pp.bench`, `pp.iommu` and `pp.store` are modules of API functions (`pp.bench` is
    pciebench.api, not the package: its submodules `sim`, `predict`, ... would shadow the
    functions of those names); `pp.nic`, `pp.report`, `pp.sweep` and `pp.devices` are the
    functions of their packages' `api` (`_Pcieperf`), kept here once found."""
    found = _function_of_package(name)
    if found is not None:
        globals()[name] = found  # not through __setattr__, which keeps packages out
        return found
    match name:
        case "bench":
            import pcieperf.pciebench.api

            return pcieperf.pciebench.api
        case "iommu":
            import pcieperf.iommu  # not `from pcieperf import`: that asks this hook again

            return pcieperf.iommu
        case "store":
            from pcieperf.measure import store

            return store
        case "capture_calibrate":
            from pcieperf.capture import calibrate

            return getattr(calibrate, name)
        case "capture_calibrate_here":
            from pcieperf.capture import here

            return getattr(here, name)
        case "capture_model":
            from pcieperf.capture import model

            return getattr(model, name)
        case "capture_probe":
            from pcieperf.capture import probe

            return getattr(probe, name)
        case "capture_run" | "capture_runs" | "capture_show":
            import pcieperf.capture.records

            return getattr(pcieperf.capture.records, name)
        case "device_options":
            from pcieperf.devices import api as devices_api  # `pcieperf.devices`: a function

            return devices_api.device_options
        case "dpdk_forwarding" | "dpdk_fwd_trace":
            import pcieperf.dpdk.api

            return getattr(pcieperf.dpdk.api, name)
        case "platforms":
            import pcieperf.iommu.api

            return pcieperf.iommu.api.platforms
        case "PcieperfError" | "ProfileError" | "UsageError":
            from pcieperf import errors

            return getattr(errors, name)
        case "data_import" | "data_ls" | "data_show" | "explain":
            import pcieperf.measure.api

            return getattr(pcieperf.measure.api, name)
        case (
            "counter_imports"
            | "counter_remove"
            | "counter_show"
            | "dpdk_run"
            | "dpdk_runs"
            | "import_counters"
            | "read_counters"
        ):
            import pcieperf.measure.records

            return getattr(pcieperf.measure.records, name)
        case (
            "capture_stats"
            | "convert_capture"
            | "merge_captures"
            | "read_capture"
            | "synth_capture"
        ):
            import pcieperf.net.api

            return getattr(pcieperf.net.api, name)
        case "Ethernet" | "PacketMix" | "parse_mix":
            from pcieperf.net import ethernet

            return getattr(ethernet, name)
        case "latency" | "profile" | "profiles":
            from pcieperf.nic import api  # to type checkers, `pcieperf.nic` is the function

            return getattr(api, name)
        case "capture_demand" | "nic_trace":
            from pcieperf.nic import captures

            return getattr(captures, name)
        case "latency_table":
            from pcieperf.nic import latency

            return getattr(latency, name)
        case "evaluate":
            from pcieperf.nic.nic import evaluate

            return evaluate
        case "load_profile":
            from pcieperf.nic.profile import load_profile

            return load_profile
        case "dma" | "link" | "make_link":
            import pcieperf.pcie.api

            return getattr(pcieperf.pcie.api, name)
        case "Link":
            from pcieperf.pcie import link

            return getattr(link, name)
        case "data_plot":
            from pcieperf.report.api import data_plot

            return data_plot
    raise AttributeError(f"module 'pcieperf' has no attribute {name!r}")


def _function_of_package(name: str) -> object:
    """`pp.devices`, `pp.nic`, `pp.report` or `pp.sweep`: the API function of the package of
    that name."""
    match name:
        case "devices":
            from pcieperf.devices.api import devices

            return devices
        case "nic":
            from pcieperf.nic.api import nic

            return nic
        case "report":
            from pcieperf.report.api import report

            return report
        case "sweep":
            from pcieperf.sweep.api import sweep

            return sweep
    return None


def __dir__() -> list[str]:
    """The public names too (PEP 562: `dir(pp)` and editors' completion list them)."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})

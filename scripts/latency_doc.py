"""The tables of docs/latency.md, from the shared pcie-bench data (re-run to regenerate).

    python3 scripts/latency_doc.py [../shared/data/pcie-bench]

1. Little's law per host: 32 tags over the floor of the 64 B read latency vs measured 64 B
   reads (random, the size sweep; sequential, the offset sweep), and tags over the median.
2. Which latency statistic: the error range each gives on the steady and the E3 hosts.
3. The bypass profile's loopback on one warm Gen3 x8 host: share and total per size.
4. What drives it: each assumed parameter at its low and high end, the others as used.
5. The same check on every host (HWarm): share at 64, 128 and 1500 B, total at 128 B.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pcieperf.nic import latency
from pcieperf.nic.host import HostLatency, host_from_dir
from pcieperf.pciebench.bench import UNSTEADY_RATIO
from pcieperf.pciebench.host import load_run, steadiness

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pcie-bench"
WARM_HOST = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0"
SIZES = (64, 128, 256, 512, 1024, 1500)
# Latency statistics compared in table 2: (label, statistic, ns subtracted before the law)
CANDIDATES = (
    ("mean (the rule before)", "mean", 0.0),
    ("median", "p50", 0.0),
    ("floor (min), used", "min", 0.0),
    ("floor - 10 ns of device-side time", "min", 10.0),
    ("mean - 40 ns of device-side time", "mean", 40.0),
)


def hosts(root: Path) -> list[Path]:
    """The pcie-bench host directories under `root`."""
    return sorted(p for p in root.glob("nfp6000-*") if p.is_dir())


def steady(path: Path) -> bool:
    """The steadiness rule of `calibrate` (p99.9 / median of the latency sweep)."""
    return steadiness(load_run(path)) <= UNSTEADY_RATIO


def tag_table(root: Path) -> list[str]:
    """Markdown rows: host, floor and median, predicted and measured Gb/s, errors."""
    out = [
        "| host | floor / median 64 B read (ns) | tags / floor (Gb/s) | measured random "
        "(Gb/s) | error | tags / median (Gb/s) | measured sequential (Gb/s) | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in hosts(root):
        check = latency.tag_check(path)
        name = path.name.removeprefix("nfp6000-1.2GHz_") + ("" if steady(path) else " (unsteady)")
        runs = check.sequential_gbps
        seq = (
            f"{np.median(runs):.2f} ({min(runs):.1f}-{max(runs):.1f}) | "
            f"{check.sequential_error_pct:+.1f} %"
            if runs
            else "no offset sweep | -"
        )
        out.append(
            f"| {name} | {check.latency_ns:.1f} / {check.idle_ns:.1f} | "
            f"{check.predicted_gbps:.2f} | {check.measured_gbps:.2f} | {check.error_pct:+.1f} % | "
            f"{check.idle_gbps:.2f} | {seq} |"
        )
    return out


def statistic_table(root: Path) -> list[str]:
    """Markdown rows: each candidate latency's error range against the measured reads."""
    groups = ("14 steady hosts, random", "2 E3 hosts, random", "15 hosts, sequential")
    errors = {label: {g: [] for g in groups} for label, _, _ in CANDIDATES}
    for path in hosts(root):
        check = latency.tag_check(path)
        read = host_from_dir(path).read_ns
        measured = {groups[0] if steady(path) else groups[1]: check.measured_gbps}
        if check.sequential_gbps:
            measured[groups[2]] = float(np.median(check.sequential_gbps))
        for label, stat, device_ns in CANDIDATES:
            gbps = latency.reads_gbps(check.tags, read[stat] - device_ns)
            for group, value in measured.items():
                errors[label][group].append(100 * (gbps / value - 1))
    out = [f"| latency a tag holds | {' | '.join(groups)} |", "|---|---|---|---|"]
    for label, found in errors.items():
        cells = [f"{min(found[g]):+.1f} to {max(found[g]):+.1f} %" for g in groups]
        out.append(f"| {label} | {' | '.join(cells)} |")
    return out


def shape_table(host: HostLatency) -> list[str]:
    """Markdown rows: size, total, PCIe, share, range of the total, in flight, tags needed."""
    result = latency.loopback("bypass", SIZES, host)
    low, high = result.total_range_ns
    out = [
        "| frame (B) | total (ns) | PCIe (ns) | PCIe share | total, assumptions low-high (ns) "
        "| in flight | read tags |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, size in enumerate(SIZES):
        out.append(
            f"| {size} | {result.total_ns()[i]:.0f} | {result.kind_ns('pcie')[i]:.0f} | "
            f"{100 * result.pcie_share()[i]:.1f} % | {low[i]:.0f}-{high[i]:.0f} | "
            f"{result.inflight_needed[i]:.1f} | {result.tags_needed[i]:.1f} |"
        )
    return out


def driver_table(host: HostLatency) -> list[str]:
    """Markdown rows: each assumption at its low and high end; share at 128 and 1500 B."""
    out = [
        "| parameter | low-high | share 128 B | share 1500 B | total 128 B (ns) |",
        "|---|---|---|---|---|",
    ]
    for name, assumed in latency.PARAMS.items():
        ends = [
            latency.loopback("bypass", (128, 1500), host, params={name: v})
            for v in (assumed.low, assumed.high)
        ]
        share = [r.pcie_share() for r in ends]
        total = [r.total_ns()[0] for r in ends]
        out.append(
            f"| `{name}` | {assumed.low:g}-{assumed.high:g} | "
            f"{100 * share[0][0]:.1f}-{100 * share[1][0]:.1f} % | "
            f"{100 * share[0][1]:.1f}-{100 * share[1][1]:.1f} % | {total[0]:.0f}-{total[1]:.0f} |"
        )
    return out


def hosts_table(root: Path) -> list[str]:
    """Markdown rows: the acceptance quantities of the bypass loopback on every host."""
    out = [
        "| host | read / write (ns, median) | share 64 / 128 / 1500 B | total 128 B (ns) |",
        "|---|---|---|---|",
    ]
    for path in hosts(root):
        host = host_from_dir(path)
        result = latency.loopback("bypass", (64, 128, 1500), host)
        share = " / ".join(f"{100 * v:.1f}" for v in result.pcie_share())
        out.append(
            f"| {path.name.removeprefix('nfp6000-1.2GHz_')} | {host.read_ns['p50']:.0f} / "
            f"{host.write_ns['p50']:.0f} | {share} % | {result.total_ns()[1]:.0f} |"
        )
    return out


def main() -> None:
    """Print the five tables."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    host = host_from_dir(root / WARM_HOST)
    for title, rows in (
        ("Little's law on the shared hosts", tag_table(root)),
        ("which latency statistic", statistic_table(root)),
        (f"bypass profile on {WARM_HOST} (HWarm), 40 GbE", shape_table(host)),
        ("what drives it", driver_table(host)),
        ("every host", hosts_table(root)),
    ):
        print(f"\n{title}\n")
        print("\n".join(rows))


if __name__ == "__main__":
    main()

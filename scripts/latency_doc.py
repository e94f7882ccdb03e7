"""The tables of docs/latency.md, from the shared pcie-bench data (re-run to regenerate).

    python3 scripts/latency_doc.py [../shared/data/pcie-bench]

1. Little's law per host: 32 tags over the mean 64 B read latency vs measured 64 B reads.
2. The bypass profile's loopback on one warm Gen3 x8 host: share and total per size.
3. What drives it: each assumed parameter at its low and high end, the others as used.
4. The same check on every host (HWarm): share at 64, 128 and 1500 B, total at 128 B.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pcieperf.nic import latency
from pcieperf.pciebench import calibrate

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pcie-bench"
WARM_HOST = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0"
SIZES = (64, 128, 256, 512, 1024, 1500)


def tag_table(root: Path) -> list[str]:
    """Markdown rows: host, tags, mean latency, predicted and measured Gb/s, error, steady."""
    out = [
        "| host | tags | mean 64 B read (ns) | tags / latency (Gb/s) | measured (Gb/s) | error |",
        "|---|---|---|---|---|---|",
    ]
    for host in sorted(p for p in root.glob("nfp6000-*") if p.is_dir()):
        check = latency.tag_check(host)
        steady = calibrate.steadiness(calibrate.load_run(host)) <= calibrate.UNSTEADY_RATIO
        name = host.name.removeprefix("nfp6000-1.2GHz_") + ("" if steady else " (unsteady)")
        out.append(
            f"| {name} | {check.tags} | {check.latency_ns:.1f} | {check.predicted_gbps:.2f} | "
            f"{check.measured_gbps:.2f} | {check.error_pct:+.1f} % |"
        )
    return out


def shape_table(host: latency.HostLatency) -> list[str]:
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


def driver_table(host: latency.HostLatency) -> list[str]:
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
    for path in sorted(p for p in root.glob("nfp6000-*") if p.is_dir()):
        host = latency.host_from_dir(path)
        result = latency.loopback("bypass", (64, 128, 1500), host)
        share = " / ".join(f"{100 * v:.1f}" for v in result.pcie_share())
        out.append(
            f"| {path.name.removeprefix('nfp6000-1.2GHz_')} | {host.read_ns['p50']:.0f} / "
            f"{host.write_ns['p50']:.0f} | {share} % | {result.total_ns()[1]:.0f} |"
        )
    return out


def main() -> None:
    """Print the four tables."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    host = latency.host_from_dir(root / WARM_HOST)
    for title, rows in (
        ("Little's law on the shared hosts", tag_table(root)),
        (f"bypass profile on {WARM_HOST} (HWarm), 40 GbE", shape_table(host)),
        ("what drives it", driver_table(host)),
        ("every host", hosts_table(root)),
    ):
        print(f"\n{title}\n")
        print("\n".join(rows))


if __name__ == "__main__":
    main()

"""Leave-one-host-out cross validation of `pcieperf bench predict` (issue 3), and the baseline.

For each of the data set's hosts: calibrate on the other hosts, copy only the left-out host's
latency files (lat_*.csv) and host facts (sys-*.txt) into a scratch directory of the same name,
predict its bandwidth files from that, and compare with what was measured. The baseline is the
plain link model (pcieperf.tlp.effective_gbps with the host's MPS/MRRS: no latency, caches or
IOMMU) on the same points. Writes the table to docs/crossval.md.

Run: python3 scripts/crossval.py [DATA_DIR] [--out docs/crossval.md]
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from pcieperf import calibrate, predict, tlp, validate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pcie-bench"
SIZE_INDEX = validate.KEY_NAMES.index("size_bytes")
CACHE_INDEX = validate.KEY_NAMES.index("cache")
WINDOW_INDEX = validate.KEY_NAMES.index("window_bytes")
OPS = {"BW_DMA_RD": "read", "BW_DMA_WR": "write", "BW_DMA_RW": "rw"}
KNEE_DROP = 0.95  # a sweep's knee: first window below 95 % of its small-window level


def latency_only_copy(source: Path, scratch: Path) -> Path:
    """A directory with the same name holding only lat_*.csv and sys-*.txt."""
    target = scratch / source.name
    target.mkdir(parents=True)
    for pattern in ("lat_*.csv", "sys-*.txt"):
        for f in source.glob(pattern):
            shutil.copy(f, target / f.name)
    return target


def baseline(run: calibrate.HostRun, matched: validate.Matched) -> np.ndarray:
    """The link-only model's bandwidth for every matched point."""
    link = calibrate.host_link(run.facts, "rcb")
    out = np.empty(matched.measured.size)
    for i, (test, key) in enumerate(zip(matched.test, matched.keys, strict=True)):
        out[i] = tlp.effective_gbps(link, OPS[test], key[SIZE_INDEX])[()]
    return out


def knee(bw: np.ndarray) -> int | None:
    """Index of the first window from 256 KiB on (index 2) whose bandwidth falls below
    KNEE_DROP of the median of the three smallest windows (4, 16, 256 KiB)."""
    level = np.median(bw[:3])
    below = np.nonzero(bw[2:] < KNEE_DROP * level)[0]
    return int(below[0]) + 2 if below.size else None


def knees(matched: validate.Matched, file: str, cache: str) -> tuple:
    """(measured knee, predicted knee, measured / predicted at 64 MiB) of one sweep."""
    pick = [
        i for i, k in enumerate(matched.keys) if matched.file[i] == file and k[CACHE_INDEX] == cache
    ]
    order = sorted(pick, key=lambda i: matched.keys[i][WINDOW_INDEX])
    m, p = matched.measured[order], matched.predicted[order]
    return knee(m), knee(p), p[-1] / m[-1] - 1


def main() -> None:
    """Cross-validate every host and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(DATA))
    parser.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "crossval.md")
    )
    args = parser.parse_args()
    dirs = sorted(p for p in Path(args.data).iterdir() if p.is_dir())
    runs = [calibrate.load_run(d) for d in dirs]
    started = time.perf_counter()
    rows, knee_rows, all_err, base_err, steady_err = [], [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for i, (source, run) in enumerate(zip(dirs, runs, strict=True)):
            fit = calibrate.fit_device(runs[:i] + runs[i + 1 :])
            left_out = calibrate.load_run(latency_only_copy(source, Path(scratch) / "in"))
            out = Path(scratch) / "out" / source.name
            host = calibrate.host_profile(left_out, fit)
            predict.predict_files(
                host, fit.device, out, clock_ghz=predict.card_clock_ghz(run.info.card)
            )
            matched = validate.match(source, out)
            keep = matched.in_acceptance_set
            err = matched.error[keep] * 100
            b = np.abs(baseline(run, matched)[keep] / matched.measured[keep] - 1) * 100
            size_sweep = matched.file[keep] == "bw_dma_sz_sweep.csv"
            steady = calibrate.steadiness(run) <= calibrate.UNSTEADY_RATIO
            all_err.append(err.mean())
            base_err.append(b.mean())
            if steady:
                steady_err.append(err.mean())
            rows.append(
                f"| {source.name.split('_', 1)[1]} | {calibrate.steadiness(run):.0f} | "
                f"{err[size_sweep].mean():.1f} | {err[~size_sweep].mean():.1f} | "
                f"**{err.mean():.1f}** | {b.mean():.1f} |"
            )
            for file in ("bw_dma_win_sweep_rd_rnd_64.csv", "bw_dma_win_sweep_wr_rnd_64.csv"):
                for cache in ("Cold", "HWarm", "DWarm"):
                    km, kp, at64 = knees(matched, file, cache)
                    if km is None and kp is None:
                        continue
                    knee_rows.append(
                        f"| {source.name.split('_', 1)[1]} | {file[17:19]} {cache} | {km} | "
                        f"{kp} | {100 * at64:+.1f} |"
                    )
            print(f"{source.name}: MAPE {err.mean():.1f} % (baseline {b.mean():.1f} %)")
    elapsed = time.perf_counter() - started
    text = [
        "# Leave-one-host-out cross validation (issue 3)",
        "",
        "Regenerate with `python3 scripts/crossval.py` (needs `../shared/data/pcie-bench`).",
        "Each host is predicted from its latency files and host facts only, with the device",
        "calibrated on the other hosts; errors are MAPE (%) over the size sweep (64-2048 B) and",
        "the eight window sweeps. *Steadiness* is the worst p99.9/median latency ratio of the",
        "host's latency sweep (hosts above 10 are left out of calibrations).",
        "",
        "| host | steadiness | size sweep | window sweeps | all | link-only baseline |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"- all {len(all_err)} hosts: MAPE **{np.mean(all_err):.1f} %** (worst host "
        f"{np.max(all_err):.1f} %); baseline {np.mean(base_err):.1f} %",
        f"- the {len(steady_err)} steady hosts: MAPE **{np.mean(steady_err):.1f} %** (worst host "
        f"{np.max(steady_err):.1f} %)",
        f"- run time: {elapsed:.0f} s",
        "",
        "## Knees (index into the 13-window sweep; first window below 95 % of the small-window",
        "level) and the error at 64 MiB",
        "",
        "| host | sweep | measured knee | predicted knee | predicted vs measured at 64 MiB |",
        "|---|---|---|---|---|",
        *knee_rows,
        "",
    ]
    Path(args.out).write_text("\n".join(text), encoding="utf-8")
    print(
        f"wrote {args.out}: all {np.mean(all_err):.1f} %, steady {np.mean(steady_err):.1f} %, "
        f"baseline {np.mean(base_err):.1f} %, {elapsed:.0f} s"
    )


if __name__ == "__main__":
    main()

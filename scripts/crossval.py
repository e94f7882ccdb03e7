"""Cross validation of `pcieperf bench predict` (issues 3, 14, 29 and 45), and the baseline.

Leave one host out: for each of the data set's hosts, calibrate on the other hosts, copy only the
left-out host's latency files (lat_*.csv) and host facts (sys-*.txt) into a scratch directory of
the same name, predict its bandwidth files and intervals from that, and compare with what was
measured; then again with one measured bandwidth row beside them (PIN_ROW, issue 29), which is
not scored. Leave one microarchitecture out: calibrate on the hosts of the other CPU generations
(from cpuinfo) and predict every host of the held-out one, its IOMMU hosts also with the
row. Leave one row out (issue 45, scripts/crossval_rows.py): every measured row of a held-out
host given alone beside its latency files; and how far each host's 64 B window sweeps climb
back past their trough. The baseline is the plain link model
(pcieperf.pcie.tlp.effective_gbps with the host's MPS/MRRS: no latency, caches or IOMMU) on the same
points. Writes the tables to docs/crossval.md.

Run: python3 scripts/crossval.py [DATA_DIR] [--out docs/crossval.md]
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import crossval_rows
from pcieperf.pcie import tlp
from pcieperf.pciebench import calibrate, pin, predict, validate
from pcieperf.pciebench.bench import UNSTEADY_RATIO
from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.host import HostRun, load_run, steadiness

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pcie-bench"
SIZE_INDEX = validate.KEY_NAMES.index("size_bytes")
CACHE_INDEX = validate.KEY_NAMES.index("cache")
WINDOW_INDEX = validate.KEY_NAMES.index("window_bytes")
DEV_OFFSET_INDEX = validate.KEY_NAMES.index("dev_offset")
OPS = {"BW_DMA_RD": "read", "BW_DMA_WR": "write", "BW_DMA_RW": "rw"}
KNEE_DROP = 0.95  # a sweep's knee: first window below 95 % of its small-window level


PIN_FILE = "bw_dma_win_sweep_rd_rnd_64.csv"  # issue 29: one row of it past the IOTLB knee
PIN_ROW = ("Cold", 64 << 20)  # its cache state and window (the deepest past the knee)


def latency_only_copy(source: Path, scratch: Path, pin_row: bool = False) -> Path:
    """A directory with the same name holding only lat_*.csv and sys-*.txt, and with
    `pin_row` the PIN_ROW of PIN_FILE as a one-row bandwidth file."""
    target = scratch / source.name
    target.mkdir(parents=True)
    for pattern in ("lat_*.csv", "sys-*.txt"):
        for f in source.glob(pattern):
            shutil.copy(f, target / f.name)
    if pin_row:
        header, *rows = (source / PIN_FILE).read_text().splitlines()
        cache, window = PIN_ROW
        keep = [r for r in rows if r.split(",")[2] == cache and float(r.split(",")[5]) == window]
        (target / PIN_FILE).write_text("\n".join([header, *keep]) + "\n")
    return target


def is_pin_row(matched: validate.Matched) -> np.ndarray:
    """Which matched points are the PIN_ROW (not scored: the prediction was fitted to it)."""
    cache, window = PIN_ROW
    return np.array(
        [
            f == PIN_FILE and k[CACHE_INDEX] == cache and k[WINDOW_INDEX] == window
            for f, k in zip(matched.file, matched.keys, strict=True)
        ]
    )


def predict_host(
    source: Path, calibration: Calibration, scratch: Path, pin_row: bool = False
) -> validate.Matched:
    """Predict a host (point, interval, provenance) from its latency files and facts only, and
    with `pin_row` the PIN_ROW beside them; that row is left out of the scores."""
    left_out = load_run(latency_only_copy(source, scratch / "in", pin_row))
    prepared = pin.prepare(left_out, calibration)
    out = scratch / "out" / source.name
    out.parent.mkdir(parents=True)
    predict.predict_files(
        prepared.host,
        calibration.device,
        out,
        clock_ghz=predict.card_clock_ghz(left_out.info.card),
        alternatives=prepared.alternatives,
        band=prepared.band,
        provenance=prepared.provenance,
    )
    matched = validate.match(source, out)
    return matched.subset(~is_pin_row(matched)) if pin_row else matched


def scores(matched: validate.Matched) -> dict[str, float]:
    """MAPE (%) of the acceptance set, of its window sweeps, of everything, of everything but
    the offset sweeps, of the offset sweeps alone and of their device-offset rows (NaN for a
    host without them); interval coverage and median relative width (%) over everything."""
    err = matched.error * 100
    offsets = matched.in_offset_sweeps
    dev = offsets & np.array([k[DEV_OFFSET_INDEX] > 0 for k in matched.keys])
    window = matched.in_acceptance_set & (matched.file != "bw_dma_sz_sweep.csv")
    return {
        "accept": err[matched.in_acceptance_set].mean(),
        "window": err[window].mean(),
        "every": err.mean(),
        "no_offset": err[~offsets].mean(),
        "offsets": err[offsets].mean() if offsets.any() else np.nan,
        "dev_offsets": err[dev].mean() if dev.any() else np.nan,
        "coverage": 100 * matched.covered.mean(),
        "width": 100 * np.median(matched.relative_width),
    }


def pooled(matched: list[validate.Matched], mask: str | None) -> str:
    """'coverage % / median width %' pooled over the points of several hosts."""
    covered, width = [], []
    for m in matched:
        keep = np.ones(m.measured.size, bool) if mask is None else getattr(m, mask)
        covered.append(m.covered[keep])
        width.append(m.relative_width[keep])
    c, w = np.concatenate(covered), np.concatenate(width)
    return f"{100 * c.mean():.1f} % / {100 * np.median(w):.1f} %"


def baseline(run: HostRun, matched: validate.Matched) -> np.ndarray:
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
    """Cross-validate every host and every microarchitecture and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(DATA))
    parser.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "crossval.md")
    )
    args = parser.parse_args()
    dirs = sorted(p for p in Path(args.data).iterdir() if p.is_dir())
    runs = [load_run(d) for d in dirs]
    started = time.perf_counter()
    rows, knee_rows, results, base_err, matches = [], [], [], [], []
    pin_rows, pin_results, row_rows, row_outs, tail_rows = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (source, run) in enumerate(zip(dirs, runs, strict=True)):
            fit = calibrate.fit_device(runs[:i] + runs[i + 1 :])
            matched = predict_host(source, fit, Path(tmp) / str(i))
            keep = matched.in_acceptance_set
            err = matched.error[keep] * 100
            b = np.abs(baseline(run, matched)[keep] / matched.measured[keep] - 1) * 100
            size_sweep = matched.file[keep] == "bw_dma_sz_sweep.csv"
            steady = steadiness(run) <= UNSTEADY_RATIO
            score = scores(matched)
            results.append((steady, score))
            matches.append((steady, matched))
            base_err.append(b.mean())
            rows.append(
                f"| {short(source)} | {steadiness(run):.0f} | "
                f"{err[size_sweep].mean():.1f} | {err[~size_sweep].mean():.1f} | "
                f"**{err.mean():.1f}** | {score['offsets']:.1f} | {score['every']:.1f} | "
                f"{score['coverage']:.0f} | "
                f"{score['width']:.0f} | {b.mean():.1f} |"
            )
            knee_rows += knee_table(source, matched)
            row_out = crossval_rows.leave_one_row_out(run, fit, matched)
            row_outs.append((short(source), row_out))
            row_rows.append(crossval_rows.rows_table_row(short(source), row_out))
            tail_rows.append(crossval_rows.tail_row(short(source), steadiness(run), run, matched))
            pinned = predict_host(source, fit, Path(tmp) / f"{i}-pin", pin_row=True)
            pin_results.append((steady, pinned))
            pin_rows.append(pin_row(source, score, scores(pinned)))
            print(f"{source.name}: MAPE {err.mean():.1f} % (baseline {b.mean():.1f} %)")
        arch_rows, held_rows = microarchitecture_table(dirs, runs, Path(tmp) / "arch")
    elapsed = time.perf_counter() - started
    text = [
        "# Cross validation (issues 3, 14, 29 and 45)",
        "",
        "Regenerate with `python3 scripts/crossval.py` (needs `../shared/data/pcie-bench`).",
        "Each host is predicted from its latency files and host facts only, with the device",
        "calibrated on the other hosts. *accept* is the MAPE (%) over the size sweep (64-2048 B)",
        "and the eight window sweeps (issue 3's acceptance set); *offsets* the MAPE over the",
        "offset sweeps `bw_dma_off_*` (host and device offsets, issue 14 item 3; one host has",
        "none); *everything* the MAPE over all points `validate` scores. *Coverage* is the share",
        "of all scored measured points inside the predicted interval (`bounds.csv`), *width* its",
        "median (high - low) / predicted. *Steadiness* is the worst p99.9/median latency ratio",
        "of the host's latency sweep (hosts above 10 are left out of calibrations).",
        "",
        "| host | steadiness | size sweep | window sweeps | accept | offsets | everything "
        "| coverage % | width % | link-only baseline |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *summary_lines(results, matches, base_err),
        "",
        "## With one bandwidth row (issue 29)",
        "",
        "The same, with one measured row beside the latency files: the 64 B random-read window",
        f"sweep ({PIN_FILE}) at {PIN_ROW[0]}, 64 MiB, past every IOTLB knee. `bench predict`",
        "weighs it where the host misses in its IOTLB and, where it can tell the walker, fits",
        "the walker's busy time to it (docs/bench.md, *What one bandwidth row pins*); it",
        "ignores it elsewhere. The row itself is not scored.",
        "",
        "| host | window sweeps (latency only) | window sweeps (+ row) | accept (latency only) "
        "| accept (+ row) | everything (+ row) | coverage / width (+ row) |",
        "|---|---|---|---|---|---|---|",
        *pin_rows,
        "",
        *pin_summary(pin_results),
        "",
        *rows_section(row_rows, row_outs),
        *tail_section(tail_rows),
        "## Leave one microarchitecture out",
        "",
        "Calibrate on the hosts of the other CPU generations (from sys-cpuinfo.txt), predict",
        "every host of the held-out one, from latency files and facts only. Where the held-out",
        "generation misses in its IOTLB, its walker throughput is unknown to the calibration:",
        "its intervals span the calibrated walker and one walk at a time, and the point is the",
        "middle of the two (docs/bench.md). MAPE is the mean over the held-out hosts; steady",
        "hosts only in *accept (steady)*.",
        "",
        "| held out | hosts | accept (steady) | accept (all) | offsets | everything "
        "| without offsets | coverage / width |",
        "|---|---|---|---|---|---|---|---|",
        *arch_rows,
        "",
        "The held-out generation's IOMMU hosts, window sweeps (MAPE %): from the latency files",
        "alone (the walker's point is the middle of calibrated .. one walk at a time) and with",
        "the one row above (not scored); *busy* is the walker busy time per miss each used (ns).",
        "",
        "| held out | host | IOMMU | window sweeps (latency only) | busy | window sweeps (+ row) "
        "| busy (+ row) | coverage / width (+ row) |",
        "|---|---|---|---|---|---|---|---|",
        *held_rows,
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
    print(f"wrote {args.out}, {elapsed:.0f} s")


def short(source: Path) -> str:
    """A host's name without the card."""
    return source.name.split("_", 1)[1]


def knee_table(source: Path, matched: validate.Matched) -> list[str]:
    """Knee rows of a host's 64 B read and write window sweeps (those with a knee)."""
    out = []
    for file in ("bw_dma_win_sweep_rd_rnd_64.csv", "bw_dma_win_sweep_wr_rnd_64.csv"):
        for cache in ("Cold", "HWarm", "DWarm"):
            km, kp, at64 = knees(matched, file, cache)
            if km is not None or kp is not None:
                out.append(
                    f"| {short(source)} | {file[17:19]} {cache} | {km} | {kp} | {100 * at64:+.1f} |"
                )
    return out


def summary_lines(
    results: list[tuple[bool, dict]], matches: list[tuple[bool, validate.Matched]], base: list
) -> list[str]:
    """The headline lines: MAPE over all and the steady hosts, coverage and width."""
    out = []
    for label, pick in (("all 16 hosts", lambda s: True), ("the 14 steady hosts", bool)):
        chosen = [r for steady, r in results if pick(steady)]
        mean = {k: np.nanmean([r[k] for r in chosen]) for k in chosen[0]}
        worst = max(r["accept"] for r in chosen)
        worst_offsets = np.nanmax([r["offsets"] for r in chosen])
        ms = [m for steady, m in matches if pick(steady)]
        out.append(
            f"- {label.replace('16', str(len(results)))}: MAPE **{mean['accept']:.1f} %** "
            f"on the acceptance set (worst host {worst:.1f} %), **{mean['offsets']:.1f} %** on "
            f"the offset sweeps (worst host {worst_offsets:.1f} %; their DO > 0 rows "
            f"{mean['dev_offsets']:.1f} %), **{mean['every']:.1f} %** "
            f"over everything validate scores, {mean['no_offset']:.1f} % without the offset "
            "sweeps; "
            f"interval coverage / median width: everything {pooled(ms, None)}, "
            f"acceptance set {pooled(ms, 'in_acceptance_set')}"
        )
    out.append(f"- link-only baseline (acceptance set, all hosts): {np.mean(base):.1f} %")
    return out


def microarchitecture_table(
    dirs: list[Path], runs: list, scratch: Path
) -> tuple[list[str], list[str]]:
    """One row per CPU generation (calibrate without it, predict its hosts), and one per
    IOMMU host of the held-out generation from latency files alone and with PIN_ROW."""
    rows, held_rows = [], []
    for gen in sorted({r.generation for r in runs}):
        train = [r for r in runs if r.generation != gen]
        fit = calibrate.fit_device(train)
        held = [(d, r) for d, r in zip(dirs, runs, strict=True) if r.generation == gen]
        results, matched = [], []
        for j, (source, run) in enumerate(held):
            m = predict_host(source, fit, scratch / f"{gen}{j}")
            steady = steadiness(run) <= UNSTEADY_RATIO
            results.append((steady, scores(m)))
            matched.append(m)
            if run.iommu.mode != "off":
                held_rows.append(held_row(gen, source, run, fit, m, scratch / f"{gen}{j}-pin"))
        steady_accept = [s["accept"] for steady, s in results if steady]
        rows.append(
            f"| {gen} | {len(held)} | "
            f"{np.mean(steady_accept) if steady_accept else float('nan'):.1f} | "
            f"{np.mean([s['accept'] for _, s in results]):.1f} | "
            f"{np.nanmean([s['offsets'] for _, s in results]):.1f} | "
            f"{np.mean([s['every'] for _, s in results]):.1f} | "
            f"{np.mean([s['no_offset'] for _, s in results]):.1f} | {pooled(matched, None)} |"
        )
        print(f"held out {gen}: {rows[-1]}")
    return rows, held_rows


def held_row(
    gen: str,
    source: Path,
    run: HostRun,
    fit: Calibration,
    alone: validate.Matched,
    scratch: Path,
) -> str:
    """A held-out IOMMU host's window-sweep MAPE and walker, latency only and with PIN_ROW."""
    pinned = predict_host(source, fit, scratch, pin_row=True)
    busy, busy_pinned = (
        pin.prepare(
            load_run(latency_only_copy(source, scratch / str(row), row)), fit
        ).host.walk_busy_ns
        for row in (False, True)
    )
    stalls = "" if steadiness(run) <= UNSTEADY_RATIO else " (unsteady)"
    return (
        f"| {gen} | {short(source)}{stalls} | {run.iommu.mode} | {scores(alone)['window']:.1f} | "
        f"{busy:.0f} | **{scores(pinned)['window']:.1f}** | {busy_pinned:.0f} | "
        f"{pooled([pinned], None)} |"
    )


def pin_row(source: Path, alone: dict, pinned: dict) -> str:
    """A host's row of the one-bandwidth-row table."""
    return (
        f"| {short(source)} | {alone['window']:.1f} | {pinned['window']:.1f} | "
        f"{alone['accept']:.1f} | **{pinned['accept']:.1f}** | {pinned['every']:.1f} | "
        f"{pinned['coverage']:.0f} % / {pinned['width']:.0f} % |"
    )


def rows_section(rows: list[str], outs: list) -> list[str]:
    """The leave-one-row-out table (issue 45) and its claim."""
    return [
        "## Leave one row out (issue 45)",
        "",
        "Every measured row of a held-out host's bw_*.csv files, given alone beside its latency",
        "files and facts (what `bench predict --host` gets from a folder holding that one row),",
        "against the latency files alone; MAPE (%) over the eight window sweeps without that",
        "row. *past knee*: rows whose window misses in the IOTLB (the only ones weighed);",
        "*used*: rows the pin kept (docs/bench.md, *Weighing a row*); *moved*: rows that moved",
        "the walker off the latency-derived point; *best* and *median*: over the rows past the",
        "knee, *worst* over all. *worse by*: the largest MAPE with one row minus the latency",
        "files alone on the same points; *width*: the latency-only interval's median relative",
        "width over the window sweeps; *holds*: worse by <= width.",
        "",
        "| host | rows | past knee | used | moved | latency only | best | median | worst "
        "| worst row | worse by | width % | holds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *crossval_rows.rows_summary(outs),
        "",
    ]


def tail_section(rows: list[str]) -> list[str]:
    """The rising-tail table (issue 45 item 3)."""
    return [
        "## Rising tails (issue 45)",
        "",
        "How far each host's 64 B window sweeps climb back from their trough past the IOTLB knee",
        "(windows from 1 MiB) to 64 MiB (%): the cache state that climbs most, and the most",
        "any other state climbs (a mechanism of the window moves all four); *Cold vs",
        "DThrash*: their largest difference (%) on the same sweeps past the knee, two",
        "preparations the steady hosts do not tell apart there (one run's scatter); *latency",
        "span*: max - min of the Cold median latency from 4 to 64 MiB (ns; a walk that got",
        "cheaper with the window would lower it); *coverage*: share (%) of those sweeps' points",
        "past the knee inside the latency-only interval. docs/bench.md, *The rising tail*.",
        "",
        "| host | steadiness | 64 B reads: rise | 64 B writes: rise | Cold vs DThrash "
        "| latency span | coverage |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def pin_summary(results: list[tuple[bool, validate.Matched]]) -> list[str]:
    """Mean and worst acceptance-set MAPE with the row, over all and the steady hosts."""
    out = []
    for label, pick in (("all hosts", lambda s: True), ("the steady hosts", bool)):
        chosen = [m for steady, m in results if pick(steady)]
        accept = [scores(m)["accept"] for m in chosen]
        out.append(
            f"- {label} ({len(chosen)}), with the row: MAPE **{np.mean(accept):.1f} %** on the "
            f"acceptance set (worst host {max(accept):.1f} %); interval coverage / median "
            f"width: everything {pooled(chosen, None)}"
        )
    return out


if __name__ == "__main__":
    main()

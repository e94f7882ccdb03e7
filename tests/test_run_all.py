"""benchmarks/run_all.py without running a benchmark: every bench_*.py is in its table, figures
become rows with medians, spreads and ratios, and --readme rewrites only the marked section."""

import sys

import pytest

from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import run_all


def test_every_benchmark_script_is_run():
    run_all.check_complete()  # raises SystemExit naming a bench_*.py that is not in the table
    assert set(run_all.BENCHMARKS) >= {"startup", "sweep", "trace", "sim", "iommu", "counters"}


def test_side_by_side_ratio_is_the_peers_median_over_ours():
    # Hand-computed: medians 2 s (pcieperf) and 6 s (peer): pcieperf is 3x faster.
    figures = {"stats": {"pcieperf": {"runs_s": [1, 2, 3]}, "capinfos": {"runs_s": [5, 6, 9]}}}
    (row,) = run_all.side_by_side_rows(figures)
    assert (row["median"], row["min"], row["max"]) == (2, 1, 3)
    assert (row["peer"], row["peer_median"], row["ratio"]) == ("capinfos", 6, 3.0)


def test_rates_are_better_when_higher_and_repeated_runs_take_the_median():
    figures = {
        "pcieperf": {"dma": {"runs_per_s": [3e8, 1e8, 2e8]}},
        "baseline": {"dma": {"runs_per_s": [1e7, 2e7, 4e7]}},
    }
    (row,) = run_all.sweep_rows(figures)
    assert row["ratio"] == pytest.approx(2e8 / 2e7)  # medians 2e8 and 2e7: 10x
    assert row["target"] == ">= 1e8 /s"  # issue 15's target, for the NIC sweep too
    runs = [{"rows_per_s": 3.0, "explain_s": 1.0}, {"rows_per_s": 1.0, "explain_s": 4.0}]
    runs.append({"rows_per_s": 2.0, "explain_s": 2.0})
    rate, seconds = run_all.repeated_rows(runs)
    assert (rate["median"], rate["min"], rate["max"], rate["unit"]) == (2.0, 1.0, 3.0, "rows/s")
    assert (seconds["median"], seconds["unit"]) == (2.0, "s")


def test_readme_section_is_replaced_and_nothing_else(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{run_all.START}\nold table\n{run_all.END}\noutro\n")
    monkeypatch.setattr(run_all, "README", readme)
    run_all.update_readme("| new |\n")
    assert readme.read_text() == f"intro\n{run_all.START}\n| new |\n{run_all.END}\noutro\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- benchmarks:start -->"):
        run_all.update_readme("| new |\n")


def test_markdown_shows_median_spread_peer_and_skips():
    row = {"figure": "stats", "unit": "s", "median": 0.219, "min": 0.15, "max": 0.242}
    row |= {"peer": "capinfos", "peer_median": 0.732, "peer_min": 0.7, "peer_max": 0.8}
    row |= {"ratio": 0.732 / 0.219, "previous_median": 0.25, "peak_mib": 17.0}
    results = {
        "date": "d",
        "machine": "m",
        "load_before": 1.0,
        "runs": 5,
        "skipped": [{"peer": "dpkt", "reason": "not installed"}],
        "benchmarks": {"trace": {"rows": [row]}, "iommu": {"error": "exited with 1"}},
    }
    text = run_all.markdown(results)
    cells = "| trace | stats | 219 ms [150-242], 17.0 MiB peak | capinfos | 732 ms [700-800] |"
    assert f"{cells} 3.34x |  | 250 ms |" in text
    assert "| iommu | not run: exited with 1 |" in text
    assert "Skipped: dpkt: not installed." in text


def test_a_single_measurement_is_a_row_without_peer():
    # bench_trace's 4 GiB run: one time and a peak, nothing beside it.
    (row,) = run_all.side_by_side_rows({"stats 4 GiB": {"seconds": 27.6, "peak_mib": 17.2}})
    assert (row["median"], row["peer"], row["peak_mib"]) == (27.6, None, 17.2)


def test_archive_speedup_is_one_worker_over_n_and_merge_against_single_process():
    # bench_archive's JSON (keys are strings once written): 1 worker 4 s, 2 workers 2.5 s ->
    # 1.6x; the merge by ranges 3 s against 1.5 s single-process -> 0.5x (slower).
    figures = {
        "merge_single_process_s": 1.5,
        "runs": {
            "1": {
                "wall_s": 4.0,
                "wall_range_s": [3.9, 4.2],
                "merge_s": 2.0,
                "merge_range_s": [2, 2],
            },
            "2": {
                "wall_s": 2.5,
                "wall_range_s": [2.4, 2.6],
                "merge_s": 3.0,
                "merge_range_s": [3, 3],
            },
        },
    }
    one, merge_one, two, merge_two = run_all.archive_rows(figures)
    assert one["ratio"] is None
    assert (two["peer"], two["ratio"]) == ("1 worker", pytest.approx(1.6))
    assert (two["min"], two["max"]) == (2.4, 2.6)
    assert (two["peer_min"], two["peer_max"]) == (3.9, 4.2)  # the table prints the peer's spread
    assert merge_one["ratio"] == pytest.approx(0.75)
    assert merge_two["ratio"] == pytest.approx(0.5)
    results = {"date": "d", "machine": "m", "load_before": 0.0, "runs": 5, "skipped": []}
    table = run_all.markdown(results | {"benchmarks": {"archive": {"rows": [two, merge_two]}}})
    assert "| 2.5 s [2.4-2.6] | 1 worker | 4 s [3.9-4.2] | 1.60x |" in table


def test_model_rates_keep_every_run_and_the_target():
    # benchmarks/_rates.py's JSON: three runs 3e7, 1e7, 2e7 -> median 2e7, spread 1e7-3e7.
    figures = {
        "simulator": {"median_per_s": 2e7, "runs_per_s": [3e7, 1e7, 2e7], "target_per_s": 5e7}
    }
    (row,) = run_all.rates_rows(figures)
    assert (row["median"], row["min"], row["max"]) == (2e7, 1e7, 3e7)
    assert row["target"] == ">= 5e+07 /s"


def test_memory_rows_put_the_peak_beside_its_target_and_the_time_apart():
    # bench_memory's figures: medians 30 MiB (pcieperf) and 690 MiB (baseline): 23x less.
    figures = {
        "nic --trace, 10 M packets (760 MB)": {
            "input_bytes": 760_000_024,
            "target_mib": 64,
            "peak_mib": [31.0, 30.0, 29.0],
            "seconds": [1.0, 2.0, 3.0],
            "baseline_peak_mib": [690.0, 700.0, 680.0],
            "baseline_seconds": [5.0, 4.0, 6.0],
        }
    }
    peak, seconds = run_all.memory_rows(figures)
    assert (peak["unit"], peak["median"], peak["target"]) == ("MiB", 30.0, "< 64 MiB")
    assert peak["ratio"] == pytest.approx(690 / 30)
    assert (seconds["unit"], seconds["median"], seconds["ratio"]) == ("s", 2.0, 2.5)
    assert "target" not in seconds
    assert run_all._cell(peak) == "30 MiB [29-31]"

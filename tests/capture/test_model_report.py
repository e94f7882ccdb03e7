"""The report's capture figure (issue 26 part 5): the model's lines are `pp.capture_model`'s
rows, on the study's setup, with this machine's runs against their predictions."""

from __future__ import annotations

from dataclasses import replace

import pytest

import pcieperf as pp
from pcieperf.capture.calibrate import capture_calibrate
from pcieperf.report import data, plots
from tests.capture.model_synthetic import synthetic_runs


@pytest.fixture(scope="module")
def figure(tmp_path_factory):
    out = tmp_path_factory.mktemp("capture") / "synthetic.toml"
    capture_calibrate(synthetic_runs(noise=0.03), output=out, measured_on="synthetic runs")
    return out, data.capture(replace(data.ReportConfig(), capture_calibration=out))


def test_the_lines_are_the_models_rows(figure):
    calibration, found = figure
    frame = found.frame.set_index("frame_bytes")
    for design in ("per-packet", "batched", "contiguous"):
        rows = pp.capture_model(design=design, sizes="64,320,1518", calibration=calibration)
        column = design.replace("-", "_")
        for row in rows.to_json()["rows"]:
            at = frame.loc[row["size"]]
            assert at[f"{column}_capture_gbps"] == pytest.approx(row["capture_gbps"], rel=1e-12)
            assert at[f"{column}_capture_gbps_low"] == pytest.approx(row["capture_gbps_low"])
            fwd_gbps = row["fwd_pps"] * (row["size"] + 20) * 8 / 1e9  # wire bits per packet
            assert at[f"{column}_fwd_gbps"] == pytest.approx(fwd_gbps, rel=1e-12)
    assert len(found.facts) == 3


def test_the_runs_beside_the_calibration_are_the_measured_points(figure):
    _, found = figure
    runs = found.extra["runs"]
    assert len(runs) == 30  # every synthetic run, read back from synthetic-runs.csv
    assert (runs["capture_mpps"] > 0).all()
    assert (
        runs["predicted_mpps"].sub(runs["capture_mpps"]).abs().div(runs["capture_mpps"]).max() < 0.2
    )
    assert len(plots.draw_capture(found, data.ReportConfig()).axes) == 2


def test_without_runs_one_panel(figure):
    _, found = figure
    alone = replace(found, extra={"runs": None})
    assert len(plots.draw_capture(alone, data.ReportConfig()).axes) == 1

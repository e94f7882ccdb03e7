"""The public API (`import pcieperf as pp`) is what the CLI runs (issue 16): for every command,
the API function's JSON is the CLI's `--json` output, and its results render as DataFrames."""

import json

import pandas as pd
import pytest

import pcieperf as pp
from helpers import run_cli

# (CLI arguments, API function, its keyword arguments): the same question asked both ways.
SAME_QUESTION = [
    (["link"], pp.link, {}),
    (["link", "--gen", "6", "--lanes", "16"], pp.link, {"gen": 6, "lanes": 16}),
    (
        ["link", "--gen", "4", "--addr32", "--ecrc"],
        pp.link,
        {"gen": 4, "addr32": True, "ecrc": True},
    ),
    (["dma"], pp.dma, {}),
    (
        ["dma", "--op", "read", "--sizes", "64,1500", "--mrrs", "256", "--tlps"],
        pp.dma,
        {"op": "read", "sizes": [64, 1500], "mrrs": 256, "tlps": True},
    ),
]


@pytest.mark.parametrize(("argv", "function", "kwargs"), SAME_QUESTION)
def test_the_api_answers_as_the_cli_does(capsys, argv, function, kwargs):
    code, out, _ = run_cli(capsys, *argv, "--json")
    assert code == 0
    assert json.loads(json.dumps(function(**kwargs).to_json())) == json.loads(out)


def test_results_are_dataframes_with_units_in_their_columns():
    # pp.dma: one row per size; a Gen3 64 B write, hand-computed: one TLP of 64 B data + a
    # 4 DW header (64-bit address) + a 4 B STP token carrying the sequence number + a 4 B LCRC
    # (PCIe 3.0 §4.2.2.3.1, §3.6.2) = 88 wire bytes up.
    frame = pp.dma(sizes=[64, 1500]).to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["size"]) == [64, 1500]
    assert frame.loc[0, "tlps_up"] == 1
    assert frame.loc[0, "bytes_up"] == 88
    assert {"effective_gbps", "bytes_up", "bytes_down"} <= set(frame.columns)
    assert "<table" in pp.dma(sizes=[64])._repr_html_()  # Jupyter shows the table


def test_an_object_result_is_one_row():
    # pp.link's JSON is one object: one row, nested values flattened, as `--format csv` has it.
    frame = pp.link(gen=5, lanes=4).to_frame()
    assert len(frame) == 1
    assert frame.loc[0, "gen"] == 5
    # Gen5 x4: 4 lanes x 32 GT/s x 128/130 (128b/130b encoding, PCIe 5.0 §4.2.2.1).
    assert frame.loc[0, "encoded_gbps"] == pytest.approx(4 * 32 * 128 / 130)


def test_bad_keywords_are_usage_errors():
    with pytest.raises(pp.UsageError, match="gen"):
        pp.link(gen=7)
    with pytest.raises(TypeError):
        pp.link(generation=3)  # a misspelt option is Python's own error, naming it

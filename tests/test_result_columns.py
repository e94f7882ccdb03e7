"""Results kept as columns (results.Columnar, issue 16): `pp.dma` and `pp.nic` hand their rows
to a sweep or a DataFrame as the model's columns, without per-row dicts; the columns, the JSON
and the DataFrame must be the same rows whichever way they are asked for."""

import pandas
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.results import Column, Columnar, Table, columns_of_rows, frame


def same_rows(result):
    """The result's columns, JSON rows and DataFrame agree value for value."""
    rows = result.to_json()
    columns = {k: list(v) for k, v in result.to_columns().items()}
    assert {k: [_plain(x) for x in v] for k, v in columns.items()} == columns_of_rows(rows)
    pandas.testing.assert_frame_equal(result.to_frame(), frame(rows))


def _plain(value):
    """A numpy scalar as the Python value the JSON holds."""
    return value.item() if hasattr(value, "item") else value


def test_columnar_rows_are_python_values_in_key_order():
    # Hand-made columns: a list and a tuple, three rows.
    table = Table(Columnar({"size": [64, 128, 256], "ok": (True, False, True)}), ())
    assert table.to_json() == [
        {"size": 64, "ok": True},
        {"size": 128, "ok": False},
        {"size": 256, "ok": True},
    ]
    assert table.to_columns() == {"size": [64, 128, 256], "ok": (True, False, True)}


def test_columnar_text_rows_are_built_only_for_the_text():
    table = Table(
        Columnar({"a": [1.0, 2.5]}),
        (Column("a", "A"), Column("b", "B")),
        text_rows=Columnar({"a": [1.0, 2.5], "b": ["x", "y"]}),
    )
    # format_table shows floats with 2 decimals, right-aligned under their headers.
    assert table.to_text() == "   A  B\n1.00  x\n2.50  y"
    assert table.to_json() == [{"a": 1.0}, {"a": 2.5}]  # "b" is the text's alone


def test_dma_keeps_the_model_columns():
    result = pp.dma(gen=3, lanes=8, op="read", sizes=[64, 1500], offset=32)
    assert isinstance(result.data, Columnar)
    # A 64 B read from offset 32: one request up, two 64 B-RCB completions down (hand-computed,
    # as tests/test_sweep.py's duckdb check).
    first = result.to_json()[0]
    assert (first["size"], first["tlps_up"], first["tlps_down"]) == (64, 1, 2)
    assert type(first["tlps_up"]) is int  # Python ints in the JSON, not numpy's
    same_rows(result)


def test_dma_with_tlps_lists_every_tlp_in_its_row():
    result = pp.dma(op="write", sizes=[64, 300], tlps=True)
    rows = result.to_json()
    # A 300 B write at MPS 256 is two posted writes (256 + 44 B); a 64 B write one.
    assert [len(r["tlps"]) for r in rows] == [1, 2]
    assert [t["data_bytes"] for t in rows[1]["tlps"]] == [256, 44]
    same_rows(result)


@pytest.mark.filterwarnings("ignore::pcieperf.errors.PcieperfWarning")  # 20 Mpps > 40 GbE 1518
def test_nic_columns_with_rate_breakdown_and_mix():
    result = pp.nic(sizes="64,1518,imix", mix=["64:7,1518:1"], pps="20M", breakdown=True)
    rows = result.to_json()
    assert [r["size"] for r in rows] == [64, 1518, "imix", "64:7,1518:1"]
    # 20 Mpps against 40 GbE: 64 B frames carry 59.52 Mpps (40e9 / 672 bits), 1518 B 3.25 Mpps.
    assert [r["fits_line"] for r in rows[:2]] == [True, False]
    assert all(type(r["fits_line"]) is bool for r in rows)
    assert rows[0]["operations"][0]["path"] == "rx"
    same_rows(result)
    text = result.to_text()
    assert "at 20.000 Mpps:" in text  # the needed-bandwidth table, from the same columns


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9216), min_size=1, max_size=20),
    op=st.sampled_from(["read", "write", "rw"]),
    offset=st.integers(0, 63),
)
def test_dma_columns_json_and_frame_are_one_table(sizes, op, offset):
    same_rows(pp.dma(op=op, sizes=sizes, offset=offset))

"""`pp.sweep(spec, output)`: the library's sweep, which `pcieperf sweep` prints. A spec's keys
are the API functions' keyword names (`pp.dma`, `pp.nic`, `pp.iommu.sim`, `pp.bench.sim`),
read from their signatures; a mapping is a spec as well as a TOML file."""

import json

import pytest

pytest.importorskip("distributed", reason="the dask extra (pip install 'pcieperf[dask]')")
pq = pytest.importorskip("pyarrow.parquet", reason="the dask extra (pyarrow)")

import pcieperf as pp  # noqa: E402
from pcieperf.errors import UsageError  # noqa: E402
from tests.helpers.cli import run_cli  # noqa: E402

# tests/data/sweep-dma.toml as a mapping: 3 ops x 2 MPS x sizes 60, 64, 68 = 18 points.
DMA = {
    "command": "dma",
    "chunk": 5,
    "options": {"offset": 32},
    "axes": {
        "op": ["read", "write", "rw"],
        "mps": [128, 256],
        "sizes": {"from": 60, "to": 68, "step": 4},
    },
}
SUMMARY_KEYS = {  # the `sweep --json` keys (docs/scale.md): a contract
    *("output", "command", "points", "rows", "columns", "chunk", "chunks", "chunks_evaluated"),
    *("chunks_resumed", "workers", "seconds", "scheduler", "estimate"),
}


def test_a_mapping_spec_gives_the_file_the_command_line_gives(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dma.toml").write_text(
        'command = "dma"\nchunk = 5\n[options]\noffset = 32\n[axes]\nop = ["read", "write", "rw"]\n'
        "mps = [128, 256]\nsizes = { from = 60, to = 68, step = 4 }\n"
    )
    result = pp.sweep(DMA, "api.parquet")
    code, out, err = run_cli(capsys, "sweep", "dma.toml", "-o", "cli.parquet", "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert set(result.data) == set(printed) == SUMMARY_KEYS
    assert (result.data["points"], result.data["rows"], result.data["chunks"]) == (18, 18, 4)
    assert result.data["scheduler"] == printed["scheduler"] == "in-process"
    assert result.to_text().startswith("18 rows of 18 points -> api.parquet (4 chunks evaluated")
    assert pq.read_table("api.parquet").equals(pq.read_table("cli.parquet"))
    # the same spec: the same metadata (the spec's fingerprint does not hold its source)
    assert pq.read_schema("api.parquet").metadata == pq.read_schema("cli.parquet").metadata


def refused(spec: dict, tmp_path) -> str:
    """The message `pp.sweep` refuses `spec` with, nothing written."""
    with pytest.raises(UsageError) as caught:
        pp.sweep(spec, tmp_path / "o.parquet")
    assert list(tmp_path.iterdir()) == []
    return str(caught.value)


def test_a_bad_value_names_the_api_parameter_and_the_point(tmp_path):
    # pp.iommu.inputs: rxd is a power of two from 64 to 4096 (its own check, no model run)
    message = refused({"command": "iommu sim", "axes": {"rxd": [128, 100]}}, tmp_path)
    assert message == (
        "spec <mapping>: point 1 of 2 (rxd=100): rxd 100 is not allowed; use a power of two "
        "from 64 to 4096"
    )


def test_the_deprecated_pkt_is_no_keyword_of_iommu_sim(tmp_path):
    # `iommu sim --pkt` is the CLI's deprecated spelling of --frame; pp.iommu.sim takes `frame`
    message = refused({"command": "iommu sim", "axes": {"pkt": [64]}}, tmp_path)
    assert message.startswith("spec <mapping>: 'pkt' is not a sweepable option of `iommu sim`")
    assert ", frame, " in message  # the allowed names: inputs()'s keywords


@pytest.mark.parametrize("value", [1, "yes", 0.0])
def test_a_switch_takes_true_or_false_only(tmp_path, value):
    # pp.nic's vlan defaults to False: a switch
    spec = {"command": "nic", "options": {"sizes": 64}, "axes": {"vlan": [value]}}
    message = refused(spec, tmp_path)
    assert message == f"spec <mapping>: vlan = {value!r} is not allowed; use true/false"


def test_a_keyword_without_default_must_be_given(tmp_path):
    # pp.bench.sim has no default host or device profile
    message = refused({"command": "bench sim", "axes": {"sizes": [64]}}, tmp_path)
    assert message == "spec <mapping>: `bench sim` needs host, device (it has no default)"


def test_a_real_keyword_given_a_whole_number_is_a_float(tmp_path):
    # iommu sim's poll_delay (float): 1 is 1.0, as the command line's --poll-delay 1 read it
    spec = {"command": "iommu sim", "options": {"packets": 4000}, "axes": {"poll_delay": [1]}}
    pp.sweep(spec, tmp_path / "o.parquet")
    table = pq.read_table(tmp_path / "o.parquet")
    assert table["poll_delay"].to_pylist() == [1]  # the axis as given
    assert table["poll_delay_us"].to_pylist() == [1.0]
    assert str(table.schema.field("poll_delay_us").type) == "double"

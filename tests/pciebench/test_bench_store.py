"""pcie-bench definitions, strict CSV parsing and the DuckDB store (transactional imports)."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from pcieperf.cli import main
from pcieperf.errors import UsageError
from pcieperf.measure.store import Store
from pcieperf.pciebench import bench
from tests.helpers import PCIE_BENCH

needs_shared = pytest.mark.skipif(
    not PCIE_BENCH.is_dir(), reason="../shared/data/pcie-bench is not present"
)

BW_HEADER = ",".join(bench.BW_COLUMNS)
BW_ROW = "BW_DMA_RD,Rand,HWarm,0,0,8192,64,{cyc},{ns},536870912,8388608,{bw},67000000.0"
LAT_HEADER = ",".join(bench.LAT_COLUMNS)
LAT_ROW = (
    "LAT_DMA_RD,Rand,HWarm,0,0,8192,64,879,649.0,640.0,608,15120,656.0,736.0,732.5,"
    "540.9,533.3,506.7,12600.0,546.7,613.3,1,2097152"
)
SYSTEM = "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630-iommu"


def write_dir(root: Path, name: str = SYSTEM, bw_rows=None, extra: dict | None = None) -> Path:
    """A small, valid pcie-bench result directory."""
    d = root / name
    d.mkdir()
    rows = (
        bw_rows if bw_rows is not None else [BW_ROW.format(cyc=192000000, ns=160000000.0, bw=26.84)]
    )
    (d / "bw_dma_sz_sweep.csv").write_text("\r\n".join([BW_HEADER, *rows]) + "\r\n")
    (d / "lat_dma_sizes.csv").write_text(LAT_HEADER + "\r\n" + LAT_ROW + "\r\n")
    (d / "lat_dma_details_cdf.csv").write_text(
        "cycles,ns,cdf\n704,586.7,0\n720,600.0,0.5\n736,613.3,1.0\n704,586.7,0\n800,666.7,1.0\n"
    )
    (d / "sys-cpuinfo.txt").write_text("model name : Intel(R) Xeon(R) CPU E5-2620 v3\n")
    for file, text in (extra or {}).items():
        (d / file).write_text(text)
    return d


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s1-s0",
            ("bdw", "Xeon-E5-2630v4", "dell-t430", 0, 1, 0, "off"),
        ),
        (
            "nfp6000-1.2GHz_hsw-Xeon-E3-1226v3_fujitsu-tx1310-iommu-nosp",
            ("hsw", "Xeon-E3-1226v3", "fujitsu-tx1310", 0, 0, 0, "nosp"),
        ),
        (
            "nfp6000-1.2GHz_ib-Xeon-E5-2620v2_dell-t620-s0-s1-s1-iommu",
            ("ib", "Xeon-E5-2620v2", "dell-t620", 0, 1, 1, "on"),
        ),
    ],
)
def test_system_names(name, expected):
    info = bench.parse_system_name(name)
    got = (
        info.arch,
        info.cpu,
        info.machine,
        info.numa_device,
        info.numa_memory,
        info.numa_cpu,
        info.iommu,
    )
    assert got == expected
    assert info.card == "nfp6000-1.2GHz"


def test_unparseable_system_name():
    with pytest.raises(UsageError, match="cannot parse system name 'results'"):
        bench.parse_system_name("results")


def test_test_aliases():
    assert bench.canonical_test("bw_rd") == "BW_DMA_RD"
    with pytest.raises(UsageError, match="unknown test 'BW_XX'"):
        bench.canonical_test("BW_XX")


def test_strict_csv_parsing(tmp_path):
    d = write_dir(tmp_path)
    table = bench.read_result_csv(d / "bw_dma_sz_sweep.csv")
    assert table.rows == 1
    assert table.columns["bw_gbps"][0] == pytest.approx(26.84)
    assert table.columns["window_bytes"].dtype == np.int64
    cdf = bench.read_result_csv(d / "lat_dma_details_cdf.csv")
    assert cdf.columns["section"].tolist() == [0, 0, 0, 1, 1]  # a section starts at cdf == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BW_HEADER + ",Extra\n", "line 1: unknown column 'Extra'"),
        (",".join(bench.BW_COLUMNS[:-1]) + "\n", "line 1: columns differ.*missing 'Trans/s'"),
        (
            BW_HEADER + "\n" + BW_ROW.format(cyc=1, ns=1.0, bw=1.0) + "\nBW_DMA_RD,Rand,HWarm,0,0",
            "line 3: 5 fields, expected 13",
        ),
        (BW_HEADER + "\n" + BW_ROW.format(cyc="x", ns=1.0, bw=1.0), "line 2: Time\\(cyc\\) 'x'"),
        (
            BW_HEADER + "\n" + BW_ROW.format(cyc=1, ns=1.0, bw=1.0).replace("HWarm", "Tepid"),
            "line 2: Cache 'Tepid'",
        ),
        (BW_HEADER + "\n" + BW_ROW.format(cyc=1.5, ns=1.0, bw=1.0), "not a whole number"),
        ("", "line 1: empty file"),
        (BW_HEADER + "\n", "no data rows"),
    ],
)
def test_bad_csv_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "bw_dma_sz_sweep.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        bench.read_result_csv(path)


def test_import_is_all_or_nothing(tmp_path):
    good = write_dir(tmp_path)
    bad = write_dir(
        tmp_path, SYSTEM.replace("-iommu", ""), bw_rows=["BW_DMA_RD,Rand,HWarm,0,0,8192"]
    )
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(UsageError, match="line 2: 6 fields"):
            store.import_dirs([good, bad])
        assert store.system_names() == []
        store.import_dirs([good])
        assert store.system_names() == [SYSTEM]
        with pytest.raises(UsageError, match="`force`"):
            store.import_dirs([good])
        store.import_dirs([good], force=True)
        rows = store.rows("bw", "t630-iommu", test="BW_RD")
        assert rows["bw_gbps"].tolist() == pytest.approx([26.84])
        assert store.host_facts(SYSTEM)["cpuinfo"].startswith("model name")
        assert store.systems()[0]["iommu"] == "on"


def test_data_cli_round_trip(tmp_path, capsys):
    d = write_dir(tmp_path)
    db = str(tmp_path / "cli.duckdb")
    assert main(["data", "import", str(d), "--db", db]) == 0
    assert main(["data", "ls", "--db", db, "--json"]) == 0
    assert SYSTEM in capsys.readouterr().out
    assert main(["data", "show", "t630-iommu", "--test", "BW_RD", "--db", db, "--json"]) == 0
    assert '"bw_gbps": 26.84' in capsys.readouterr().out
    assert main(["data", "plot", "--view", "size", "-o", str(tmp_path / "p.png"), "--db", db]) == 0
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert main(["data", "plot", "-o", str(tmp_path / "p.png"), "--db", db]) == 2
    assert main(["data", "show", "nothing", "--test", "BW_RD", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "--force" in err
    assert "no system matches 'nothing'" in err


@needs_shared
def test_import_the_shared_data_set(tmp_path):
    dirs = sorted(p for p in PCIE_BENCH.iterdir() if p.is_dir())
    with Store(tmp_path / "all.duckdb") as store:
        parsed = store.import_dirs(dirs)
        assert len(store.system_names()) == 16
        # One host lacks the window sweeps; the importer tolerates missing files.
        assert any(p.missing for p in parsed)
        rows = store.rows(
            "bw", "bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0", test="BW_RD", file="bw_dma_sz_sweep.csv"
        )
        # The column called "BW (GB/s)" holds Gb/s: 8 * Bytes / Time[ns].
        assert rows["bw_gbps"] == pytest.approx(8 * rows["bytes"] / rows["time_ns"])
        assert rows["bw_gbps"][0] == pytest.approx(8.58195589)  # 16 B reads, first row


@needs_shared
def test_truncated_copy_of_a_real_file_is_rejected(tmp_path):
    src = PCIE_BENCH / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    data = (dst / "bw_dma_sz_sweep.csv").read_bytes()
    (dst / "bw_dma_sz_sweep.csv").write_bytes(data[: len(data) // 2])
    with Store(tmp_path / "t.duckdb") as store, pytest.raises(UsageError, match="bw_dma_sz_sweep"):
        store.import_dirs([dst])

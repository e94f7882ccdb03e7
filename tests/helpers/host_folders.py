"""pcie-bench host folders as `bench predict` gets them: a measured host's latency files and
host facts only, under its own or another name, with or without one bandwidth row beside them
(issue 29: one row past the IOTLB knee pins the walker); and what `bench predict` writes for
one (`predict_prepared`)."""

from pathlib import Path

from pcieperf.pciebench import pin, predict
from pcieperf.pciebench.calibration_file import Calibration
from pcieperf.pciebench.host import HostRun


def latency_only(source: Path, tmp: Path) -> Path:
    """What `bench predict` gets: the latency files and host facts of one host."""
    target = tmp / source.name
    target.mkdir(parents=True)
    for pattern in ("lat_*.csv", "sys-*.txt"):
        for f in source.glob(pattern):
            (target / f.name).write_bytes(f.read_bytes())
    return target


def relabelled(source: Path, tmp: Path, name: str) -> Path:
    """The latency files and host facts of `source` in a directory called `name`."""
    return latency_only(source, tmp).rename(tmp / name)


def as_cpu_model(folder: Path, model: int) -> None:
    """Rewrite the folder's cpuinfo to another Intel model number (a CPU generation no
    calibration host had); the Haswell hosts report model 63."""
    cpuinfo = folder / "sys-cpuinfo.txt"
    cpuinfo.write_text(cpuinfo.read_text().replace("model\t\t: 63", f"model\t\t: {model}"))


def with_row(source: Path, folder: Path, file: str, cache: str, window: int) -> None:
    """Copy one row of a measured bandwidth file (its cache state and window) into `folder`,
    as a one-row file of the same name."""
    header, *rows = (source / file).read_text().splitlines()
    keep = [r for r in rows if r.split(",")[2] == cache and float(r.split(",")[5]) == window]
    assert len(keep) == 1, (file, cache, window)
    (folder / file).write_text("\n".join([header, *keep]) + "\n")


def predict_prepared(run: HostRun, calibration: Calibration, out: Path) -> pin.Prepared:
    """What `bench predict` writes for a host (files, bounds, provenance) at 20 000 simulated
    transactions a row; returns what it simulated."""
    prepared = pin.prepare(run, calibration, transactions=20_000)
    predict.predict_files(
        prepared.host,
        calibration.device,
        out,
        transactions=20_000,
        alternatives=prepared.alternatives,
        band=prepared.band,
        provenance=prepared.provenance,
    )
    return prepared

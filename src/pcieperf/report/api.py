"""The public function behind `pcieperf report` (`pp.report`): keyword arguments named as the
CLI's options, a result that prints as the CLI prints it (pcieperf.results)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcieperf.errors import UsageError, param, require_new_folder
from pcieperf.pcie.api import make_link
from pcieperf.results import Report, Table, csv_text, frame_html

if TYPE_CHECKING:
    from typing import Unpack

    import pandas

    from pcieperf.measure.explain import Explanation
    from pcieperf.pcie.api import LinkOptions


@dataclass(frozen=True)
class ReportResult:
    """Where the report went: its index.html and every file in its folder."""

    index: Path
    files: tuple[str, ...]
    confirms = True  # its text only says where the report went: `--quiet` prints none of it

    def to_json(self) -> dict[str, Any]:
        """`pcieperf report --json`: the index and the folder's file names."""
        return {"index": str(self.index), "files": list(self.files)}

    def to_text(self) -> str:
        """`pcieperf report`: one line saying where the page is."""
        return f"report written to {self.index}"

    def to_columns(self) -> dict[str, Sequence[object]]:
        """One row per file in the report folder, with its size, as columns."""
        folder = self.index.parent
        return {"file": self.files, "size_bytes": [(folder / f).stat().st_size for f in self.files]}

    def to_frame(self) -> pandas.DataFrame:
        """One row per file in the report folder, with its size (`to_columns`)."""
        import pandas

        return pandas.DataFrame(self.to_columns())

    def to_csv(self) -> str:
        """`pcieperf report --format csv`: the JSON as one row (`csv_text`)."""
        return csv_text(self.to_json())

    def _repr_html_(self) -> str:
        """Jupyter shows the files."""
        return frame_html(self.to_frame())


def report(
    *,
    out: str | Path = "pcieperf-report",
    eth: int = 40,
    force: bool = False,
    explanation: Explanation | None = None,
    devices: bool | None = None,
    lspci: str | Path | None = None,
    sysfs: str | Path = "/sys",
    **link_options: Unpack[LinkOptions],
) -> ReportResult:
    """Write the report (figures as PNG + SVG, their CSVs, a self-contained index.html) into
    `out` (`pcieperf report -o OUT`): `link_options` as `pp.make_link` takes them, `eth` the
    Ethernet rate in Gb/s, `explanation` (from `pcieperf explain`'s model) adds the measured
    counters' section; `devices` adds this machine's devices and findings (`pp.devices`; None:
    where `sysfs` shows a PCI Express NIC), or a saved `lspci` text's. A non-empty `out` is
    refused unless `force`."""
    if isinstance(eth, bool) or not isinstance(eth, int) or eth <= 0:
        raise UsageError(f"eth {eth!r} is not allowed; give a whole number of Gb/s > 0")
    link = make_link(**link_options)
    folder = Path(out)
    require_new_folder(folder, force)
    found = _devices(devices, lspci, sysfs)
    from pcieperf.report.data import ReportConfig  # matplotlib: only after the checks
    from pcieperf.report.html import write_report

    cfg = ReportConfig(link=link, eth_gbps=eth, explanation=explanation, devices=found)
    write_report(cfg, folder, force)
    return ReportResult(folder / "index.html", tuple(sorted(p.name for p in folder.iterdir())))


def _devices(devices: bool | None, lspci: str | Path | None, sysfs: str | Path) -> Table | None:
    """The devices section's result: asked for, given as a text, or (None) where this machine
    has a PCI Express NIC."""
    from pcieperf.devices.api import devices as read_devices
    from pcieperf.devices.api import pcie_nics_present

    if devices is False:
        if lspci is not None:
            raise UsageError(f"{param('lspci')} is the devices section's input; drop one of them")
        return None
    if devices is None and lspci is None and not pcie_nics_present(sysfs):
        return None
    return read_devices(lspci=lspci, sysfs=sysfs)


def data_plot(
    systems: Iterable[str] = (),
    *,
    view: str = "size",
    size: int = 64,
    direction: str = "rd",
    output: str | Path = "pcieperf-data.png",
    force: bool = False,
    db: str | Path | None = None,
) -> Report:
    """Plot pcie-bench results from the store (`pcieperf data plot`): bandwidth against transfer
    size, window or offset, or latency CDFs, one line per system (all of them by default)."""
    from pcieperf.measure.records import open_store
    from pcieperf.report.measured import plot_measured

    with open_store(db) as store:
        path = plot_measured(store, list(systems), view, Path(output), size, direction, force)
    return Report({"plot": str(path)}, f"plot written to {path}", confirms=True)

"""pcm-iio counter files for the tests, written from per-second rates (the explain and
`iommu fit` tests make them from the models' own predictions)."""

import datetime as dt
import math
from pathlib import Path

from tests.helpers import TESTS_DATA

PPS = 10e6  # the packet rate of the files: 4 IOTLB lookups per packet at it
PCM_HEADER = "Date,Time,Socket,Name,Part,IB write,IB read,OB read,OB write,IOTLB Lookup,IOTLB Miss"
STACK = "IIO Stack 2 - PCIe0"
SAMPLES = 6
PCM_SAMPLE = TESTS_DATA / "counters" / "pcm-iio-skx.csv"  # 2 blocks 1.001 s apart, 46 samples


def write_pcm(
    path: Path, rates: dict[str, float], scale: dict | None = None, add: dict | None = None
) -> Path:
    """pcm-iio -csv (Ice Lake names) for one busy stack and one idle one, with +-2 % wobble,
    the header before every block and ragged Part1 rows, as pcm writes it."""
    scale, add = scale or {}, add or {}
    lines = []
    for k in range(SAMPLES):
        wobble = 1 + 0.02 * math.sin(k)

        def cell(metric: str, wobble: float = wobble) -> str:
            value = rates.get(metric, 0.0) * scale.get(metric, 1.0) + add.get(metric, 0.0)
            return f"{value * wobble:.0f}"

        stamp = f"2026-11-22,10:00:{k:02d}.000,Socket0"
        values = ",".join(
            cell(m) for m in ("inbound_write", "inbound_read", "outbound_read", "outbound_write")
        )
        iotlb = f"{PPS * 4:.0f},{cell('iotlb_miss')}"
        lines += [
            PCM_HEADER,
            f"{stamp},{STACK},Part0,{values},{iotlb}",
            f"{stamp},{STACK},Part1,0,0,0,0",
            f"{stamp},IIO Stack 1 - DMI,Part0,0,0,0,0,0,0",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def repeated(path: Path, copies: int) -> Path:
    """PCM_SAMPLE's blocks `copies` times over, each copy 2 s after the one before (pcm-iio
    -csv prints a header before every block, so a copy is its text with the times moved)."""
    lines = PCM_SAMPLE.read_text().splitlines()
    stamp = "%Y-%m-%d,%H:%M:%S.%f"
    with path.open("w") as out:
        for k in range(copies):
            for line in lines:
                if line.startswith("Date"):
                    out.write(line + "\n")
                    continue
                when = dt.datetime.strptime(line[:23], stamp) + dt.timedelta(seconds=2 * k)
                out.write(when.strftime(stamp)[:-3] + line[23:] + "\n")
    return path

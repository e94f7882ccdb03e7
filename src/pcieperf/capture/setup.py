"""The capture model's setup (`pcieperf capture model`'s inputs but the link and the rates):
the design, what is copied, where it is written, the cores, each checked in one line."""

from __future__ import annotations

from dataclasses import dataclass

from pcieperf.capture import tools
from pcieperf.capture.calibration import CaptureCalibration
from pcieperf.capture.path import (
    BUFFER_SHARE,
    DESIGNS,
    DIRECTIONS,
    FORMATS,
    MODEL_SINKS,
    Design,
    design,
)
from pcieperf.errors import UsageError, param, require_choice, require_positive


@dataclass(frozen=True)
class CaptureSetup:
    """How the capture runs: the design, what is copied, where it is written, the cores."""

    design: str = "batched"
    format: str | None = None  # None: the design's (pcap for per-packet, else pcapng)
    sink: str = "null"
    sink_gbps: float | None = None  # a bandwidth the sink writes at most (None: CPU only)
    direction: str = "both"
    capture_ports: int = 1
    ports: int = 2
    fwd_lcores: float = 2
    capture_cores: float = 1
    snaplen: int = 0
    ring_size: int = 2048
    buffer_share: float = BUFFER_SHARE
    pool_mbufs: int | None = None  # None: the design's tool's (dumpcap: 2 x ring; pdump: 65535)
    cache_mib: float | None = None  # None: what the calibration's runs measured

    def __post_init__(self) -> None:
        require_choice(param("design"), self.design, DESIGNS)
        require_choice(param("direction"), self.direction, tuple(DIRECTIONS))
        require_choice(param("sink"), self.sink, MODEL_SINKS)
        if self.format is not None:
            require_choice(param("file_format"), self.format, FORMATS)
        if self.format is not None and self.format not in self.tool.formats:
            raise UsageError(
                f"{param('design')} {self.design} is {self.tool.binary}'s: {param('file_format')} "
                f"{' or '.join(self.tool.formats)} only"
            )
        for name in ("fwd_lcores", "capture_cores", "ports", "capture_ports", "ring_size"):
            require_positive(param(name), getattr(self, name))
        for name in ("pool_mbufs", "cache_mib"):
            if getattr(self, name) is not None:
                require_positive(param(name), getattr(self, name))
        if self.capture_cores > self.tool.capture_threads:
            raise UsageError(
                f"{param('capture_cores')} {self.capture_cores:g} is more than the "
                f"{self.tool.capture_threads} capture thread(s) {self.tool.binary} has (design "
                f"{self.design}): give at most {self.tool.capture_threads}"
            )
        if self.snaplen and not self.tool.snaplen:
            raise UsageError(
                f"{param('design')} {self.design} is {self.tool.binary}'s, which writes whole "
                f"packets: leave out {param('snaplen')}"
            )
        if self.capture_ports > self.ports:
            raise UsageError(
                f"{param('capture_ports')} {self.capture_ports} is more than "
                f"{param('ports')} {self.ports}"
            )
        if self.sink_gbps is not None:
            require_positive(param("sink_gbps"), self.sink_gbps)
        if not (isinstance(self.snaplen, int) and self.snaplen >= 0):
            raise UsageError(
                f"{param('snaplen')} {self.snaplen!r} is not allowed; use bytes >= 0 (0: all)"
            )
        if not 0 <= self.buffer_share <= 1:
            raise UsageError(
                f"{param('buffer_share')} {self.buffer_share!r} is not allowed; use 0 to 1"
            )

    @property
    def shape(self) -> Design:
        """The design's row (`capture.path`)."""
        return design(self.design)

    @property
    def tool(self) -> tools.CaptureTool:
        """The tool whose copies and writes the design is."""
        return tools.tool(self.shape.tool)

    @property
    def file_format(self) -> str:
        """The format written: as given, else the design's own."""
        return self.format or self.shape.format

    @property
    def pool(self) -> int:
        """The capture pool's mbufs: as given, else what the design's tool makes."""
        return self.pool_mbufs or self.tool.pool_mbufs(self.ring_size)

    def cache_bytes(self, cal: CaptureCalibration) -> float:
        """The cache the pool must fit: as given, else what the calibration's runs measured."""
        return self.cache_mib * 2**20 if self.cache_mib is not None else cal.meta.cache_bytes

    @property
    def copies(self) -> float:
        """Copies per forwarded packet: each captured port's directions, over all ports (the
        study captures Rx and Tx of one port of two: one copy per forwarded packet)."""
        return DIRECTIONS[self.direction] * self.capture_ports / self.ports

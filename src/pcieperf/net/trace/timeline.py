"""One capture's packets in time order, for computations that go over them more than once
(`nic --trace`, `dpdk-fwd --trace`) in memory that does not grow with the capture: the Rust
core reads it once, sorting it on disk where it is out of time order or cannot be read twice
(standard input, a pipe), and goes over it again for each pass; a pass stops on Ctrl-C,
SIGTERM or SIGHUP between runs of packets."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pcieperf._native import core
from pcieperf.errors import UsageError, require_positive
from pcieperf.net.trace.bandwidth import MAX_WINDOWS, Windows
from pcieperf.net.trace.files import ETHERNET_HEADER_BYTES, LINK_HEADER_BYTES, Interface
from pcieperf.net.trace.statistics import WINDOWS_NS, stats_config
from pcieperf.net.wire import FCS_BYTES, MAX_PRICED_FRAME_BYTES, MIN_FRAME_BYTES

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Timeline:
    """A capture read for passes in time order: its packets, their interfaces and what the
    reader passed over (`skipped`)."""

    path: str
    packets: int
    skipped: int
    interfaces: tuple[Interface, ...]
    per_interface: tuple[int, ...]
    max_wirelen: int
    native: Any  # the core's TraceTimeline

    def frame_sizes(self) -> NDArray[np.int64]:
        """Every frame size (bytes incl. FCS) up to the largest a packet of this capture can
        have, at most MAX_PRICED_FRAME_BYTES (a larger one is an error naming it): the index
        of the costs a pass takes."""
        from pcieperf._numpy import np

        frame = self.max_wirelen + ETHERNET_HEADER_BYTES + FCS_BYTES  # no link header less
        largest = min(max(frame, MIN_FRAME_BYTES), MAX_PRICED_FRAME_BYTES)
        return np.arange(largest + 1, dtype=np.int64)

    def require_ethernet(self) -> None:
        """Refuse a capture with packets on a link type that has no Ethernet equivalent."""
        used = {i.linktype for i, n in zip(self.interfaces, self.per_interface, strict=True) if n}
        unknown = sorted(used - set(LINK_HEADER_BYTES))
        if unknown:
            raise UsageError(
                f"{self.path}: link type {unknown[0]} has no Ethernet equivalent; traces for "
                f"the models need link types {', '.join(map(str, LINK_HEADER_BYTES))}"
            )

    def windows(self, costs: Sequence[NDArray[np.float64]], window_ns: int) -> tuple[Windows, int]:
        """Rates per window of `window_ns` of the bytes `costs[k][frame]` each packet costs
        (by its frame size, `frame_sizes` long), and the frame bytes of all packets."""
        require_positive("window", window_ns)
        self.require_ethernet()
        found = self.native.windows([c.tolist() for c in costs], int(window_ns), MAX_WINDOWS)
        return Windows.of(found, int(window_ns)), int(found["frame_bytes"])

    def poll_batches(self, poll_ns: int, burst: int) -> dict[int, float]:
        """Rx batch histogram {batch: rx_burst calls} of a PMD that polls every `poll_ns` and
        takes up to `burst` packets per call: packets that arrive within one poll period
        share calls. Calls of `burst` first, then the smaller batches, ascending."""
        require_positive("poll period", poll_ns)
        full, smaller = self.native.poll_batches(int(poll_ns), int(burst))
        hist = {burst: float(full)} if full else {}
        hist.update({int(size): float(calls) for size, calls in smaller})
        return hist


def timeline(
    path: str | os.PathLike[str], *, skip_bad: bool = False, strict: bool = False
) -> Timeline:
    """Read a pcap or pcapng file (`-`: standard input; gzip and zstd unpacked) for passes in
    time order; `skip_bad` passes over damaged records, `strict` refuses a capture cut short."""
    config = stats_config(40, WINDOWS_NS)  # frames are sized by the link types alone
    native = core().TraceTimeline(os.fspath(path), config, skip_bad, strict)
    facts = native.facts()
    return Timeline(
        path=os.fspath(path),
        packets=facts["packets"],
        skipped=facts["skipped"],
        interfaces=tuple(Interface(**i) for i in facts["interfaces"]),
        per_interface=tuple(facts["per_interface"]),
        max_wirelen=facts["max_wirelen"],
        native=native,
    )

"""Ethernet line rates, per-frame wire overhead and packet-size mixes.

Frame sizes follow the RFC 2544 convention: destination address through FCS, so a minimum frame
is 64 bytes and a 64-byte frame at 40 Gb/s arrives at 59.52 Mpps. Section numbers refer to
IEEE Std 802.3-2022 unless stated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._values import pairwise_sum
from pcieperf.errors import UsageError
from pcieperf.net import wire
from pcieperf.net.wire import FCS_BYTES, MAX_FRAME_BYTES, MIN_FRAME_BYTES
from pcieperf.net.wire import RATES_GBPS as RATES_GBPS  # the line rates, where models look for them

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray
else:
    from pcieperf._numpy import np


def check_frame_sizes(sizes: ArrayLike) -> NDArray[np.int64]:
    """Validate frame sizes (bytes, incl. FCS) and return them as int64."""
    arr = np.atleast_1d(np.asarray(sizes))
    if arr.dtype.kind not in "iu":
        raise UsageError(f"frame sizes must be whole bytes, got {arr.tolist()[:3]}")
    bad = (arr < MIN_FRAME_BYTES) | (arr > MAX_FRAME_BYTES)
    if np.any(bad):
        check_frame(int(arr[bad][0]))
    return arr.astype(np.int64)


def check_frame(frame: object) -> int:
    """One frame size (bytes incl. FCS), checked: every command's one rule for a frame
    (`--frame`, `--sizes`), what `check_frame_sizes` applies to many."""
    if type(frame) is not int or not MIN_FRAME_BYTES <= frame <= MAX_FRAME_BYTES:
        raise UsageError(
            f"frame size {frame!r} is not allowed; use {MIN_FRAME_BYTES} to "
            f"{MAX_FRAME_BYTES} bytes (Ethernet frame incl. FCS)"
        )
    return frame


def dma_bytes(frames: ArrayLike | int) -> NDArray[np.int64] | int:
    """Bytes a NIC moves over PCIe for a frame: the FCS is checked and stripped on receive and
    appended on transmit (the Linux and DPDK default, e.g. DPDK's KEEP_CRC offload off)."""
    return _ints(frames) - FCS_BYTES


def _ints(frames: ArrayLike | int) -> NDArray[np.int64] | int:
    """Frame sizes as int64 (one Python int as it is: the scalar path)."""
    return frames if type(frames) is int else np.asarray(frames, dtype=np.int64)


def few_frames(frames: list[int]) -> bool:
    """Whether `frames` are Python ints of allowed frame sizes: `check_frame_sizes` would take
    them as they are (the scalar path's check; any other value goes to numpy to be named)."""
    return all(type(f) is int and MIN_FRAME_BYTES <= f <= MAX_FRAME_BYTES for f in frames)


@dataclass(frozen=True)
class Ethernet:
    """An Ethernet port at `rate_gbps`, optionally carrying one VLAN tag per frame on the wire."""

    rate_gbps: float = 40
    vlan: bool = False

    def __post_init__(self) -> None:
        wire.check_rate(self.rate_gbps)

    @property
    def overhead_bytes(self) -> int:
        """Wire bytes per frame besides the frame: preamble, SFD, IFG and a VLAN tag if set."""
        return wire.overhead_bytes(self.vlan)

    def wire_bytes(self, frames: ArrayLike | int) -> NDArray[np.int64] | int:
        """Wire bytes each frame occupies, overhead included."""
        return _ints(frames) + self.overhead_bytes

    def frames_per_second(self, frames: ArrayLike) -> NDArray[np.float64] | float:
        """Line-rate frame rate in one direction."""
        return self.rate_gbps * 1e9 / (8 * self.wire_bytes(frames))

    def frame_gbps(self, frames: ArrayLike) -> NDArray[np.float64]:
        """Frame bits per second at line rate (what reaches the host, FCS included)."""
        return self.frames_per_second(frames) * 8 * np.asarray(frames) / 1e9


@dataclass(frozen=True, eq=False)
class PacketMix:
    """A distribution of frame sizes; `weights` are fractions of packets and sum to 1. Equal
    to another of the same name, sizes and weights, and hashable (a cache key's part)."""

    name: str
    sizes: NDArray[np.int64]
    weights: NDArray[np.float64]

    def _values(self) -> tuple[str, tuple[int, ...], tuple[float, ...]]:
        return self.name, tuple(self.sizes.tolist()), tuple(self.weights.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PacketMix):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    @classmethod
    def fixed(cls, size: int) -> PacketMix:
        """Every frame the same size."""
        return cls(str(size), check_frame_sizes([size]), np.ones(1))

    @classmethod
    def from_counts(cls, name: str, sizes: ArrayLike, counts: ArrayLike) -> PacketMix:
        """A histogram of frame sizes with packet counts (any non-negative numbers)."""
        size = check_frame_sizes(sizes)
        count = np.asarray(counts, dtype=np.float64)
        usable = count.shape == size.shape and np.all((count >= 0) & np.isfinite(count))
        if not (usable and count.max(initial=0) > 0):
            raise UsageError(f"mix {name!r}: counts must be finite, >= 0 and not all zero")
        scaled = count / count.max()  # the sum of 1e308s would overflow
        return cls(name, size, scaled / scaled.sum())

    def mean(self, per_size: ArrayLike) -> NDArray[np.float64]:
        """Mean per packet of a quantity given per size (last axis follows `sizes`)."""
        return np.asarray(per_size, dtype=np.float64) @ self.weights

    @property
    def mean_frame_bytes(self) -> float:
        """Mean frame size of the mix."""
        return float(self.mean(self.sizes))


NAMED_MIXES = {"imix": ((64, 594, 1518), (7, 4, 1))}
"""Named mixes as (frame sizes, packet counts), made into a `PacketMix` when asked for (a
PacketMix holds numpy arrays: importing this module does not load numpy). Simple IMIX 7:4:1 of
40, 576 and 1500-byte IP packets (Agilent/Ixia "simple IMIX"), as Ethernet frames: 40 B IP +
14 B header + 4 B FCS is padded to the 64 B minimum."""


def parse_mix(text: str) -> PacketMix:
    """Parse `64` (fixed), `imix`, or a histogram `size:count,size:count,...`."""
    name, sizes, counts = mix_counts(text)
    if counts is None:
        return PacketMix.fixed(sizes[0])
    return PacketMix.from_counts(name, sizes, counts)


def few_weights(sizes: list[int], counts: list[float]) -> tuple[float, ...] | None:
    """`PacketMix.from_counts(name, sizes, counts).weights` on Python floats, each one the same
    double (numpy's division, and its order of summation: `pairwise_sum`); None where numpy must
    check the sizes or counts (a bad one is named there)."""
    usable = few_frames(sizes) and all(0 <= c < math.inf for c in counts)
    if not (usable and max(counts) > 0):
        return None
    top = max(counts)
    scaled = [c / top for c in counts]  # as from_counts: the sum of 1e308s would overflow
    total = pairwise_sum(scaled)
    return tuple(s / total for s in scaled)


def mix_counts(text: str) -> tuple[str, list[int], list[float] | None]:
    """`text` (`64`, `imix` or `size:count,...`) as its name, frame sizes and packet counts
    (None for one fixed size), not yet checked."""
    token = text.strip().lower()
    if token in NAMED_MIXES:
        named_sizes, named_counts = NAMED_MIXES[token]
        return token, list(named_sizes), [float(c) for c in named_counts]
    if token.isdecimal():  # not isdigit(): int() refuses digits such as "¹"
        return str(int(token)), [int(token)], None
    sizes: list[int] = []
    counts: list[float] = []
    for entry in token.split(","):
        size_text, sep, count_text = entry.partition(":")
        try:
            if not sep:
                raise ValueError
            sizes.append(int(size_text))
            counts.append(float(count_text))
        except ValueError:
            raise UsageError(
                f"packet mix entry {entry!r} in {text!r} is malformed; use a size, "
                f"{', '.join(NAMED_MIXES)}, or size:count pairs like 64:7,594:4,1518:1"
            ) from None
    return text, sizes, counts

"""PCIe links per direction: raw bit rate, line encoding, ordered sets, DLLPs and Flit mode.

The result of this module is one number per direction that the TLP model divides by: the
bandwidth left for TLP bytes (`tlp_gbps`). Everything the link spends outside TLPs (encoding,
SKP ordered sets, ACK/UpdateFC DLLPs, or in Flit mode the flit's DLP/CRC/FEC bytes) is charged
here; the per-TLP framing (STP, sequence number, LCRC) is charged per TLP by `pcieperf.pcie.tlp`.
Directions: `up` = device to host, `down` = host to device. Unless stated, section numbers refer
to the PCI Express Base Specification, Revision 6.0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from pcieperf.errors import UsageError, is_number, param, require_choice, require_power_of_two

CompletionPolicy = Literal["rcb", "mps"]


@dataclass(frozen=True)
class Encoding:
    """A line code: `payload_bits` of data carried in every `total_bits` on the wire."""

    name: str
    payload_bits: int
    total_bits: int

    @property
    def efficiency(self) -> float:
        """Fraction of the raw bit rate that carries symbols."""
        return self.payload_bits / self.total_bits


# §4.2.1: 8b/10b at 2.5 and 5.0 GT/s; §4.2.2: 128b/130b at 8.0, 16.0 and 32.0 GT/s;
# §4.2.3 (PAM4, Flit Mode only): 64.0 GT/s carries flits with no line code (1b/1b).
ENC_8B10B = Encoding("8b/10b", 8, 10)
ENC_128B130B = Encoding("128b/130b", 128, 130)
ENC_1B1B = Encoding("1b/1b", 1, 1)


@dataclass(frozen=True)
class Generation:
    """One PCIe data rate with the link-level constants that go with its encoding."""

    number: int
    gt_per_s: float
    encoding: Encoding
    # Non-Flit per-TLP framing on the wire (physical framing, sequence number, LCRC).
    tlp_framing_bytes: int
    flit_only: bool = False


# Per-TLP framing, §4.2.1.2.1 (8b/10b): STP (1) + 4 reserved bits and 12-bit sequence number (2)
# + LCRC (4) + END (1) = 8 B. §4.2.2.3.1 (128b/130b): the 4-byte STP token already holds the
# sequence number, so STP token (4) + LCRC (4) = 8 B; there is no END token.
GENERATIONS: dict[int, Generation] = {
    1: Generation(1, 2.5, ENC_8B10B, 8),
    2: Generation(2, 5.0, ENC_8B10B, 8),
    3: Generation(3, 8.0, ENC_128B130B, 8),
    4: Generation(4, 16.0, ENC_128B130B, 8),
    5: Generation(5, 32.0, ENC_128B130B, 8),
    6: Generation(6, 64.0, ENC_1B1B, 0, flit_only=True),  # §4.2.3: 64 GT/s is Flit Mode only
}
LANE_WIDTHS = (1, 2, 4, 8, 16, 32)

# §4.2.3.3: a flit is 256 B = 236 B TLP + 6 B DLP + 8 B CRC + 6 B ECC, at every data rate once
# Flit Mode is negotiated. DLLPs travel in the DLP bytes, so ACK/UpdateFC take no TLP space,
# and TLPs carry no STP, sequence number or LCRC.
FLIT_BYTES = 256
FLIT_TLP_BYTES = 236

# §4.2.1.2.1 / §4.2.2.3.1: a DLLP is 6 B plus framing: SDP + END (8b/10b) or a 2-byte SDP token
# (128b/130b), 8 B on the wire either way.
DLLP_WIRE_BYTES = 8


@dataclass(frozen=True)
class SkpSchedule:
    """SKP ordered sets: `size` bytes per lane after every `interval` bytes per lane."""

    size: float
    interval: float

    @property
    def fraction(self) -> float:
        """Share of lane bytes spent on SKP ordered sets."""
        return self.size / (self.interval + self.size)


def skp_schedule(gen: int, lanes: int, flit: bool) -> SkpSchedule:
    """The spec's densest SKP schedule (shortest interval), common clock / SRNS (§4.2.8)."""
    encoding = GENERATIONS[gen].encoding
    if encoding is ENC_8B10B:
        # COM + 3 SKP = 4 symbols every 1180 to 1538 symbol times, Flit Mode or not.
        return SkpSchedule(4, 1180)
    if encoding is ENC_128B130B:
        # One 16-symbol SKP block every 370 to 375 data blocks, plus the 4-symbol EDS token that
        # must end the data stream before it (spread over all lanes). Flit Mode: one SKP block
        # every 374 flits at x16 (Table 4-30), i.e. every 374 blocks on each lane.
        blocks = 374 if flit else 370
        return SkpSchedule(16 + (0 if flit else 4 / lanes), blocks * 16)
    # 1b/1b at 64 GT/s: a 40-byte Control SKP every 748 flits at x16 (Table 4-30), which is
    # 748 * 16 bytes on each lane whatever the width.
    return SkpSchedule(40, 748 * 16)


# Ack (§3.6.3.1, Tables 3-10..3-12) and UpdateFC (§2.6.1.2, Tables 2-52..2-54) latency
# guidelines, Non-Flit Mode, in symbol times; every cell of both (identical) tables is
#   floor((Max_Payload_Size + 28) * AckFactor / link width + InternalDelay),
# with InternalDelay 19, 70 and 115 symbol times at 2.5, 5.0 and >= 8.0 GT/s.
TLP_OVERHEAD_SYMBOLS = 28
_INTERNAL_DELAY_SYMBOLS = {1: 19, 2: 70, 3: 115, 4: 115, 5: 115}


def _ack_factor(mps: int, lanes: int) -> float:
    """AckFactor/UpdateFactor by MPS and width (MindShare PCIe 3.0 Table 10-2)."""
    if mps <= 256:
        return 1.4 if lanes <= 4 else (2.5 if lanes == 8 else 3.0)
    return 1.0 if lanes <= 8 else 2.0


def spec_ack_interval_symbols(gen: int, lanes: int, mps: int) -> float:
    """Symbol times between ACK DLLPs recommended by the spec for this rate, width and MPS."""
    factor = _ack_factor(mps, lanes)
    return math.floor((mps + TLP_OVERHEAD_SYMBOLS) * factor / lanes + _INTERNAL_DELAY_SYMBOLS[gen])


@dataclass(frozen=True)
class Link:
    """A configured PCIe link and the transaction-layer settings that govern TLP sizes.

    `ack_interval_symbols` / `fc_interval_symbols` default to the spec's guideline latency; a
    receiver sends one ACK and `fc_dllps_per_interval` UpdateFC DLLPs per interval, and since the
    reverse direction is assumed busy too (as for a NIC), both directions pay them.
    """

    gen: int = 3
    lanes: int = 8
    mps: int = 256
    mrrs: int = 512
    rcb: int = 64
    addr64: bool = True
    ecrc: bool = False
    flit: bool | None = None
    completion_policy: CompletionPolicy = "rcb"
    ack_interval_symbols: float | None = None
    fc_interval_symbols: float | None = None
    fc_dllps_per_interval: int = 1

    def __post_init__(self) -> None:
        require_choice("generation", self.gen, GENERATIONS)
        require_choice("lane width", self.lanes, LANE_WIDTHS)
        # §7.5.3.4 Device Control: MPS and MRRS encodings 000b..101b = 128..4096 bytes.
        require_power_of_two("MPS", self.mps, 128, 4096)
        require_power_of_two("MRRS", self.mrrs, 128, 4096)
        # §7.5.3.7 Link Control: Read Completion Boundary is 64 or 128 bytes.
        require_choice("RCB", self.rcb, (64, 128))
        require_choice("completion policy", self.completion_policy, ("rcb", "mps"))
        for switch in ("addr64", "ecrc"):
            require_choice(switch, getattr(self, switch), (False, True))
        require_choice("flit", self.flit, (None, False, True))
        if self.flit is False and GENERATIONS[self.gen].flit_only:
            off = param("no_flit")  # the CLI's --no-flit; the API's flit=False
            raise UsageError(f"generation {self.gen} runs only in Flit mode; drop {off}")
        for name in ("ack_interval_symbols", "fc_interval_symbols"):
            value = getattr(self, name)
            if value is not None and not (is_number(value) and value > 0):
                raise UsageError(f"{name} {value!r} is not allowed; it must be > 0 symbol times")
        if self.fc_dllps_per_interval < 0:
            raise UsageError(
                f"fc_dllps_per_interval {self.fc_dllps_per_interval} is not allowed; use 0 or more"
            )

    @classmethod
    def of(cls, settings: object, **overrides: object) -> Link:
        """The link whose settings `settings` holds under the same names (a host profile, a
        host's facts, a calibration's reference host: those it lacks keep their defaults),
        with `overrides` on top."""
        given = {
            f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)
        }
        return cls(**(given | overrides))  # checked in __post_init__

    @property
    def generation(self) -> Generation:
        """The generation's constants."""
        return GENERATIONS[self.gen]

    @property
    def flit_mode(self) -> bool:
        """Whether TLPs travel in 256-byte flits (always at 64 GT/s, optional below)."""
        return self.generation.flit_only if self.flit is None else self.flit

    @property
    def raw_gbps(self) -> float:
        """Bits per second on the wire, all lanes, in Gb/s."""
        return self.generation.gt_per_s * self.lanes

    @property
    def encoded_gbps(self) -> float:
        """Bandwidth after the line code, in Gb/s."""
        return self.raw_gbps * self.generation.encoding.efficiency

    @property
    def skp_fraction(self) -> float:
        """Share of symbol times spent on SKP ordered sets."""
        return skp_schedule(self.gen, self.lanes, self.flit_mode).fraction

    @property
    def ack_interval(self) -> float:
        """Symbol times between ACK DLLPs (Non-Flit Mode)."""
        return self.ack_interval_symbols or spec_ack_interval_symbols(
            self.gen, self.lanes, self.mps
        )

    @property
    def fc_interval(self) -> float:
        """Symbol times between UpdateFC rounds (the spec's FC guideline equals the ACK one)."""
        return self.fc_interval_symbols or spec_ack_interval_symbols(self.gen, self.lanes, self.mps)

    @property
    def dllp_fraction(self) -> float:
        """Share of symbol times spent on ACK and UpdateFC DLLPs (0 in Flit mode).

        An 8-byte DLLP is striped over all lanes, so it occupies 8/lanes symbol times.
        """
        if self.flit_mode:
            return 0.0
        per_lane = DLLP_WIRE_BYTES / self.lanes
        rate = 1 / self.ack_interval + self.fc_dllps_per_interval / self.fc_interval
        return per_lane * rate

    @property
    def flit_fraction(self) -> float:
        """Share of flit bytes that carry TLPs (1 outside Flit mode)."""
        return FLIT_TLP_BYTES / FLIT_BYTES if self.flit_mode else 1.0

    @property
    def tlp_gbps(self) -> float:
        """Bandwidth per direction left for TLP bytes (incl. their per-TLP framing), in Gb/s."""
        usable = (1 - self.skp_fraction) * (1 - self.dllp_fraction) * self.flit_fraction
        return self.encoded_gbps * usable

    @property
    def tlp_bytes_per_s(self) -> float:
        """`tlp_gbps` in bytes per second, the unit the TLP model divides by."""
        return self.tlp_gbps * 1e9 / 8

    @property
    def tlp_overhead_bytes(self) -> int:
        """Bytes every TLP adds besides its header and payload: framing/LCRC and optional ECRC."""
        framing = 0 if self.flit_mode else self.generation.tlp_framing_bytes
        return framing + (4 if self.ecrc else 0)  # §2.7.1: ECRC is one DW TLP digest

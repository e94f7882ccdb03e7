"""A capture filter checked before a run starts: compiled by the libpcap the capture tools use
(dpdk-dumpcap's `-f` calls pcap_compile, app/dumpcap/main.c), for an Ethernet link with the
run's snap length, so that an expression libpcap rejects is refused in one line with libpcap's
own words, not by dumpcap after the forwarding was measured alone. Where libpcap cannot be
loaded, the tool is left to say it (as before)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

from pcieperf.errors import UsageError, param

DLT_EN10MB = 1  # pcap/dlt.h: Ethernet (10Mb, 100Mb, 1000Mb, and up)
NETMASK_UNKNOWN = 0xFFFFFFFF  # pcap/pcap.h PCAP_NETMASK_UNKNOWN
OPTIMIZE = 1  # as dumpcap compiles its filter


class _Program(ctypes.Structure):
    """pcap/bpf.h `struct bpf_program`: the instructions pcap_compile made."""

    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.c_void_p)]


@functools.cache
def _libpcap() -> ctypes.CDLL | None:
    """libpcap, its functions typed; None where it is not installed."""
    name = ctypes.util.find_library("pcap")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.pcap_open_dead.restype = ctypes.c_void_p
    lib.pcap_open_dead.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.pcap_compile.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(_Program),
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_uint32,
    ]
    lib.pcap_geterr.restype = ctypes.c_char_p
    lib.pcap_geterr.argtypes = [ctypes.c_void_p]
    lib.pcap_freecode.argtypes = [ctypes.POINTER(_Program)]
    lib.pcap_close.argtypes = [ctypes.c_void_p]
    return lib


def check_filter(expression: str, snaplen: int) -> None:
    """Refuse, in libpcap's words, a filter it cannot compile for Ethernet at `snaplen`."""
    lib = _libpcap()
    if lib is None:
        return
    handle = lib.pcap_open_dead(DLT_EN10MB, snaplen)
    if not handle:
        return
    program = _Program()
    try:
        failed = lib.pcap_compile(
            handle, ctypes.byref(program), expression.encode(), OPTIMIZE, NETMASK_UNKNOWN
        )
        if failed:
            why = lib.pcap_geterr(handle).decode(errors="replace")
            raise UsageError(
                f"{param('filter')} {expression!r} is not a filter libpcap can compile: {why}"
            )
        lib.pcap_freecode(ctypes.byref(program))
    finally:
        lib.pcap_close(handle)

"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns (`files`),
merging and converting them (`rewrite`), their statistics (`statistics`: rates per window,
frame sizes, bursts at line rate, how far their times can be trusted; `epoch`: dates a century
away), synthetic traffic (`synthesis`), and the per-window bandwidth a trace needs from what
each packet costs (`bandwidth`), summed in passes over a capture in time order (`timeline`).

Parsing, writing, merging, the statistics of captures and the passes run in the Rust core
(`pcieperf._core`); these modules validate arguments, name files in errors and turn the core's
exact counts into rates. Importers take each
name from its submodule (`from pcieperf.net.trace.files import read`), so `trace convert` does
not import the statistics and synthesis it does not run (issue 15: start-up).
"""

"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns (`files`),
merging and converting them (`rewrite`), their statistics (`statistics`: rates per window,
frame sizes, bursts at line rate, how far their times can be trusted; `epoch`: dates a century
away), synthetic traffic (`synthesis`) and the per-window
bandwidth a trace needs from a per-packet cost (`bandwidth`).

Parsing, writing, merging and the statistics of captures run in the Rust core
(`pcieperf._core`); these modules validate arguments, name files in errors, turn the core's
exact counts into rates and compute per-window demand over numpy columns. Importers take each
name from its submodule (`from pcieperf.net.trace.files import read`), so `trace convert` does
not import the statistics and synthesis it does not run (issue 15: start-up).
"""

#!/usr/bin/env bash
# The capture runs that the shipped capture calibration is fitted from (docs/capture.md,
# "Calibration"): dpdk-dumpcap (batched writes) and dpdk-pdump (libpcap's pcap_dump per
# record) behind testpmd on net_null at each frame size, into /dev/null and into a tmpfs file,
# dumpcap also as pcap, REPEATS times each. Needs root (hugepages) and
# Debian's dpdk-dev. Usage: scripts/capture_calibration_runs.sh STORE.duckdb [REPEATS]
set -euo pipefail
db=${1:?usage: $0 STORE.duckdb [REPEATS]}
repeats=${2:-2}
for _ in $(seq "$repeats"); do
    for frame in 64 128 256 512 1024 1500; do
        for sink in null tmpfs; do
            pcieperf capture run --frame "$frame" --sink "$sink" --seconds 4 --db "$db" -q >/dev/null
        done
        pcieperf capture run --frame "$frame" --capture-format pcap --seconds 4 --db "$db" -q >/dev/null
        for sink in null tmpfs; do
            pcieperf capture run --frame "$frame" --tool pdump --capture-format pcap --sink "$sink" \
                --seconds 4 --db "$db" -q >/dev/null
        done
    done
done
pcieperf capture runs --db "$db"

#!/usr/bin/env bash
# Run a pytest selection RUNS times in a row while a CPU hog keeps every core busy: the tests
# must wait on conditions, not on an idle machine (issue 13). The hog is `stress-ng --cpu N`
# (Debian's stress-ng) or, without it, N Python busy loops; N is $HOGS, by default the CPUs we
# may run on (one busy loop per core). It is stopped when the script ends, however it ends.
# Exit 0 only if every run passed.
#
#   scripts/stress_tests.sh 5 tests/dpdk/test_testpmd.py
#   HOGS=4 scripts/stress_tests.sh 3 tests/dpdk/test_testpmd.py -k stopping   # two per core
#
# $PYTHON picks the interpreter (default: python3, the active venv's where one is active).
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 RUNS [PYTEST ARGS...]; RUNS must be a whole number >= 1, got '${1-}'" >&2
    exit 2
fi
runs=$1
shift
python=${PYTHON:-python3}
count=${HOGS:-$(nproc)}
if [[ ! $count =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: HOGS must be a whole number >= 1, got '$count'" >&2
    exit 2
fi
hogs=()

stop_hogs() {
    for pid in "${hogs[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait "${hogs[@]}" 2>/dev/null || true
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM # the EXIT trap still stops the hog

if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$count" --quiet &
    hogs+=("$!")
    hog="stress-ng --cpu $count"
else
    for _ in $(seq "$count"); do
        "$python" -c 'while True: pass' &
        hogs+=("$!")
    done
    hog="$count Python busy loops"
fi
echo "hog: $hog (pid ${hogs[*]}); $runs run(s) of: $python -m pytest -q $*"

failed=0
for run in $(seq "$runs"); do
    start=$EPOCHREALTIME
    if "$python" -m pytest -q "$@"; then verdict=passed; else verdict=FAILED; failed=$((failed + 1)); fi
    took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    for pid in "${hogs[@]}"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "the hog (pid $pid) ended during run $run: that run was not under load" >&2
            exit 1
        fi
    done
    echo "run $run/$runs: $verdict in $took s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "$((runs - failed)) of $runs run(s) passed under $hog"
[[ $failed -eq 0 ]]

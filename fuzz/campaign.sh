#!/usr/bin/env bash
# Fuzz each TARGET for SECONDS, one after the other, at the lowest CPU priority.
#   fuzz/campaign.sh SECONDS TARGET...        (run from the repository root, venv active)
# Python targets run with --keep-going (each distinct crash saved once, fuzzing goes on);
# Rust targets stop at their first crash, as cargo-fuzz does. Logs: fuzz/logs/TARGET.log.
set -u
seconds=$1
shift
mkdir -p fuzz/logs
python_targets=$(python fuzz/python/fuzz.py --list)
for target in "$@"; do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    options=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1)
    if [[ " $python_targets " == *" $target "* ]]; then
        nice -n 19 python fuzz/python/fuzz.py "$target" --keep-going "${options[@]}" \
            -artifact_prefix="fuzz/artifacts/$target/" "fuzz/corpus/$target" \
            >"fuzz/logs/$target.log" 2>&1
    else
        (cd fuzz && CARGO_BUILD_JOBS=1 nice -n 19 cargo +nightly fuzz run "$target" -- "${options[@]}") \
            >"fuzz/logs/$target.log" 2>&1
    fi
    echo "$(date +%T) $target exit $?"
done

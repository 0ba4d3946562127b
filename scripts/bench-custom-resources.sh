#!/usr/bin/env bash
# Custom resources next to built-ins, in one run on one machine (release build):
# * watch fan-out of widgets (a custom resource of the bench's own CRD) and of ConfigMaps,
#   alternating (ConfigMaps, widgets, ConfigMaps, widgets), 1,000 watchers, writes as fast as
#   they go and at 250/s, 15 s each;
# * LIST of 100,000 widgets and of 100,000 pods (1 KiB each) from the cache, consistent and paged.
# Results go to crates/bench/results/ (fanout-kinds-*.json, list-*-100000.json).
#
#   scripts/bench-custom-resources.sh [path/to/listwatch] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
bin=${1:-$CARGO_TARGET_DIR/release/listwatch}
rounds=${2:-2}
mkdir -p crates/bench/results
for round in $(seq 1 "$rounds"); do
    for kind in configmaps widgets; do
        for rate in max 250; do
            echo "=== $kind, round $round, writes/s $rate"
            "$bin" bench fanout --kind "$kind" --watchers 1000 --writes-per-sec "$rate" --duration 15s \
                --output "crates/bench/results/fanout-kinds-$kind-$rate-$round.json" 2>&1 |
                grep -E "^(writes|delivered|latency|complete|usage):"
        done
    done
done
for kind in widgets pods; do
    echo "=== LIST of 100,000 $kind"
    "$bin" bench list --kind "$kind" --objects 100000 --repeat 5 \
        --output "crates/bench/results/list-$kind-100000.json" 2>&1 | grep -vE '^bench:'
done

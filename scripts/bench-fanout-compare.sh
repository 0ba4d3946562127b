#!/usr/bin/env bash
# Watch fan-out of two builds side by side, alternating (A B A B), so both see the same
# machine: 1,000 watchers with writes as fast as they go, then at 250 writes/s, 15 s each.
# Each binary benches a server of its own build (release builds only).
#
#   scripts/bench-fanout-compare.sh OLD/listwatch NEW/listwatch [rounds]
set -euo pipefail
old=${1:?the first listwatch binary}
new=${2:?the second listwatch binary}
rounds=${3:-2}
for round in $(seq 1 "$rounds"); do
    for which in "$old" "$new"; do
        for rate in max 250; do
            echo "=== $which, round $round, writes/s $rate"
            "$which" bench fanout --watchers 1000 --writes-per-sec "$rate" --duration 15s 2>&1 |
                grep -E "^(delivered|latency|complete|usage):"
        done
    done
done

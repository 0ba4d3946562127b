#!/usr/bin/env bash
# The chaos run, outside CI: scenarios/chaos.yaml with many seeds (100 by default), four runs
# at a time (a run spends most of its time waiting: for its schedule, for clients backing off
# after a fault), each with its own report. Prints how many seeds passed, the time, and the
# first violations of every failed seed.
#
#   scripts/chaos.sh            # seeds 1..100
#   scripts/chaos.sh 20 500     # 20 seeds from 500
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

seeds=${1:-100}
first=${2:-1}
cargo build --locked --release --bin listwatch >&2
bin="$CARGO_TARGET_DIR/release/listwatch"
out=$(mktemp -d)
start=$(date +%s)
lane() {
    local from=$1 count=$2
    "$bin" simulate scenarios/chaos.yaml --seed "$from" --runs "$count" --report "$out/lane-$from.json" \
        > "$out/lane-$from.txt" 2>/dev/null || true
}
lanes=${LANES:-4}
per=$(( (seeds + lanes - 1) / lanes ))
for lane_start in $(seq "$first" "$per" $(( first + seeds - 1 ))); do
    count=$(( first + seeds - lane_start ))
    lane "$lane_start" $(( count < per ? count : per )) &
done
wait
end=$(date +%s)
python3 - "$out" "$seeds" $(( end - start )) <<'PY'
import json, pathlib, sys
out, seeds, secs = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
runs = []
for report in sorted(out.glob("lane-*.json")):
    r = json.loads(report.read_text())
    runs += r.get("runs", [r])
passed = [r for r in runs if r["passed"]]
print(f"chaos: {len(passed)} of {len(runs)} seeds passed ({seeds} asked) in {secs} s")
for r in runs:
    if not r["passed"]:
        bad = {k: v for k, v in r["violations"].items() if v}
        print(f"  seed {r['seed']}: violations {bad} checks {r['checks']}")
        for c in r["clients"]:
            for v in c["violations"][:2]:
                print(f"    {c['id']}: {v['guarantee']}: {v['detail']}")
PY
echo "reports and summaries: $out" >&2

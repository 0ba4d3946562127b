#!/bin/bash
# What `listwatch serve --ephemeral --nodes N` holds per pod: D Deployments of R pods are
# created, and once every pod is ready (the Deployments' readyReplicas, read with kubectl) and
# SETTLE seconds (default 30) have passed, the server's RSS against its idle RSS, per pod.
#
# PROFILE=DIR also takes a heap profile at that moment: the binary's jemalloc runs with its
# profiling on (`_RJEM_MALLOC_CONF`; gdb asks for the dump, Debian's libjemalloc-dev brings
# jeprof to read it; neither is needed otherwise), and the live heap is printed by the deepest
# listwatch function on each allocation's stack (what holds the memory: the watch cache's
# objects, storage's values, the controllers' informer caches...). Sampled every 128 KiB on
# average.
#
# Usage: scripts/memory-pods.sh D R N, e.g. `scripts/memory-pods.sh 200 100 200` (20,000 pods),
# with LISTWATCH_BIN or target/release/listwatch; EXTRA="--compaction-interval 30s" adds
# serve flags.
set -euo pipefail
B=${LISTWATCH_BIN:-target/release/listwatch}
D=$1; R=$2; N=$3; SETTLE=${SETTLE:-30}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
serve=("$B" serve --ephemeral --addr 127.0.0.1:0 --kubeconfig "$DIR/kc" --ready-file "$DIR/ready" --nodes "$N")
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  (cd "$PROFILE" && _RJEM_MALLOC_CONF=prof:true,lg_prof_sample:17 exec "${serve[@]}" ${EXTRA:-} > "$DIR/log" 2>&1) &
else
  "${serve[@]}" ${EXTRA:-} > "$DIR/log" 2>&1 &
fi
until [ -s "$DIR/ready" ] && grep -q "fake nodes registered" "$DIR/log"; do sleep 0.5; done
PID=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$DIR/ready")
trap 'kill -INT $PID 2>/dev/null; rm -rf "$DIR"' EXIT
rss() { awk "/$1/{print \$2}" /proc/$PID/status; }
idle=$(rss VmRSS)
t0=$(date +%s.%N)
python3 -c '
import json, sys
n, r = int(sys.argv[1]), int(sys.argv[2])
items = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i}"}, "spec": {
    "replicas": r, "selector": {"matchLabels": {"app": f"d{i}"}},
    "template": {"metadata": {"labels": {"app": f"d{i}"}},
                 "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}} for i in range(n)]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))' "$D" "$R" |
  kubectl --kubeconfig "$DIR/kc" create --validate=false -f - > /dev/null
pods=$((D * R))
ready() {
  kubectl --kubeconfig "$DIR/kc" get deployments -o jsonpath='{range .items[*]}{.status.readyReplicas}{"\n"}{end}' |
    awk '{s += $1} END {print s + 0}'
}
until [ "$(ready)" -ge "$pods" ]; do sleep 2; done
echo "$pods pods on $N nodes ready in $(printf %.1f "$(echo "$(date +%s.%N) - $t0" | bc)") s"
sleep "$SETTLE"
now=$(rss VmRSS)
cpu=$(awk '{printf "%.1f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' /proc/$PID/stat)
echo "RSS idle $((idle / 1024)) MiB, now $((now / 1024)) MiB (peak $(($(rss VmHWM) / 1024)) MiB):" \
  "$(((now - idle) / pods)) KiB per pod; server CPU $cpu s"
if [ -n "${PROFILE:-}" ]; then
  gdb -p "$PID" -batch -ex 'call (int)_rjem_mallctl("prof.dump", 0, 0, 0, 0)' > /dev/null 2>&1
  heap=$(ls -t "$PROFILE"/jeprof.$PID.*.heap | head -1)
  jeprof --collapsed "$B" "$heap" 2> /dev/null | python3 -c '
import collections, re, sys
held, total = collections.Counter(), 0
for line in sys.stdin:
    stack, _, size = line.rstrip("\n").rpartition(" ")
    ours = [f for f in stack.split(";") if "listwatch" in f]
    name = re.sub(r"<[0-9a-f]{16}>|\[inline\]", "", ours[-1]) if ours else "(outside listwatch)"
    held[name[:120]] += int(size)
    total += int(size)
print(f"live heap {total / 2**20:.1f} MiB ({total / 1024 / int(sys.argv[1]):.1f} KiB per pod, the idle heap included), by holder:")
for name, size in held.most_common(15):
    print(f"  {size / 2**20:8.1f} MiB  {100 * size / total:4.1f} %  {name}")' "$pods"
  echo "profile: $heap"
fi

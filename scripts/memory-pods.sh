#!/usr/bin/env bash
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
#   scripts/memory-pods.sh D R N         # e.g. 200 100 200: 20,000 pods on 200 nodes
#
# Needs `cargo build --release` first (target/release/listwatch, or $LISTWATCH_BIN) and kubectl;
# EXTRA="--compaction-interval 30s" adds serve flags.
# shellcheck disable=SC2086 # the extra flags are split on purpose
set -euo pipefail
deployments=$1
replicas=$2
nodes=$3
. "$(dirname "$0")/scale-common.sh"
serve=("$bin" serve --ephemeral --addr 127.0.0.1:0 --kubeconfig "$dir/kubeconfig" --ready-file "$dir/ready" --nodes "$nodes")
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  (cd "$PROFILE" && _RJEM_MALLOC_CONF=prof:true,lg_prof_sample:17 exec "${serve[@]}" ${EXTRA:-} >"$dir/log" 2>&1) &
else
  "${serve[@]}" ${EXTRA:-} >"$dir/log" 2>&1 &
fi
until [ -s "$dir/ready" ] && grep -q "fake nodes registered" "$dir/log"; do sleep 0.5; done
server=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$dir/ready")
rss() { awk "/$1/ {print \$2}" "/proc/$server/status"; }
idle=$(rss VmRSS)
started=$(date +%s.%N)
create_deployments "$deployments" "$replicas"
pods=$((deployments * replicas))
ready() {
  k get deployments -o jsonpath='{range .items[*]}{.status.readyReplicas}{"\n"}{end}' | awk '{s += $1} END {print s + 0}'
}
until [ "$(ready)" -ge "$pods" ]; do sleep 2; done
echo "$pods pods on $nodes nodes ready in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
sleep "${SETTLE:-30}"
now=$(rss VmRSS)
echo "RSS idle $((idle / 1024)) MiB, now $((now / 1024)) MiB: $(((now - idle) / pods)) KiB per pod; $(usage)"
if [ -n "${PROFILE:-}" ]; then
  gdb -p "$server" -batch -ex 'call (int)_rjem_mallctl("prof.dump", 0, 0, 0, 0)' >/dev/null 2>&1
  heap=$(ls -t "$PROFILE"/jeprof."$server".*.heap | head -1)
  jeprof --collapsed "$bin" "$heap" 2>/dev/null | python3 -c '
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

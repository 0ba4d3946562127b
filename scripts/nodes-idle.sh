#!/bin/bash
# The idle cost of `listwatch serve --nodes N` (heartbeats only: Lease renewals, node status,
# the node lifecycle controller's checks): the server's CPU seconds over 60 s once the nodes
# are registered and 20 s have passed, the Lease and node PATCHes in that window, its RSS.
# Usage: scripts/nodes-idle.sh [N] (default 1000), with LISTWATCH_BIN or target/release/listwatch.
set -eu
B=${LISTWATCH_BIN:-target/release/listwatch}
N=${1:-1000}
DIR=$(mktemp -d)
$B serve --ephemeral --addr 127.0.0.1:18473 --kubeconfig "$DIR/kc" --nodes "$N" > "$DIR/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$DIR"' EXIT
t0=$(date +%s.%N)
until grep -q "fake nodes registered" "$DIR/log"; do sleep 0.2; done
t1=$(date +%s.%N)
echo "registered $N nodes in $(echo "$t1 - $t0" | bc) s"
sleep 20
ticks() { awk '{print $14+$15}' /proc/$PID/stat; }
metric() { curl -s http://127.0.0.1:18473/metrics | awk -v r="$1" '$0 ~ "^apiserver_request_total" && $0 ~ "resource=\""r"\"" && $0 ~ "verb=\"PATCH\"" {s+=$2} END {print s+0}'; }
c0=$(ticks); l0=$(metric leases); n0=$(metric nodes)
sleep 60
c1=$(ticks); l1=$(metric leases); n1=$(metric nodes)
hz=$(getconf CLK_TCK)
echo "CPU over 60 s: $(echo "scale=2; ($c1 - $c0) / $hz" | bc) s ($(echo "scale=1; ($c1 - $c0) * 100 / $hz / 60" | bc) % of one core)"
echo "lease PATCHes in 60 s: $((l1 - l0)); node PATCHes: $((n1 - n0))"
grep -E "VmRSS|VmHWM" /proc/$PID/status
KUBECONFIG="$DIR/kc" kubectl get nodes --no-headers | awk '{print $2}' | sort | uniq -c

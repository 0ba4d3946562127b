#!/usr/bin/env bash
# kwok's own CI benchmark bar, run with kubectl against `listwatch serve` (release build, the
# embedded store in memory, every controller in the server's process):
#
#   1. NODES fake nodes (`serve --nodes`) Ready, counted from the server's start: kwok's bar
#      is 5,000 in <= 60 s;
#   2. one Deployment of PODS replicas created with kubectl, every pod Running: <= 60 s for
#      10,000;
#   3. the pods deleted (kubectl delete deployment, the garbage collector and the stand-in
#      kubelet remove them): none left in <= 90 s.
#
#   scripts/kwok-benchmark.sh [NODES] [PODS]       # default 5000 10000
#
# Prints each step's seconds, the server's CPU seconds and peak RSS after it. Needs
# `cargo build --release` first (target/release/listwatch, or $LISTWATCH_BIN) and kubectl.
set -euo pipefail
nodes=${1:-5000}
pods=${2:-10000}
. "$(dirname "$0")/scale-common.sh"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }
# How many nodes are Ready, pods Running, or pods there at all (kubectl's table rows: the
# server renders them, so polling stays cheap next to what it measures).
count() {
  case "$1 $2" in
    "nodes Ready") k get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l ;;
    "pods Running") k get pods --no-headers 2>/dev/null | awk '$3 == "Running"' | wc -l ;;
    *) k get pods --no-headers 2>/dev/null | wc -l ;;
  esac
}
wait_for() {
  local what=$1 state=$2 target=$3 n
  while :; do
    n=$(count "$what" "$state")
    if [ "$state" = "gone" ]; then [ "$n" -eq 0 ] && return; else [ "$n" -ge "$target" ] && return; fi
    sleep 1
  done
}

started=$(now)
"$bin" serve --ephemeral --addr 127.0.0.1:0 --kubeconfig "$dir/kubeconfig" --nodes "$nodes" >"$dir/log" 2>&1 &
server=$!
until [ -s "$dir/kubeconfig" ] && grep -q "serving on" "$dir/log"; do sleep 0.1; done
wait_for nodes Ready "$nodes"
echo "$nodes nodes Ready: $(since "$started") s (kwok's bar: 60 s for 5,000); $(usage)"

started=$(now)
k create deployment bench --image=nginx:1 --replicas="$pods" >/dev/null
wait_for pods Running "$pods"
echo "$pods pods Running: $(since "$started") s (kwok's bar: 60 s for 10,000); $(usage)"

started=$(now)
k delete deployment bench --wait=false >/dev/null
wait_for pods gone 0
echo "$pods pods deleted: $(since "$started") s (kwok's bar: 90 s for 10,000); $(usage)"

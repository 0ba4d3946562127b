#!/usr/bin/env bash
# Measures the controllers at scale: starts `listwatch serve --ephemeral` (release build, all
# controllers), creates DEPLOYMENTS Deployments of REPLICAS pods each, waits until every one
# reports all replicas available, then rolls every one to a new image and waits again. Prints
# the time each phase took and the server's CPU seconds and peak RSS after each.
#
#   scripts/workloads-scale.sh [DEPLOYMENTS] [REPLICAS]      # default 100 x 10
#
# LISTWATCH_SERVE_ARGS adds flags to `serve` (e.g. "--nodes 1000": the pods are then scheduled
# onto fake nodes, which are registered before the Deployments are created). Without a
# --nodes there, the server runs with --nodes 0 and the pods run unbound (serve's default
# single node would hold only 110 of them).
#
# Needs `cargo build --release` first (target/release/listwatch, or $LISTWATCH_BIN) and kubectl.
set -euo pipefail
deployments=${1:-100}
replicas=${2:-10}
. "$(dirname "$0")/scale-common.sh"
case "${LISTWATCH_SERVE_ARGS:-}" in
  *--nodes*) nodes_flag= ;;
  *) nodes_flag="--nodes 0" ;;
esac
# shellcheck disable=SC2086 # the extra flags are split on purpose
"$bin" serve --ephemeral --addr 127.0.0.1:0 --kubeconfig "$dir/kubeconfig" $nodes_flag ${LISTWATCH_SERVE_ARGS:-} >"$dir/log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$dir/kubeconfig" ] && grep -q "serving on" "$dir/log" && break; sleep 0.1; done
case "${LISTWATCH_SERVE_ARGS:-}" in
  *--nodes*) until grep -q "fake nodes registered" "$dir/log"; do sleep 0.2; done ;;
esac
# Waits until every Deployment has observed its generation and has all replicas updated and available.
converged() {
  k get deployments -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
done = [d for d in items if d.get("status", {}).get("observedGeneration", 0) >= d["metadata"]["generation"]
        and d.get("status", {}).get("updatedReplicas", 0) == d["spec"]["replicas"]
        and d.get("status", {}).get("availableReplicas", 0) == d["spec"]["replicas"]
        and d.get("status", {}).get("replicas", 0) == d["spec"]["replicas"]]
sys.exit(0 if len(done) == len(items) == int(sys.argv[1]) else 1)' "$deployments"
}
wait_converged() {
  local started=$1
  until converged; do sleep 1; done
  echo "$2: $(( $(date +%s%N) / 1000000 - started )) ms; $(usage)"
}
started=$(( $(date +%s%N) / 1000000 ))
create_deployments "$deployments" "$replicas"
wait_converged "$started" "$deployments deployments x $replicas pods Running"
started=$(( $(date +%s%N) / 1000000 ))
k set image deployments --all c=nginx:2 >/dev/null
wait_converged "$started" "rolling update of all"
echo "pods: $(k get pods --no-headers | wc -l)"

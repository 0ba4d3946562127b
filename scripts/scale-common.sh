# shellcheck shell=bash
# What the scale benchmarks (kwok-benchmark.sh, workloads-scale.sh, memory-pods.sh) share: the
# release binary, a scratch directory, taking their server down however they end, kubectl
# against it, the server's CPU seconds and peak RSS, and creating Deployments. Sourced; the
# caller starts the server and sets `server`.
bin=${LISTWATCH_BIN:-${CARGO_TARGET_DIR:-target}/release/listwatch}
dir=$(mktemp -d)
server=
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$dir"' EXIT
# (a TERM or INT, from `timeout` say, exits through that trap too, so the server goes with it)
trap 'exit 143' TERM INT
k() { kubectl --kubeconfig "$dir/kubeconfig" "$@"; }
usage() {
  local ticks rss
  ticks=$(awk '{print $14 + $15}' "/proc/$server/stat")
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
  echo "server CPU $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz}') s, peak RSS $((rss / 1024)) MiB"
}
# Creates $1 Deployments d0.. of $2 pods each (one container, labels app=dN), in one request.
create_deployments() {
  python3 -c '
import json, sys
n, r = int(sys.argv[1]), int(sys.argv[2])
items = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i}"}, "spec": {
    "replicas": r, "selector": {"matchLabels": {"app": f"d{i}"}},
    "template": {"metadata": {"labels": {"app": f"d{i}"}},
                 "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}} for i in range(n)]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))' "$1" "$2" | k create --validate=false -f - >/dev/null
}

# shellcheck shell=bash
# What the scale benchmarks (kwok-benchmark.sh, workloads-scale.sh) share: the release binary,
# a scratch directory, taking their server down however they end, kubectl against it, and the
# server's CPU seconds and peak RSS. Sourced; the caller starts the server and sets `server`.
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

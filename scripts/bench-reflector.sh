#!/usr/bin/env bash
# Reflector throughput and memory: listwatch-client's reflector against kube-rs's, on the same
# server and the same pods, each client a separate process measured the same way.
#
#   scripts/bench-reflector.sh                 # 10,000 and 100,000 pods
#   scripts/bench-reflector.sh 10000           # one size
#   UPDATES=50000 MODE=live REPEAT=3 scripts/bench-reflector.sh 100000
#
# For each size N: starts `listwatch serve --ephemeral` (release) on a free port, creates N
# pods of ~1 KiB in namespace `rbench` (`listwatch bench create`), updates each once so every
# pod carries the round annotation (all lists then see objects of the same size), then for each
# client, one at a time:
#   1. the client starts, lists (its reflector's initial sync) into its store, says ready;
#   2. the driver (`reflector_bench update`) PUTs UPDATES pod updates (round-robin over the
#      pods, 8 in flight);
#   3. MODE=backlog (default): the client opens its watch only after the driver is done, so the
#      server replays the UPDATES events from its watch cache as fast as the client takes them
#      (the client's throughput, nothing else running); MODE=live: the client watches while
#      the driver writes (the events arrive at the driver's rate; the figure that matters is
#      then events per CPU second);
#   4. the client prints one JSON line once it has taken in UPDATES events.
# Events per CPU second = events / (user + system CPU seconds of the client process during the
# watch phase); peak RSS = the client's VmHWM over the whole run (list included).
#
# Clients: our `crates/bench/examples/reflector_bench` (built in the workspace) and
# `crates/bench/kube-rs` (kube 5, its own workspace and target directory,
# $LISTWATCH_CACHE/target-kube-rs; nothing else builds it). CLIENTS="listwatch kube-rs" picks.
# JSON lines go to $RESULTS (default: a temporary file, printed at the end). A client that has
# not taken in its events CLIENT_TIMEOUT seconds (300) after the updates is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 100000)
UPDATES="${UPDATES:-100000}"
MODE="${MODE:-backlog}"
REPEAT="${REPEAT:-1}"
CLIENTS="${CLIENTS:-listwatch kube-rs}"
CONCURRENCY="${CONCURRENCY:-8}"
CLIENT_TIMEOUT="${CLIENT_TIMEOUT:-300}"
NAMESPACE=rbench
case "$MODE" in backlog | live) ;; *) echo "MODE must be backlog or live" >&2; exit 2 ;; esac

echo "bench-reflector: building (release)" >&2
cargo build --release --locked -p listwatch --bin listwatch >&2
cargo build --release --locked -p listwatch-bench --example reflector_bench >&2
KUBE_TARGET="$LISTWATCH_CACHE/target-kube-rs"
CARGO_TARGET_DIR="$KUBE_TARGET" cargo build --release --locked --manifest-path crates/bench/kube-rs/Cargo.toml >&2
LISTWATCH="$CARGO_TARGET_DIR/release/listwatch"
OURS="$CARGO_TARGET_DIR/release/examples/reflector_bench"
KUBE="$KUBE_TARGET/release/kube-rs-reflector-bench"

WORK="$(mktemp -d -t bench-reflector.XXXXXX)"
RESULTS="${RESULTS:-$WORK/results.jsonl}"
: >"$RESULTS"
SERVER_PID=""
CLIENT_PID=""
cleanup() {
    [ -z "$CLIENT_PID" ] || kill "$CLIENT_PID" 2>/dev/null || true
    [ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
    local port
    port="$(free_port)"
    URL="http://127.0.0.1:$port"
    KUBECONFIG_FILE="$WORK/kubeconfig"
    # History for every event a client has to replay (backlog mode), whatever its age.
    # No controllers: the bench pods' ReplicaSet has no replicas, and a ReplicaSet controller
    # would delete all but one of them.
    "$LISTWATCH" serve --ephemeral --controllers none --addr "127.0.0.1:$port" --compaction-interval 0 \
        --watch-cache-max-events $((UPDATES + 50000)) --kubeconfig "$KUBECONFIG_FILE" \
        >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        curl -fsS "$URL/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; return 1; }
        sleep 0.05
    done
    echo "the server did not become ready" >&2
    return 1
}

stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# update COUNT: COUNT pod updates, round-robin; every pass over the pods writes a new round.
update() {
    "$OURS" update --server "$URL" --namespace "$NAMESPACE" --updates "$1" --concurrency "$CONCURRENCY" \
        --first-round "$ROUND"
    ROUND=$((ROUND + ($1 + PODS - 1) / PODS))
}

# run_client NAME OBJECTS: one client process through sync, updates and the watch phase.
run_client() {
    local name="$1" objects="$2" out="$WORK/client.out" ready="$WORK/ready" go="$WORK/go"
    local -a cmd=()
    # CLIENT_WRAPPER="perf record -g -o /tmp/client.perf --" profiles the clients.
    [ -z "${CLIENT_WRAPPER:-}" ] || read -r -a cmd <<<"$CLIENT_WRAPPER"
    case "$name" in
        listwatch) cmd+=("$OURS" client) ;;
        kube-rs) cmd+=("$KUBE") ;;
        *) echo "unknown client $name" >&2; return 1 ;;
    esac
    cmd+=(--kubeconfig "$KUBECONFIG_FILE" --namespace "$NAMESPACE" --events "$UPDATES" --ready-file "$ready")
    [ "$MODE" = live ] || cmd+=(--go-file "$go")
    rm -f "$ready" "$go"
    "${cmd[@]}" >"$out" 2>"$WORK/client.err" &
    CLIENT_PID=$!
    while [ ! -e "$ready" ]; do
        if ! kill -0 "$CLIENT_PID" 2>/dev/null; then
            cat "$WORK/client.err" >&2
            return 1
        fi
        sleep 0.02
    done
    update "$UPDATES" >"$WORK/driver.out"
    echo "bench-reflector: $name synced $objects pods; driver: $(cat "$WORK/driver.out")" >&2
    touch "$go"
    local waited=0
    while kill -0 "$CLIENT_PID" 2>/dev/null && [ "$waited" -lt $((CLIENT_TIMEOUT * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$CLIENT_PID" 2>/dev/null; then
        echo "bench-reflector: $name has not taken in $UPDATES events after ${CLIENT_TIMEOUT}s; stopping it" >&2
        kill "$CLIENT_PID"
        cat "$WORK/client.err" >&2
        return 1
    fi
    wait "$CLIENT_PID" || { cat "$WORK/client.err" >&2; return 1; }
    CLIENT_PID=""
    [ ! -s "$WORK/client.err" ] || sed 's/^/  client stderr: /' "$WORK/client.err" >&2
    python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r.update(size=int(sys.argv[2]), mode=sys.argv[3]); print(json.dumps(r))' \
        "$(tail -n 1 "$out")" "$objects" "$MODE" >>"$RESULTS"
}

for size in "${SIZES[@]}"; do
    start_server
    curl -fsS -X POST -H 'Content-Type: application/json' "$URL/api/v1/namespaces" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$NAMESPACE\"}}" >/dev/null
    "$LISTWATCH" bench create --server "$URL" --server-pid "$SERVER_PID" --namespace "$NAMESPACE" \
        --objects "$size" --concurrency "$CONCURRENCY" --object-size 1024 2>&1 | grep -E '^created' >&2
    listed="$(curl -fsS "$URL/api/v1/namespaces/$NAMESPACE/pods" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))')"
    if [ "$listed" != "$size" ]; then
        echo "bench-reflector: the server lists $listed pods after creating $size (log: $WORK/server.log)" >&2
        exit 1
    fi
    PODS="$size"
    ROUND=1
    update "$size" >"$WORK/driver.out"
    echo "bench-reflector: first pass of updates: $(cat "$WORK/driver.out")" >&2
    for _ in $(seq 1 "$REPEAT"); do
        for client in $CLIENTS; do
            run_client "$client" "$size"
        done
    done
    stop_server
done

python3 - "$RESULTS" "$UPDATES" "$MODE" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
mib = lambda b: f"{b / 2**20:,.0f} MiB"
print(f"\nreflector bench: {sys.argv[2]} watch events per run, mode {sys.argv[3]}; ~1 KiB pods\n")
print("| pods | client | initial sync (wall / CPU) | events/s (wall) | events per CPU second | RSS after sync | peak RSS |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    ok = "" if r["store_len"] == r["size"] and r["events"] == int(sys.argv[2]) else " (incomplete!)"
    print(f"| {r['size']:,} | {r['client']}{ok} | {r['sync_seconds']:.2f} s / {r['sync_cpu_seconds']:.2f} s "
          f"| {r['events_per_second']:,.0f} | {r['events_per_cpu_second']:,.0f} "
          f"| {mib(r['rss_after_sync_bytes'])} | {mib(r['peak_rss_bytes'])} |")
print()
for size in sorted({r["size"] for r in rows}):
    ours = [r for r in rows if r["size"] == size and r["client"] == "listwatch-client"]
    kube = [r for r in rows if r["size"] == size and r["client"].startswith("kube-rs")]
    if ours and kube:
        median = lambda rs, k: statistics.median(r[k] for r in rs)
        speed = median(ours, "events_per_cpu_second") / median(kube, "events_per_cpu_second")
        memory = median(ours, "peak_rss_bytes") / median(kube, "peak_rss_bytes")
        print(f"{size:,} pods: listwatch-client / kube-rs (medians of {len(ours)} and {len(kube)} runs): "
              f"{speed:.2f}x events per CPU second, {memory:.2f}x peak RSS (target: >= 2x, <= 1x)")
EOF
echo "results: $RESULTS" >&2

#!/usr/bin/env bash
# The test command: installs what is missing, obtains etcd, starts one shared etcd for the run,
# builds, and runs the whole suite with cargo-nextest.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -E 'test(kubectl)'   # extra arguments go to `cargo nextest run`
#
# Tests that need etcd find the shared one through LISTWATCH_ETCD_ENDPOINTS (isolating
# themselves with a key prefix of their own); tests that kill or compare etcd start private
# ones through scripts/etcd.sh. kubectl is taken from the machine (the 1.32 client behind the
# gcloud dispatcher when present).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

if ! cargo nextest --version >/dev/null 2>&1; then
    echo "test.sh: installing cargo-nextest" >&2
    cargo install --locked cargo-nextest >&2
fi

# Everything the tests install is installed here, once, before any test starts: tests run in
# parallel, and each install script also locks and checks its own work for whoever calls it
# alone. etcd 3.5 (fetched into the cache on first use) and Debian 12's 3.4, for the
# feature-gate tests; the official Python client's virtualenv.
scripts/etcd.sh path >/dev/null
scripts/etcd.sh path --version 3.4 >/dev/null
LISTWATCH_PYTHON=$(scripts/python-client.sh)
export LISTWATCH_PYTHON
# The zoo's released clients (Python, kopf, client-node), each pinned beside its fix.
LISTWATCH_ZOO_CLIENTS=$(scripts/zoo-clients.sh)
export LISTWATCH_ZOO_CLIENTS

etcd_info=$(scripts/etcd.sh start --unsafe --exit-with $$)
etcd_pid=$(sed -n 's/^PID=//p' <<<"$etcd_info")
export LISTWATCH_ETCD_ENDPOINTS=$(sed -n 's/^ENDPOINT=//p' <<<"$etcd_info")
trap 'scripts/etcd.sh stop "$etcd_pid" >/dev/null 2>&1 || true' EXIT
echo "test.sh: shared etcd at $LISTWATCH_ETCD_ENDPOINTS" >&2

# Lints are part of the suite: no import circle wider than two files in any crate, then the
# whole workspace, every target, and the docs.
for src in crates/*/src src; do
    python3 scripts/import_circles.py "$src" --max 2 >/dev/null
done
cargo clippy --locked --workspace --all-targets -- -D warnings >&2
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps >&2

# The end-to-end tests run the built binaries.
cargo build --locked --workspace --bins >&2
export LISTWATCH_BIN="$CARGO_TARGET_DIR/debug/listwatch"
# The kube-rs programs (kube 5, a workspace of their own) the kube-rs and zoo tests run.
LISTWATCH_KUBE_RS_PROGRAMS=$(scripts/kube-rs-programs.sh)
export LISTWATCH_KUBE_RS_PROGRAMS

cargo nextest run --locked --workspace --profile ci "$@"

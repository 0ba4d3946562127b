#!/usr/bin/env bash
# Builds the kube-rs programs the end-to-end tests run against listwatch (`kube` 5, in
# crates/bench/kube-rs: its own workspace and lock file, built into
# $LISTWATCH_CACHE/target-kube-rs, release) and prints the directory holding them.
#
#   scripts/kube-rs-programs.sh        # e.g. .../target-kube-rs/release
set -euo pipefail
cd "$(dirname "$0")/.."
LISTWATCH_CACHE="${LISTWATCH_CACHE:-${HOME:?HOME is not set}/.cache/listwatch}"
target="$LISTWATCH_CACHE/target-kube-rs"
CARGO_TARGET_DIR="$target" cargo build --release --locked --quiet \
    --manifest-path crates/bench/kube-rs/Cargo.toml --bin kube_rs_custom_resource --bin kube_rs_watch >&2
echo "$target/release"

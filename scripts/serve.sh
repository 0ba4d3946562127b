#!/usr/bin/env bash
# The run command: builds listwatch (release) and runs `listwatch serve` with your arguments.
#
#   scripts/serve.sh                      # embedded store in ~/.local/share/listwatch, port 8080
#   scripts/serve.sh --ephemeral          # nothing kept on disk
#   scripts/serve.sh --etcd http://127.0.0.1:2379
#   scripts/serve.sh --help               # every flag
#
# On a fresh machine it first installs protoc (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo build --release --locked -p listwatch --bin listwatch >&2
exec "$CARGO_TARGET_DIR/release/listwatch" serve "$@"

#!/usr/bin/env bash
# Installs what building listwatch needs and is not on a fresh machine, then prints the
# environment the other scripts use. Sourced by serve.sh and test.sh:
#
#   . scripts/setup.sh
#
# * protoc and Google's well-known .proto files (Debian's protobuf-compiler and libprotobuf-dev):
#   etcd-client and our own protobuf schemas are compiled at build time;
# * the build cache lives outside the clone, in ${LISTWATCH_CACHE:-$HOME/.cache/listwatch}/target,
#   so a fresh clone (CI) does not rebuild from nothing. Override with CARGO_TARGET_DIR.

LISTWATCH_CACHE="${LISTWATCH_CACHE:-${HOME:?HOME is not set}/.cache/listwatch}"
export LISTWATCH_CACHE
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$LISTWATCH_CACHE/target}"
mkdir -p "$LISTWATCH_CACHE"

listwatch_apt_install() {
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "setup.sh: need root or sudo to install $*" >&2; return 1; }
        sudo=(sudo)
    fi
    echo "setup.sh: installing $*" >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" >&2 \
        || { "${sudo[@]}" apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" >&2; }
}

if ! command -v protoc >/dev/null 2>&1 || [ ! -f /usr/include/google/protobuf/descriptor.proto ]; then
    listwatch_apt_install protobuf-compiler libprotobuf-dev
fi

# Crates bake their checkout's path in (env!("CARGO_MANIFEST_DIR") finds scripts/ and fixtures),
# and cargo keeps a crate's artifacts when its sources are older than them, whichever checkout
# built them: a clone whose files predate the cache's last build from another clone (CI's, say)
# would run tests that look for scripts in that other clone. When the cache was last built from
# another checkout, this one's Rust sources are marked changed, so its own crates are rebuilt
# (dependencies stay cached).
listwatch_checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
listwatch_checkout_stamp="$CARGO_TARGET_DIR/.listwatch-checkout"
if [ -d "$CARGO_TARGET_DIR" ] && [ "$(cat "$listwatch_checkout_stamp" 2>/dev/null)" != "$listwatch_checkout" ]; then
    echo "setup.sh: the build cache was last built from another checkout; rebuilding this one's crates" >&2
    (cd "$listwatch_checkout" && find src crates tests benches -name '*.rs' -exec touch {} + 2>/dev/null) || true
fi
mkdir -p "$CARGO_TARGET_DIR"
echo "$listwatch_checkout" >"$listwatch_checkout_stamp"

# The build cache outlives clones, and cargo's incremental state only grows (a full build of the
# workspace leaves several GiB of it). When the disk under the cache runs low, drop that state
# before building rather than fail half-way with "No space left on device"; it is only a speed-up.
listwatch_free_kib=$(df -Pk "$LISTWATCH_CACHE" 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$listwatch_free_kib" ] && [ "$listwatch_free_kib" -lt $((12 * 1024 * 1024)) ]; then
    echo "setup.sh: less than 12 GiB free under $LISTWATCH_CACHE; removing cargo's incremental state" >&2
    rm -rf "$CARGO_TARGET_DIR"/debug/incremental "$CARGO_TARGET_DIR"/release/incremental
fi

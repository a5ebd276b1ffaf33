#!/usr/bin/env bash
# The macOS builds, checked on this Linux machine (make check-platforms):
# `cargo check` and `cargo clippy` (warnings denied) of both crates for
# aarch64-apple-darwin and x86_64-apple-darwin. A Unix-only call that
# macOS lacks (F_SETPIPE_SZ, prctl) fails here.
#
# What it cannot cover: without Apple's SDK nothing is linked or run, and
# C code cannot be compiled for macOS. The one C dependency is ring, the
# crypto under rustls, which only the remote upstreams use: the check
# builds without the `remote` feature. Everything else (the relay, the
# layers, the front, the process tree and parent watch for macOS) is
# checked.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
for target in aarch64-apple-darwin x86_64-apple-darwin; do
    rustup target list --installed | grep -qx "$target" || rustup target add "$target" >/dev/null
    printf 'macos: clippy for %s (without remote upstreams)\n' "$target" >&2
    cargo clippy --quiet --target "$target" -p mcp-chain -p mcp-chain-middleware -p mcp-chain-private \
        --no-default-features --lib --bins -- -D warnings
done
printf 'macos: ok: both targets check and are clippy clean\n' >&2

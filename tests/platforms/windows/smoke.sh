#!/usr/bin/env bash
# The Windows build, checked on this Linux machine (make check-platforms):
# mcp-chain and the demo server cross-compiled for x86_64-pc-windows-gnu,
# clippy clean for that target, the unit tests of both crates and a
# scripted session run under Wine: initialize, tools/list, a call, a
# filter refusal, and EOF drained (every answer written, exit 0).
#
# Needs: rustup, Debian's gcc-mingw-w64-x86-64 and wine64 (.ci/run installs
# them). Wine 8 (Debian 12's) lacks bcryptprimitives.dll, which Rust's std
# calls for randomness; bcryptprimitives.c stands in for it in the test's
# own Wine prefix only.
set -euo pipefail
cd "$(dirname "$0")/../../.."
target=x86_64-pc-windows-gnu
say() { printf 'windows: %s\n' "$*" >&2; }

rustup target list --installed | grep -qx "$target" || rustup target add "$target" >/dev/null
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
[ -x "$wine" ] || { say "wine64 is not installed"; exit 1; }
command -v x86_64-w64-mingw32-gcc >/dev/null || { say "mingw-w64 is not installed"; exit 1; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
say "clippy for $target"
cargo clippy --quiet --target "$target" -p mcp-chain -p mcp-chain-middleware -p mcp-chain-private --lib --bins -- -D warnings
say "build for $target"
cargo build --quiet --target "$target" --bin mcp-chain --bin mcp-chain-demo-server
bin="$CARGO_TARGET_DIR/$target/debug"

prefix=$(mktemp -d /tmp/mcp-chain-wine.XXXXXX)
wineserver=$(command -v wineserver || echo "$(dirname "$wine")/wineserver")
trap 'WINEPREFIX="$prefix" "$wineserver" -k 2>/dev/null || true; rm -rf "$prefix" || true' EXIT
export WINEPREFIX="$prefix" WINEDEBUG=-all
timeout 120 "$wine" cmd /c exit >/dev/null 2>&1 || true
x86_64-w64-mingw32-gcc -shared -O2 -o "$prefix/drive_c/windows/system32/bcryptprimitives.dll" \
    tests/platforms/windows/bcryptprimitives.c tests/platforms/windows/bcryptprimitives.def -ladvapi32

say "unit tests under Wine"
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine" \
    timeout 900 cargo test --quiet --target "$target" -p mcp-chain-private -p mcp-chain-middleware -p mcp-chain --lib

say "a session under Wine"
config="$prefix/drive_c/filter.toml"
printf '[[middleware]]\ntype = "filter"\ntools = { deny = ["read_secret"] }\n' > "$config"
out="$prefix/out.jsonl"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wine","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_secret","arguments":{}}}' \
| timeout 180 "$wine" "$bin/mcp-chain.exe" --config 'C:\filter.toml' -- "$bin/mcp-chain-demo-server.exe" > "$out"
# A server named without its extension, as Claude Desktop configs do
# (`npx` is `npx.cmd`): found through PATH and PATHEXT.
mkdir -p "$prefix/drive_c/servers"
cp "$bin/mcp-chain-demo-server.exe" "$prefix/drive_c/servers/"
printf '@"C:\\servers\\mcp-chain-demo-server.exe" %%*\r\n' > "$prefix/drive_c/servers/demo.cmd"
found="$prefix/found.jsonl"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wine","version":"1"}}}' \
| WINEPATH='C:\servers' timeout 180 "$wine" "$bin/mcp-chain.exe" -- demo > "$found"
grep -q '"mcp-chain-demo-server"' "$found" || { say "demo (demo.cmd) was not started: $(cat "$found")"; exit 1; }
missing=$(printf '{}\n' | timeout 180 "$wine" "$bin/mcp-chain.exe" -- not-a-server 2>&1 || true)
case "$missing" in
  *"cannot find the server \`not-a-server\`: tried not-a-server.com, not-a-server.exe, not-a-server.bat, not-a-server.cmd"*) ;;
  *) say "a missing server is not named clearly: $missing"; exit 1 ;;
esac
# The state directory is %LOCALAPPDATA%\mcp-chain.
state=$(timeout 180 "$wine" "$bin/mcp-chain.exe" check --config 'C:\filter.toml' -- demo 2>&1 || true)
case "$state" in
  *'state directory (${MCP_CHAIN_STATE_DIR}): C:\'*'\AppData\Local\mcp-chain'*) ;;
  *) say "the state directory is not under %LOCALAPPDATA%: $state"; exit 1 ;;
esac
python3 - "$out" <<'PY'
import json, sys
answers = {m["id"]: m for m in map(json.loads, open(sys.argv[1]))}
assert answers[1]["result"]["serverInfo"]["name"] == "mcp-chain-demo-server", answers
names = {t["name"] for t in answers[2]["result"]["tools"]}
assert "add" in names and "read_secret" not in names, names
assert answers[3]["result"]["structuredContent"] == {"sum": 42}, answers[3]
assert answers[4]["error"]["code"] == -32602, answers[4]
assert len(answers) == 4, answers
PY

say "the documented Windows entry (docs/claude-desktop.md) under Wine"
python3 tests/platforms/windows/documented_entry.py "$wine" "$prefix" "$bin/mcp-chain.exe" "$bin/mcp-chain-demo-server.exe"

say "ok: built, clippy clean, unit tests and sessions under Wine"

"""@modelcontextprotocol/server-filesystem through mcp-chain: roots declared by
the client decide what the server allows, and a read-only config hides every
tool that writes."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import CONFIGS, EMPTY, FILESYSTEM, NODE, Chain, open_session

pytestmark = pytest.mark.anyio

READONLY = Chain(
    "readonly",
    harness.REPO / "config" / "filesystem-readonly.toml",
    hidden_tools=frozenset({"write_file", "edit_file", "move_file", "create_directory"}),
)
READ_TOOLS = {
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    for d in (a, b):
        d.mkdir()
        (d / "note.txt").write_text(f"this is {d.name}\n")
    return a, b


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def allowed(conn) -> str:
    return text_of(await conn.session.call_tool("list_allowed_directories", {}))


async def read(conn, path: Path) -> tuple[bool, str]:
    try:
        r = await conn.session.call_tool("read_text_file", {"path": str(path)})
    except MCPError as e:
        return False, str(e)
    return not r.is_error, text_of(r)


@pytest.mark.parametrize("chain", [EMPTY, READONLY], ids=lambda c: c.id)
async def test_roots_decide_what_the_server_allows(chain: Chain, dirs):
    harness.require_chain(chain)
    a, b = dirs
    roots = [types.Root(uri=b.as_uri(), name="b")]

    async def list_roots(context):
        return types.ListRootsResult(roots=list(roots))

    # Started with A on its command line; the client's roots (B) replace it.
    async with open_session(
        [NODE, str(FILESYSTEM), str(a)], chain, label=f"mcp-chain[{chain.id}]", list_roots_callback=list_roots
    ) as conn:
        with anyio.fail_after(15):
            while str(b) not in (text := await allowed(conn)):
                await anyio.sleep(0.1)
        assert str(a) not in text, text
        assert await read(conn, b / "note.txt") == (True, "this is b\n")
        ok, why = await read(conn, a / "note.txt")
        assert not ok and "denied" in why.lower(), why

        # The client changes its roots and says so; the server follows.
        roots[:] = [types.Root(uri=a.as_uri(), name="a")]
        await conn.session.send_roots_list_changed()
        with anyio.fail_after(15):
            while str(a) not in (text := await allowed(conn)):
                await anyio.sleep(0.1)
        assert str(b) not in text, text
        assert await read(conn, a / "note.txt") == (True, "this is a\n")
        assert not (await read(conn, b / "note.txt"))[0]


async def test_readonly_config_hides_every_write(dirs):
    harness.require_chain(READONLY)
    a, _ = dirs
    async with open_session([NODE, str(FILESYSTEM), str(a)], READONLY, label="mcp-chain[readonly]") as conn:
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert names == READ_TOOLS, f"exposed: {sorted(names)}"
        for tool, args in [
            ("write_file", {"path": str(a / "new.txt"), "content": "x"}),
            ("edit_file", {"path": str(a / "note.txt"), "edits": [{"oldText": "this", "newText": "that"}]}),
            ("move_file", {"source": str(a / "note.txt"), "destination": str(a / "moved.txt")}),
            ("create_directory", {"path": str(a / "sub")}),
        ]:
            try:
                r = await conn.session.call_tool(tool, args)
            except MCPError as e:
                assert e.error.code == -32602, e.error
            else:
                assert r.is_error, f"{tool} succeeded through the read-only config"
        assert sorted(p.name for p in a.iterdir()) == ["note.txt"]
        assert (a / "note.txt").read_text() == "this is a\n"
        assert (await read(conn, a / "note.txt"))[0]

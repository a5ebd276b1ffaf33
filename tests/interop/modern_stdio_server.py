"""A 2026-07-28 server over stdio on the official Python SDK, for
test_front.py: requests without a session reach it through the front's
shared sessions. `add`, `count` with progress, `deploy` with a parameter
marked for an `Mcp-Param-Region` header, and `touch`, which tells
`subscriptions/listen` streams that the tool list changed."""

from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import Context, MCPServer
server = MCPServer("modern-stdio")
@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b
@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Counts to n with progress."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"counted to {n}"
@server.tool()
def deploy(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """A tool whose `region` a client must mirror in `Mcp-Param-Region`."""
    return f"deployed to {region}"


@server.tool()
async def touch(ctx: Context) -> str:
    """Says the tool list changed."""
    await ctx.notify_tools_changed()
    return "touched"


server.run(transport="stdio")

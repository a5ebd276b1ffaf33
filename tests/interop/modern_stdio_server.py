"""A 2026-07-28 server over stdio on the official Python SDK, for
test_front.py: requests without a session reach it through the front's
shared sessions. `add`, `count` with progress, and `touch`, which tells
`subscriptions/listen` streams that the tool list changed."""

from mcp.server.mcpserver import MCPServer, Context
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
async def touch(ctx: Context) -> str:
    """Says the tool list changed."""
    await ctx.notify_tools_changed()
    return "touched"


server.run(transport="stdio")

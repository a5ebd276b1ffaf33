"""A 2026-07-28 server over stdio on the official Python SDK, for
test_front.py: requests without a session reach it through the front's
shared sessions. `add`, and `count` with progress."""

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
server.run(transport="stdio")

"""A 2026-07-28 stateless Streamable HTTP server on the official Python SDK,
for test_remote.py: it checks the routing headers (Mcp-Method, Mcp-Name)
against the body of each request, as the revision requires.

    python stateless_server.py PORT
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("stateless-fixture")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]), stateless_http=True)

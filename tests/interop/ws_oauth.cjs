// A WebSocket MCP server behind OAuth, for test_oauth.py: the upgrade
// request must carry a bearer token the OAuth fixture issued (it is asked
// at FIXTURE/check); without one the upgrade is answered 401 naming this
// server's protected resource metadata, which names the fixture as its
// authorization server. One JSON-RPC message per text frame.
//
//   node ws_oauth.cjs PORT FIXTURE_BASE
const http = require("node:http");
const { WebSocketServer } = require("ws");

const [port, fixture] = [Number(process.argv[2]), process.argv[3]];
const self = `http://127.0.0.1:${port}`;
const prm = `${self}/.well-known/oauth-protected-resource/mcp`;
const wss = new WebSocketServer({ noServer: true });

const server = http.createServer((req, res) => {
  if (req.url === "/.well-known/oauth-protected-resource/mcp") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ resource: `${self}/mcp`, authorization_servers: [fixture] }));
  } else {
    res.writeHead(404).end();
  }
});

server.on("upgrade", async (req, socket, head) => {
  const check = await fetch(`${fixture}/check`, { headers: { authorization: req.headers.authorization || "" } });
  if (check.status !== 200) {
    socket.end(`HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata="${prm}"\r\nContent-Length: 0\r\n\r\n`);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on("message", (data) => {
      const { id, method } = JSON.parse(data.toString());
      if (id === undefined) return;
      const result =
        method === "initialize"
          ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "ws-oauth", version: "1" } }
          : method === "tools/call"
            ? { content: [{ type: "text", text: "over websocket" }] }
            : {};
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, result }));
    });
  });
});

server.listen(port, "127.0.0.1", () => console.error(`ws oauth listening on ${port}`));

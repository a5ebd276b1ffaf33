// A device platform's WebSocket MCP server, as tests/interop/test_websocket.py
// drives it: every frame is an envelope {"session_id", "type", "payload"};
// MCP travels in frames of type "mcp", among other frames (a "hello" first,
// audio state). Each frame received is appended to the log file as a line.
//
//   node ws_device.cjs PORT LOG_FILE
const fs = require("node:fs");
const { WebSocketServer } = require("ws");

const [port, log] = [Number(process.argv[2]), process.argv[3]];
const session = "dev-42";
const server = new WebSocketServer({ port, host: "127.0.0.1" });

server.on("connection", (ws, request) => {
  fs.appendFileSync(log, JSON.stringify({ protocol: request.headers["sec-websocket-protocol"] || null }) + "\n");
  const send = (frame) => ws.send(JSON.stringify(frame));
  const mcp = (payload) => send({ session_id: session, type: "mcp", payload });
  send({ type: "hello", version: 3, features: { mcp: true }, transport: "websocket", session_id: session });
  ws.on("message", (data) => {
    fs.appendFileSync(log, data.toString() + "\n");
    let frame;
    try {
      frame = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (frame.type !== "mcp") return;
    const { id, method, params } = frame.payload;
    if (method === "initialize") {
      mcp({ jsonrpc: "2.0", id, result: { protocolVersion: "2024-11-05", capabilities: { tools: {} }, serverInfo: { name: "esp32-box", version: "1.0" } } });
    } else if (method === "notifications/initialized") {
      send({ session_id: session, type: "tts", state: "start" });
      mcp({ jsonrpc: "2.0", method: "notifications/state_changed", params: { newState: "idle", oldState: "connecting" } });
    } else if (method === "tools/list") {
      const tool = { name: "self.get_device_status", description: "status", inputSchema: { type: "object", properties: {} } };
      mcp({ jsonrpc: "2.0", id, result: { tools: [tool] } });
    } else if (method === "tools/call" && params.name === "big") {
      mcp({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "x".repeat(200000) }] } });
    } else if (method === "tools/call") {
      mcp({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: `called ${params.name}` }], isError: false } });
    } else if (id !== undefined) {
      mcp({ jsonrpc: "2.0", id, error: { code: -32601, message: `Unknown method: ${method}` } });
    }
  });
});
server.on("listening", () => console.error(`ws device listening on ${port}`));

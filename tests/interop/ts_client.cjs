// The official TypeScript SDK client over Streamable HTTP, for
// test_front.py and test_gateway.py: connects to the URL given, goes
// through a session with server-everything behind mcp-chain's front (its
// tools named with the prefix given second, behind a gateway), and prints
// what it saw as one JSON object. Any failure exits non-zero with the
// error on stderr.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const types = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const url = new URL(process.argv[2]);
  const prefix = process.argv[3] || "";
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: "interop-ts", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  const seen = { sessionId: transport.sessionId, server: client.getServerVersion().name };
  seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const echo = await client.callTool({ name: `${prefix}echo`, arguments: { message: "over HTTP" } });
  seen.echo = echo.content[0].text;
  const progress = [];
  const slow = await client.callTool(
    { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 1, steps: 3 } },
    types.CallToolResultSchema,
    { onprogress: (p) => progress.push(p.progress) },
  );
  seen.progress = progress;
  seen.slow = slow.content[0].text;
  const resource = await client.readResource({ uri: "demo://resource/static/document/architecture.md" });
  seen.resourceBytes = resource.contents[0].text.length;
  await transport.terminateSession();
  await client.close();
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

// The official TypeScript SDK client with its own OAuth support, for
// test_front_oauth.py: it meets mcp-chain's front, which answers 401; the
// SDK discovers the authorization server from mcp-chain's protected
// resource metadata, sends the user to it (here: the redirect is followed
// by hand, no browser), trades the code for a token (PKCE), and connects
// again with it. Prints what it saw as one JSON object.
//
//   node ts_oauth_client.cjs MCP_URL CLIENT_ID
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { UnauthorizedError } = require("@modelcontextprotocol/sdk/client/auth.js");

const [url, clientId] = [new URL(process.argv[2]), process.argv[3]];
const redirectUrl = "http://127.0.0.1:9/callback";
let tokens, verifier, authorizationUrl;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() { return { client_name: "interop-ts", redirect_uris: [redirectUrl], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" }; },
  clientInformation() { return { client_id: clientId }; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  redirectToAuthorization(u) { authorizationUrl = u; },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

async function main() {
  const seen = {};
  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  let client = new Client({ name: "interop-ts-oauth", version: "1.0.0" }, { capabilities: {} });
  try {
    await client.connect(transport);
    throw new Error("connected without a token");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  seen.authorizationServer = authorizationUrl.origin;
  seen.scope = authorizationUrl.searchParams.get("scope");
  seen.resource = authorizationUrl.searchParams.get("resource");
  // The user approves: the authorization server redirects back with a code.
  const approved = await fetch(authorizationUrl, { redirect: "manual" });
  const code = new URL(approved.headers.get("location")).searchParams.get("code");
  await transport.finishAuth(code);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  client = new Client({ name: "interop-ts-oauth", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const echo = await client.callTool({ name: "echo", arguments: { text: "with a token" } });
  seen.echo = echo.content[0].text;
  await client.close();
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

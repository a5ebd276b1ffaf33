// oauth2-mock-server, the third-party authorization server of
// test_oauth.py: RS256 tokens, PKCE, refresh. Prints its issuer URL on
// stdout and serves until killed. With TOKEN_TTL set, access tokens
// expire after that many seconds (and say so), so the refresh is seen.
import { OAuth2Server, Events } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
// As a real provider does: the scope asked at /authorize goes into the
// token, and the `resource` (RFC 8707) of the token request becomes `aud`.
const scopes = new Map();
server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const asked = new URL(req.url, 'http://x').searchParams.get('scope');
  const code = redirect.url.searchParams.get('code');
  if (code && asked) scopes.set(code, asked);
});
server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const body = req.body || {};
  if (body.resource) token.payload.aud = body.resource;
  if (body.code && scopes.has(body.code)) token.payload.scope = scopes.get(body.code);
});
const ttl = Number(process.env.TOKEN_TTL || 0);
if (ttl > 0) {
  server.service.on(Events.BeforeTokenSigning, (token) => {
    token.payload.exp = Math.floor(Date.now() / 1000) + ttl;
  });
  server.service.on(Events.BeforeResponse, (response) => {
    if (response.body && response.body.access_token) response.body.expires_in = ttl;
  });
}
await server.start(0, '127.0.0.1');
console.log(server.issuer.url);

"""An MCP server that accepts only OAuth, and its authorization server,
in one scriptable process: what mcp-chain's OAuth client meets at a hosted
server, and the ways such servers go wrong. Written in-repo because the
faults are ours to choose; the flows themselves are also run against the
conformance suite and a third-party authorization server.

The MCP endpoint (/mcp, stateless JSON) wants `Authorization: Bearer` with
a token this server issued and that has not expired; without one it
answers 401 naming its resource metadata. Tools: `whoami` (the token's
scopes), `admin` (needs the `admin` scope: 403 insufficient_scope).

The authorization server approves every /authorize at once (the test's
"browser" is open_url.py) and checks PKCE S256, the redirect URI, the
client and, unless told to refuse it, `resource`. Knobs on `state`:
rotate refresh tokens (and revoke a login's every token when a rotated
one is used again), access token lifetime, refuse `resource`, revoke
every refresh token, send a wrong `iss`, point the resource metadata at
another origin, dead endpoints, an authorization endpoint of any scheme."""

from __future__ import annotations

import base64
import hashlib
import json
import queue
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class State:
    base: str = ""
    access_ttl: int = 3600
    rotate_refresh: bool = True
    revoke_family_on_reuse: bool = False  # a rotated refresh token used again revokes every token of its login
    family: dict[str, str] = field(default_factory=dict)  # token (access or refresh) → its login
    rotated: dict[str, str] = field(default_factory=dict)  # a refresh token already traded → its login
    families_revoked: int = 0
    refuse_resource: bool = False
    iss: str | None = "good"  # "good", "bad", or None (not sent)
    metadata_elsewhere: str | None = None  # a URL on another origin
    dead_as: bool = False  # the metadata names endpoints nobody serves
    authorization_endpoint: str | None = None  # what the metadata names instead of /authorize
    register_secret: bool = False  # dynamic registrations get a client secret
    refuse_all: bool = False  # the MCP endpoint refuses every token
    jwks_status: int = 200  # what /jwks answers
    introspect_bytes: int = 0  # /introspect answers this many bytes of padding (a hostile issuer)
    client_secret: str | None = None  # a confidential pre-registered client
    issuer: str | None = None  # another authorization server (its JWTs checked against its JWKS)
    jwt_for: str | None = None  # codes are traded for JWTs naming this audience (a person signing in to a console)
    person: str = "alice"  # the `sub` of those JWTs
    grant_scopes: list[str] | None = None  # the scopes those JWTs hold, whatever was asked
    lock: threading.Lock = field(default_factory=threading.Lock)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh: dict[str, list[str]] = field(default_factory=dict)
    authorize: list[dict[str, str]] = field(default_factory=list)
    token: list[dict[str, str]] = field(default_factory=list)
    token_auth: list[str | None] = field(default_factory=list)
    registered: list[dict[str, Any]] = field(default_factory=list)
    mcp_auth: list[str | None] = field(default_factory=list)
    streams: dict[str, "queue.Queue[dict[str, Any]]"] = field(default_factory=dict)
    # As an issuer of JWTs for the HTTP front (a resource server):
    signing_key: Any = None
    jwks_fetches: int = 0
    introspected: dict[str, dict[str, Any]] = field(default_factory=dict)

    def key(self) -> Any:
        from cryptography.hazmat.primitives.asymmetric import rsa

        with self.lock:
            if self.signing_key is None:
                self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            return self.signing_key

    def mint(self, claims: dict[str, Any], alg: str = "RS256", kid: str = "k1", key: Any = None) -> str:
        """A JWT with `claims` (iss, exp filled in unless given), signed
        with this issuer's key unless another is given."""
        import jwt

        body = {"iss": self.base, "exp": int(time.time()) + 300, "iat": int(time.time()), **claims}
        return jwt.encode(body, key if key is not None else self.key(), algorithm=alg, headers={"kid": kid})

    def jwks(self) -> dict[str, Any]:
        import jwt

        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key().public_key()))
        jwk.update({"kid": "k1", "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def issue(self, scopes: list[str], family: str | None = None) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(16)
        refresh = "rt-" + secrets.token_urlsafe(16)
        self.access[access] = {"scopes": scopes, "expires": time.time() + self.access_ttl}
        self.refresh[refresh] = scopes
        family = family or secrets.token_urlsafe(8)
        self.family[access] = self.family[refresh] = family
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "refresh_token": refresh,
            "scope": " ".join(scopes),
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *args: Any) -> None:
        pass

    def send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def flood(self, size: int) -> None:
        """A JSON answer of `size` bytes, written until the reader stops."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b" " * (1 << 20)
        try:
            self.wfile.write(b'{"active": true, "pad": "')
            for _ in range(size // len(chunk)):
                self.wfile.write(chunk)
        except OSError:
            pass

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # --- metadata --------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        s = self.state
        path, _, query = self.path.partition("?")
        if path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/sse"):
            self.send(200, {"resource": s.base + "/" + path.rsplit("/", 1)[1], "authorization_servers": [s.issuer or s.base],
                            "scopes_supported": ["read", "admin"]})
        elif path == "/.well-known/oauth-authorization-server":
            endpoint = "http://127.0.0.1:9" if s.dead_as else s.base
            self.send(200, {
                "issuer": s.base,
                "authorization_endpoint": s.authorization_endpoint or endpoint + "/authorize",
                "token_endpoint": endpoint + "/token",
                "registration_endpoint": endpoint + "/register",
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                "authorization_response_iss_parameter_supported": s.iss is not None,
                "jwks_uri": s.base + "/jwks",
                "introspection_endpoint": s.base + "/introspect",
                "scopes_supported": ["read", "admin"],
            })
        elif path == "/authorize":
            self.authorize(dict(urllib.parse.parse_qsl(query)))
        elif path == "/jwks":
            with s.lock:
                s.jwks_fetches += 1
            self.send(s.jwks_status, s.jwks() if s.jwks_status == 200 else {"error": "down"})
        elif path == "/check":
            # For the WebSocket server of ws_oauth.cjs: is this bearer good?
            self.send(200 if self.held() else 401, {})
        elif path == "/sse":
            self.legacy_stream()
        else:
            self.send(404, {"error": "not found"})

    def authorize(self, q: dict[str, str]) -> None:
        s = self.state
        with s.lock:
            s.authorize.append(q)
        if s.refuse_resource and "resource" in q:
            self.redirect(q, {"error": "invalid_target", "error_description": "resource not accepted"})
            return
        code = secrets.token_urlsafe(12)
        with s.lock:
            s.codes[code] = q
        back = {"code": code}
        if s.iss == "good":
            back["iss"] = s.base
        elif s.iss == "bad":
            back["iss"] = "http://evil.example"
        self.redirect(q, back)

    def redirect(self, q: dict[str, str], params: dict[str, str]) -> None:
        params["state"] = q.get("state", "")
        self.send(302, None, {"Location": q["redirect_uri"] + "?" + urllib.parse.urlencode(params)})

    # --- token, registration, MCP -------------------------------------------

    def do_POST(self) -> None:  # noqa: N802
        if self.path == "/token":
            self.token(dict(urllib.parse.parse_qsl(self.body().decode())))
        elif self.path == "/register":
            request = json.loads(self.body())
            with self.state.lock:
                self.state.registered.append(request)
                n = len(self.state.registered)
            if self.state.register_secret:
                n = f"{self.server.server_address[1]}-{n}"  # unique across fixtures
                self.send(201, {**request, "client_id": f"dyn-{n}", "client_secret": f"dyn-secret-{n}",
                                "token_endpoint_auth_method": "client_secret_basic"})
            else:
                self.send(201, {"client_id": f"dyn-{n}", "token_endpoint_auth_method": "none", **request})
        elif self.path == "/mcp":
            self.mcp(json.loads(self.body()))
        elif self.path == "/introspect":
            form = dict(urllib.parse.parse_qsl(self.body().decode()))
            if self.state.introspect_bytes:
                self.flood(self.state.introspect_bytes)
                return
            self.send(200, self.state.introspected.get(form.get("token", ""), {"active": False}))
        elif self.path.startswith("/messages?s="):
            self.legacy_post(self.path.split("=", 1)[1], json.loads(self.body()))
        else:
            self.send(404, {"error": "not found"})

    def person_token(self, f: dict[str, str]) -> None:
        """A code traded for a JWT for `jwt_for` (minted outside the lock,
        which the key takes)."""
        s = self.state
        with s.lock:
            asked = s.codes.pop(f.get("code", ""), None)
        verifier = f.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
        if not asked or asked.get("code_challenge") != challenge or asked.get("redirect_uri") != f.get("redirect_uri"):
            self.send(400, {"error": "invalid_grant"})
            return
        scopes = s.grant_scopes if s.grant_scopes is not None else asked.get("scope", "").split()
        token = s.mint({"sub": s.person, "aud": s.jwt_for, "scope": " ".join(scopes)})
        self.send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": " ".join(scopes)})

    def token(self, f: dict[str, str]) -> None:
        s = self.state
        with s.lock:
            s.token.append(f)
            s.token_auth.append(self.headers.get("Authorization"))
        if s.refuse_resource and "resource" in f:
            self.send(400, {"error": "invalid_target"})
            return
        grant = f.get("grant_type")
        if grant == "authorization_code" and s.jwt_for:
            self.person_token(f)
            return
        with s.lock:
            if grant == "authorization_code":
                asked = s.codes.pop(f.get("code", ""), None)
                verifier = f.get("code_verifier", "").encode()
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
                if not asked or asked.get("code_challenge") != challenge or asked.get("redirect_uri") != f.get("redirect_uri"):
                    self.send(400, {"error": "invalid_grant"})
                    return
                self.send(200, s.issue(asked.get("scope", "read").split()))
            elif grant == "refresh_token":
                used = f.get("refresh_token", "")
                if s.revoke_family_on_reuse and used in s.rotated:
                    # Reuse of a rotated token (OAuth 2.1 §4.3.1): the whole
                    # login is revoked, every access and refresh token of it.
                    family = s.rotated[used]
                    for token in [t for t, fam in s.family.items() if fam == family]:
                        s.access.pop(token, None)
                        s.refresh.pop(token, None)
                    s.families_revoked += 1
                    self.send(400, {"error": "invalid_grant", "error_description": "refresh token reused"})
                    return
                scopes = s.refresh.get(used)
                if scopes is None:
                    self.send(400, {"error": "invalid_grant", "error_description": "refresh token revoked"})
                    return
                issued = s.issue(scopes, s.family.get(used))
                if not s.rotate_refresh:
                    del s.refresh[issued.pop("refresh_token")]
                else:
                    del s.refresh[used]
                    s.rotated[used] = s.family.get(used, "")
                self.send(200, issued)
            elif grant == "client_credentials":
                expected = "Basic " + base64.b64encode(f"svc:{s.client_secret}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    self.send(401, {"error": "invalid_client"})
                    return
                issued = s.issue(f.get("scope", "read").split())
                issued.pop("refresh_token")
                self.send(200, issued)
            else:
                self.send(400, {"error": "unsupported_grant_type"})

    def held(self) -> dict[str, Any] | None:
        """What the request's bearer token holds, if it is good."""
        s = self.state
        header = self.headers.get("Authorization")
        with s.lock:
            s.mcp_auth.append(header)
            held = s.access.get((header or "")[len("Bearer "):]) if header else None
        if s.issuer and header:
            held = verified(s.issuer, header[len("Bearer "):])
        return held if held is not None and held["expires"] >= time.time() else None

    def unauthorized(self, endpoint: str = "mcp") -> None:
        where = self.state.metadata_elsewhere or f"{self.state.base}/.well-known/oauth-protected-resource/{endpoint}"
        self.send(401, {"error": "invalid_token"},
                  {"WWW-Authenticate": f'Bearer resource_metadata="{where}", scope="read"'})

    def legacy_stream(self) -> None:
        """A 2024-11-05 server's event stream, behind the same bearer."""
        if self.held() is None:
            return self.unauthorized("sse")
        sid = secrets.token_hex(4)
        stream: queue.Queue[dict[str, Any]] = queue.Queue()
        self.state.streams[sid] = stream
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(f"event: endpoint\ndata: /messages?s={sid}\n\n".encode())
        self.wfile.flush()
        while True:
            message = stream.get()
            try:
                self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
                self.wfile.flush()
            except OSError:
                return

    def legacy_post(self, sid: str, message: dict[str, Any]) -> None:
        held = self.held()
        if held is None:
            return self.unauthorized("sse")
        self.send(202)
        if "id" in message:
            self.state.streams[sid].put({"jsonrpc": "2.0", "id": message["id"], "result": answer(message, held)})

    def mcp(self, message: dict[str, Any]) -> None:
        held = self.held()
        where = self.state.metadata_elsewhere or self.state.base + "/.well-known/oauth-protected-resource/mcp"
        if held is None or self.state.refuse_all:
            return self.unauthorized()
        if "id" not in message:
            self.send(202)
            return
        method = message.get("method")
        if method == "tools/call" and message["params"]["name"] == "admin" and "admin" not in held["scopes"]:
            self.send(403, {"error": "insufficient_scope"},
                      {"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="read admin", resource_metadata="{where}"'})
            return
        self.send(200, {"jsonrpc": "2.0", "id": message["id"], "result": answer(message, held)})


def answer(message: dict[str, Any], held: dict[str, Any]) -> Any:
    """The result of one request, for a caller holding `held`."""
    method = message.get("method")
    if method == "initialize":
        return {"protocolVersion": message["params"].get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-fixture", "version": "1"}}
    if method == "tools/list":
        return {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}},
                          {"name": "admin", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": " ".join(held["scopes"])}]}
    return {}


def verified(issuer: str, token: str) -> dict[str, Any] | None:
    """A JWT from `issuer`, checked against its published keys: its
    scopes and expiry, or None."""
    import jwt

    try:
        key = jwt.PyJWKClient(issuer + "/jwks").get_signing_key_from_jwt(token)
        claims = jwt.decode(token, key.key, algorithms=["RS256"], issuer=issuer, options={"verify_aud": False})
    except jwt.PyJWTError:
        return None
    return {"scopes": str(claims.get("scope", "")).split(), "expires": claims["exp"]}


class OAuthFixture:
    """The server, on a free loopback port, for the `with` block."""

    def __init__(self, **knobs: Any) -> None:
        self.state = State(**knobs)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.state.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.state.base + "/mcp"

    def __enter__(self) -> "OAuthFixture":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

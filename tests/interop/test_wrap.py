"""`mcp-chain wrap`, `unwrap` and `clients` on each client's documented
config format (clients/*.json: Claude Desktop, Claude Code, Cursor, VS Code
with its comments and trailing commas, Windsurf, Gemini CLI): wrap → unwrap
gives the file back byte for byte; wrapping twice changes nothing;
--dry-run writes nothing; a header's secret goes into the entry's env,
never onto the command line; a malformed file is left untouched with its
line named; a file another wrap holds is refused; an entry edited since it
was wrapped is not unwrapped. A wrapped Claude Desktop entry is launched as
Claude Desktop launches it (command, args, env) by the official Python SDK
client, and the policy holds."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness

HERE = Path(__file__).parent / "clients"
DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
OURS = str(harness.MCP_CHAIN.resolve())
SERVERS_KEY = {"vscode": "servers", "codex": "mcp_servers"}
SUFFIX = {"codex": "toml"}
HEADER_KEYS = ("headers", "http_headers", "env_http_headers", "bearer_token_env_var")
URL_KEYS = ("url", "serverUrl", "httpUrl")


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCP_CHAIN_STATE_DIR": str(tmp / "state")}
    return subprocess.run([str(harness.MCP_CHAIN), *args], capture_output=True, text=True, timeout=60, env=env)


def jsonc(text: str):
    """JSON with comments and trailing commas, as VS Code reads it."""
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.index("\n", i) - 1
        else:
            out.append(c)
        i += 1
    plain = "".join(out)
    for closing in ("}", "]"):
        while True:
            stripped = re.sub(r",(\s*)" + "\\" + closing, r"\1" + closing, plain)
            if stripped == plain:
                break
            plain = stripped
    return json.loads(plain)


def read(client: str, text: str):
    return tomllib.loads(text) if client == "codex" else jsonc(text)


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "gemini", "codex"])
def test_wrap_then_unwrap_gives_the_file_back_byte_for_byte(client: str, tmp_path: Path):
    suffix = SUFFIX.get(client, "json")
    original = (HERE / f"{client}.{suffix}").read_bytes()
    file = tmp_path / f"{client}.{suffix}"
    file.write_bytes(original)
    policy = tmp_path / "policy.toml"
    policy.write_text('[[middleware]]\ntype = "audit"\npath = "-"\n')
    target = ["--client", client, "--config-file", str(file), "--all"]
    before = read(client, original.decode())[SERVERS_KEY.get(client, "mcpServers")]

    dry = run(tmp_path, "wrap", *target, "--policy", str(policy), "--dry-run")
    assert dry.returncode == 0 and "+++ " in dry.stdout and OURS in dry.stdout, dry
    assert file.read_bytes() == original, "--dry-run writes nothing"

    done = run(tmp_path, "wrap", *target, "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    text = file.read_text()
    after = read(client, text)[SERVERS_KEY.get(client, "mcpServers")]
    assert list(after) == list(before), "the same servers, in the same order"
    for name, entry in after.items():
        old = before[name]
        assert entry["command"] == OURS, (name, entry)
        args = entry["args"]
        assert args[:2] == ["--config", str(policy)]
        remote = next((old[k] for k in URL_KEYS if k in old), None)
        if remote is None:
            assert args[args.index("--") + 1:] == [old["command"], *old.get("args", [])]
            assert entry.get("env") == old.get("env")
            assert {k: v for k, v in entry.items() if k not in ("command", "args", "type")} == \
                   {k: v for k, v in old.items() if k not in ("command", "args", "type")}, "every other member kept"
        else:
            assert args[-2:] == ["--", remote]
            assert not any(k in entry for k in (*URL_KEYS, *HEADER_KEYS))
            for header, value in old.get("headers", old.get("http_headers", {})).items():
                assert value not in " ".join(args), "a header's value never on the command line"
                var = next(a.split("=", 1)[1] for a in args if a.startswith(f"{header}="))
                assert entry["env"][var] == value
            # Headers the client read from variables: read from the same ones, and (Codex) passed.
            for header, var in old.get("env_http_headers", {}).items():
                assert f"{header}={var}" in args and var in entry["env_vars"]
            if "bearer_token_env_var" in old:
                var = old["bearer_token_env_var"]
                assert args[args.index("--bearer-env") + 1] == var and var in entry["env_vars"]
        if "type" in old or client == "vscode":
            assert entry["type"] == "stdio"
    # The rest of the file, as it was.
    rest = read(client, text)
    rest.pop(SERVERS_KEY.get(client, "mcpServers"))
    whole = read(client, original.decode())
    whole.pop(SERVERS_KEY.get(client, "mcpServers"))
    assert rest == whole

    again = run(tmp_path, "wrap", *target, "--policy", str(policy))
    assert again.returncode == 0 and file.read_text() == text, "wrapping twice changes nothing"
    assert "already guarded" in again.stderr

    listed = run(tmp_path, "clients")
    assert listed.returncode == 0

    back = run(tmp_path, "unwrap", *target)
    assert back.returncode == 0, back.stderr
    assert file.read_bytes() == original, "byte for byte"
    assert not list((tmp_path / "state/wrap").glob("*.json")), "nothing left recorded"
    assert list((tmp_path / "state/wrap/backups").iterdir()), "each change backed up first"


def test_a_malformed_file_is_left_untouched_and_its_line_named(tmp_path: Path):
    file = tmp_path / "claude_desktop_config.json"
    broken = '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n'
    file.write_text(broken)
    done = run(tmp_path, "wrap", "--client", "claude-desktop", "--config-file", str(file), "--all")
    assert done.returncode == 1 and str(file) in done.stderr and "line 3" in done.stderr, done.stderr
    assert file.read_text() == broken


def test_a_file_another_wrap_holds_is_refused_and_an_edited_entry_is_not_unwrapped(tmp_path: Path):
    file = tmp_path / "claude_desktop_config.json"
    shutil.copy(HERE / "claude-desktop.json", file)
    target = ["--client", "claude-desktop", "--config-file", str(file)]
    assert run(tmp_path, "wrap", *target, "filesystem").returncode == 0
    [lock] = (tmp_path / "state/wrap").glob("*.lock")
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        refused = run(tmp_path, "wrap", *target, "github")
        assert refused.returncode == 1 and "another mcp-chain wrap or unwrap is editing it" in refused.stderr
        fcntl.flock(held, fcntl.LOCK_UN)
    assert run(tmp_path, "wrap", *target, "github").returncode == 0
    # The person edits a wrapped entry: unwrap leaves it, and says so.
    wrapped = file.read_text()
    edited = wrapped.replace('"--",', '"--log-level", "debug", "--",', 1)
    assert edited != wrapped
    file.write_text(edited)
    back = run(tmp_path, "unwrap", *target, "--all")
    assert back.returncode == 0 and "changed since it was wrapped" in back.stderr, back.stderr
    servers = json.loads(file.read_text())["mcpServers"]
    assert servers["filesystem"]["command"] == OURS, "the edited entry left as it is"
    assert servers["github"]["command"] == "docker", "the other put back"


def test_a_wrapped_claude_desktop_entry_runs_as_claude_desktop_launches_it(tmp_path: Path):
    audit = tmp_path / "audit.jsonl"
    policy = tmp_path / "guard.toml"
    policy.write_text(f'[[middleware]]\ntype = "filter"\ntools = {{ deny = ["slow_count"] }}\n\n'
                      f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n')
    file = tmp_path / "claude_desktop_config.json"
    file.write_text(json.dumps({"mcpServers": {"demo": {"command": str(DEMO), "args": [harness.RUN_MARKER],
                                                        "env": {"DEMO_NOTE": "kept"}}}}, indent=2))
    done = run(tmp_path, "wrap", "--client", "claude-desktop", "--config-file", str(file), "demo", "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    entry = json.loads(file.read_text())["mcpServers"]["demo"]

    async def session() -> set[str]:
        # As Claude Desktop starts a server: the entry's command, args and env.
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env={**entry["env"], "PATH": os.environ["PATH"]})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                with anyio.fail_after(30):
                    await s.initialize()
                    names = {t.name for t in (await s.list_tools()).tools}
                    result = await s.call_tool("add", {"a": 2, "b": 3})
                    assert result.structured_content == {"sum": 5}
                    return names

    names = anyio.run(session)
    assert "add" in names and "slow_count" not in names, "the policy holds"
    lines = harness.jsonl(audit)
    assert any(r.get("tool") == "add" and r.get("outcome") == "ok" for r in lines), lines


def test_wrap_gateway_serves_every_server_behind_one_entry_and_unwrap_puts_them_back(tmp_path: Path):
    """--gateway: the client's servers become one mcp-chain entry running a
    [servers.*] config written from them (the policy its shared chain),
    launched as Claude Desktop launches it; unwrap gives the file back."""
    policy = tmp_path / "guard.toml"
    policy.write_text('[[middleware]]\ntype = "filter"\ntools = { deny = ["*__slow_count"] }\n')
    file = tmp_path / "claude_desktop_config.json"
    original = json.dumps({"globalShortcut": "Ctrl+Space", "mcpServers": {
        "calc": {"command": str(DEMO), "args": [harness.RUN_MARKER]},
        "notes": {"command": str(DEMO), "args": [harness.RUN_MARKER], "env": {"NOTE": "1"}},
    }}, indent=2) + "\n"
    file.write_text(original)
    target = ["--client", "claude-desktop", "--config-file", str(file), "--all"]
    done = run(tmp_path, "wrap", *target, "--gateway", "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    config = json.loads(file.read_text())
    assert list(config["mcpServers"]) == ["mcp-chain"] and config["globalShortcut"] == "Ctrl+Space"
    entry = config["mcpServers"]["mcp-chain"]
    assert entry["command"] == OURS
    assert run(tmp_path, "wrap", *target).returncode == 1, "wrapping a folded file is refused"

    async def session() -> set[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={"PATH": os.environ["PATH"]})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                with anyio.fail_after(30):
                    await s.initialize()
                    result = await s.call_tool("notes__add", {"a": 1, "b": 2})
                    assert result.structured_content == {"sum": 3}
                    return {t.name for t in (await s.list_tools()).tools}

    names = anyio.run(session)
    assert {"calc__add", "notes__add", "calc__echo"} <= names, names
    assert not any(n.endswith("__slow_count") for n in names), "the policy is the shared chain"

    back = run(tmp_path, "unwrap", *target)
    assert back.returncode == 0, back.stderr
    assert file.read_text() == original


def test_clients_lists_each_file_in_its_place_without_secrets_or_raw_control_characters(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor/mcp.json").write_text(json.dumps({"mcpServers": {
        "remote": {"url": "https://user:pw@api.example.com/mcp?token=query-secret"},
        "\u001b[31mred": {"command": "npx", "args": ["-y", "x"]},
        "wrapped": {"command": OURS, "args": ["--", "npx"]},
    }}))
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text('[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n')
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "MCP_CHAIN_STATE_DIR": str(tmp_path / "state")}
    env.pop("CODEX_HOME", None)
    done = subprocess.run([str(harness.MCP_CHAIN), "clients"], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"cursor {home / '.cursor/mcp.json'}" in out
    assert "remote: URL https://api.example.com/mcp, not guarded" in out
    assert "query-secret" not in out and "pw@" not in out
    assert "\u001b" not in out and "red: command npx, not guarded" in out
    assert "wrapped: guarded by mcp-chain" in out
    assert f"codex {home / '.codex/config.toml'}\n  time: command uvx, not guarded" in out, "one server is one server"


def test_header_env_and_bearer_env_read_headers_from_variables(tmp_path: Path):
    """What wrap writes for a URL entry: the header values come from the
    environment (--header-env NAME=VAR, --bearer-env VAR), never the command
    line; the front behind checks the bearer token."""
    token = "wrapped-front-token-0123456789"
    port = harness.free_port()
    config = tmp_path / "front.toml"
    config.write_text(f'[front]\ntokens = ["{token}"]\n')
    front = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config), "--", str(DEMO), harness.RUN_MARKER]
    with harness.listening(front, port, "wrap-front"):
        url = f"http://127.0.0.1:{port}/mcp"

        async def session(env: dict) -> set[str]:
            params = StdioServerParameters(command=OURS, args=["--bearer-env", "FRONT_TOKEN", "--header-env",
                                                               "X-Team=TEAM_NAME", "--", url],
                                           env={"PATH": os.environ["PATH"], **env})
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as s:
                    with anyio.fail_after(30):
                        await s.initialize()
                        return {t.name for t in (await s.list_tools()).tools}

        assert "add" in anyio.run(session, {"FRONT_TOKEN": token, "TEAM_NAME": "blue"})
    unset = subprocess.run([OURS, "--bearer-env", "NOT_SET_ANYWHERE", "--", "http://127.0.0.1:1/mcp"],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                           env={"PATH": os.environ["PATH"]})
    assert unset.returncode == 1 and "NOT_SET_ANYWHERE" in unset.stderr, unset.stderr


def test_claude_code_local_scope_is_this_directorys_entry_in_the_users_file(tmp_path: Path):
    """--scope local: the servers Claude Code keeps for this directory under
    `projects` in ~/.claude.json are wrapped, the user's own and another
    project's left alone; `clients` lists them; unwrap gives the file back."""
    home, project = tmp_path / "home", tmp_path / "app"
    home.mkdir()
    project.mkdir()
    file = home / ".claude.json"
    original = json.dumps({"numStartups": 3, "mcpServers": {"mine": {"command": "uvx", "args": ["mcp-server-time"]}},
                           "projects": {
                               "/elsewhere": {"mcpServers": {"calc": {"command": "npx", "args": ["other"]}}},
                               str(project): {"allowedTools": [], "mcpServers": {
                                   "calc": {"type": "stdio", "command": str(DEMO), "args": [harness.RUN_MARKER]}}},
                           }}, indent=2) + "\n"
    file.write_text(original)
    env = {**os.environ, "HOME": str(home), "MCP_CHAIN_STATE_DIR": str(tmp_path / "state")}

    def chain(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(harness.MCP_CHAIN), *args], capture_output=True, text=True, timeout=60, env=env,
                              cwd=project)

    listed = chain("clients")
    assert f"  local scope of {project}:\n    calc: command {DEMO}, not guarded" in listed.stdout, listed.stdout
    assert "  local scope of /elsewhere:\n    calc: command npx, not guarded" in listed.stdout
    done = chain("wrap", "--client", "claude-code", "--scope", "local", "--all")
    assert done.returncode == 0, done.stderr
    config = json.loads(file.read_text())
    local = config["projects"][str(project)]["mcpServers"]["calc"]
    assert local["command"] == OURS and local["args"] == ["--", str(DEMO), harness.RUN_MARKER]
    assert local["type"] == "stdio"
    assert config["mcpServers"]["mine"]["command"] == "uvx", "the user scope is not this scope"
    assert config["projects"]["/elsewhere"]["mcpServers"]["calc"]["command"] == "npx", "nor another project's"
    assert "calc: guarded by mcp-chain" in chain("clients").stdout
    # The user scope's own record is another: unwrapping it touches nothing here.
    assert chain("unwrap", "--client", "claude-code", "--scope", "user", "--all").returncode == 0
    assert json.loads(file.read_text()) == config
    wrong = chain("wrap", "--client", "cursor", "--scope", "local", "--all")
    assert wrong.returncode == 1 and "claude-code" in wrong.stderr, wrong.stderr
    back = chain("unwrap", "--client", "claude-code", "--scope", "local", "--all")
    assert back.returncode == 0, back.stderr
    assert file.read_text() == original


def test_codex_gateway_folds_its_tables_into_one_and_unwrap_puts_them_back(tmp_path: Path):
    """wrap --gateway for Codex: the [mcp_servers.*] tables (their own
    sub-tables too) become one [mcp_servers.mcp-chain] table whose env_vars
    pass what the servers were passed and their headers' variables; other
    tables stay; the entry runs as Codex runs it; unwrap gives the file back.
    Tables with another between them are refused, the file untouched."""
    file = tmp_path / "config.toml"
    original = (HERE / "codex.toml").read_text().replace(
        "[profiles.fast]", f'[mcp_servers.calc]\ncommand = "{DEMO}"\nargs = ["{harness.RUN_MARKER}"]\n\n[profiles.fast]')
    file.write_text(original)
    target = ["--client", "codex", "--config-file", str(file)]
    done = run(tmp_path, "wrap", *target, "--gateway", "context7", "figma")
    assert done.returncode == 0, done.stderr
    text = file.read_text()
    config = tomllib.loads(text)
    assert list(config["mcp_servers"]) == ["mcp-chain", "calc"], "where the first folded table was"
    assert config["profiles"]["fast"]["model"] == "o4-mini" and config["model"] == "o3"
    entry = config["mcp_servers"]["mcp-chain"]
    assert entry["env_vars"] == ["LOCAL_TOKEN", "FIGMA_ORG_ID", "FIGMA_OAUTH_TOKEN"]
    gateway = tomllib.loads(Path(entry["args"][1]).read_text())
    assert gateway["servers"]["context7"]["env"] == {"MY_ENV_VAR": "MY_ENV_VALUE"}, "its [env] table went with it"
    assert gateway["servers"]["figma"]["headers"] == {"X-Figma-Region": "us-east-1", "X-Org-Id": "${FIGMA_ORG_ID}",
                                                      "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}"}
    assert "figma_secret" not in " ".join(entry["args"])
    back = run(tmp_path, "unwrap", *target)
    assert back.returncode == 0, back.stderr
    assert file.read_text() == original

    # Only the demo server, run as Codex runs the entry.
    only = f'model = "o3"\n\n[mcp_servers.calc]\ncommand = "{DEMO}"\nargs = ["{harness.RUN_MARKER}"]\n'
    file.write_text(only)
    assert run(tmp_path, "wrap", *target, "--gateway", "--all").returncode == 0
    entry = tomllib.loads(file.read_text())["mcp_servers"]["mcp-chain"]

    async def session() -> set[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={"PATH": os.environ["PATH"]})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                with anyio.fail_after(30):
                    await s.initialize()
                    return {t.name for t in (await s.list_tools()).tools}

    assert "calc__add" in anyio.run(session)
    assert run(tmp_path, "unwrap", *target).returncode == 0 and file.read_text() == only

    scattered = '[mcp_servers.a]\ncommand = "x"\n\n[profiles.fast]\nmodel = "m"\n\n[mcp_servers.b]\ncommand = "y"\n'
    file.write_text(scattered)
    refused = run(tmp_path, "wrap", *target, "--gateway", "--all")
    assert refused.returncode == 1 and "another table is between" in refused.stderr, refused.stderr
    assert file.read_text() == scattered

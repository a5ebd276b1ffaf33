"""The container image (the repository's Dockerfile), built by Debian's
buildah with no image pulled: the static musl build is made first (.ci/run,
`make static`, or this test when it is missing) and given as the Dockerfile's `build` context, so only the
final `FROM scratch` stage runs. The image is then run by buildah (host
network) in front of a server at a URL, and the official Python SDK client
holds a session through it with the front's token; without a token or
OAuth, listening on 0.0.0.0 is refused as anywhere else. The image holds
the binary and the CA certificates only, and runs as a user that is not
root."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

import harness

STATIC = harness.REPO / "target/x86_64-unknown-linux-musl/release/mcp-chain"
DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
TOKEN = "container-token-0123456789abcdef"


class Buildah:
    """buildah with storage of the test's own (vfs: nothing shared with the
    machine's images, and no overlay needed)."""

    def __init__(self, root: Path):
        exe = shutil.which("buildah")
        if exe is None:
            pytest.fail("buildah is not installed (.ci/run installs Debian's package)")
        self.base = [exe, "--root", str(root / "storage"), "--runroot", str(root / "run"), "--storage-driver", "vfs"]

    def __call__(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"buildah {' '.join(args)}: {done.stderr}")
        return done

    def popen(self, *args: str, stderr) -> subprocess.Popen:
        return subprocess.Popen([*self.base, *args], stdout=subprocess.DEVNULL, stderr=stderr)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> tuple[Buildah, str]:
    if not STATIC.exists():
        # `make test` on its own: the static build made here (.ci/run makes
        # it first; musl-gcc and the musl target are what it needs).
        made = subprocess.run(["make", "static"], cwd=harness.REPO, capture_output=True, text=True, timeout=1800)
        if made.returncode != 0:
            pytest.fail(f"`make static` failed (musl-tools and `rustup target add x86_64-unknown-linux-musl`, "
                        f"as .ci/run installs them): {made.stderr[-2000:]}")
    root = tmp_path_factory.mktemp("buildah")
    buildah = Buildah(root)
    # What the Dockerfile's compile stage leaves in /out.
    built = root / "built"
    (built / "out/etc/ssl/certs").mkdir(parents=True)
    shutil.copy(STATIC, built / "out/mcp-chain")
    # As the Dockerfile's own stage builds it: without debug info.
    subprocess.run(["strip", str(built / "out/mcp-chain")], check=True)
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", built / "out/etc/ssl/certs/ca-certificates.crt")
    buildah("build", "--isolation", "chroot", "--build-context", f"build={built}", "-t", "localhost/mcp-chain:test",
            "-f", str(harness.REPO / "Dockerfile"), str(harness.REPO), timeout=600)
    yield buildah, "localhost/mcp-chain:test"
    buildah("rmi", "--all", "--force", check=False)


def test_the_image_holds_the_binary_and_certificates_only_and_runs_unprivileged(image):
    buildah, name = image
    config = json.loads(buildah("inspect", "--type", "image", name).stdout)
    oci = config["OCIv1"]["config"]
    assert oci["User"] == "65532:65532"
    assert oci["Entrypoint"] == ["/mcp-chain"]
    assert oci["Cmd"] == ["--listen", "0.0.0.0:8080", "--config", "/etc/mcp-chain/config.toml"]
    container = buildah("from", name).stdout.strip()
    try:
        mount = Path(buildah("mount", container).stdout.strip())
        files = sorted(str(p.relative_to(mount)) for p in mount.rglob("*") if p.is_file())
        assert files == ["etc/ssl/certs/ca-certificates.crt", "mcp-chain"], files
        size = sum((mount / f).stat().st_size for f in files)
        print(f"image content: {size} bytes")
    finally:
        buildah("rm", container, check=False)


def test_a_session_through_the_running_image(image, tmp_path: Path):
    buildah, name = image
    upstream_port, port = harness.free_port(), harness.free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[front]\ntokens = ["{TOKEN}"]\n')
    open_config = tmp_path / "open.toml"
    open_config.write_text("")
    upstream = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{upstream_port}", "--", str(DEMO), harness.RUN_MARKER]
    with harness.listening(upstream, upstream_port, "container-upstream"):
        container = buildah("from", name).stdout.strip()
        try:
            buildah("copy", "--chmod", "0644", container, str(config), "/etc/mcp-chain/config.toml")
            buildah("copy", "--chmod", "0644", container, str(open_config), "/etc/mcp-chain/open.toml")
            run = ["run", "--isolation", "chroot", "--network", "host", container, "--", "/mcp-chain"]
            url = f"http://127.0.0.1:{upstream_port}/mcp"

            # No token, no OAuth: refused, as everywhere.
            refused = buildah(*run, "--listen", f"0.0.0.0:{port}", "--config", "/etc/mcp-chain/open.toml", "--", url,
                              check=False, timeout=60)
            assert refused.returncode != 0 and "is not a loopback address" in refused.stderr, refused.stderr

            whoami = buildah(*run, "--version", timeout=60)
            assert whoami.stdout.startswith("mcp-chain "), whoami

            stderr = harness.new_stderr_file("container")
            with open(stderr, "w") as err:
                served = buildah.popen(*run, "--listen", f"0.0.0.0:{port}", "--config", "/etc/mcp-chain/config.toml",
                                       "--", url, stderr=err)
                try:
                    assert harness.wait_until(lambda: probe(port) == 200, 60), stderr.read_text()
                    names = anyio.run(session, port)
                    assert {"add", "echo"} <= names
                finally:
                    served.terminate()
                    served.wait(30)
        finally:
            buildah("rm", container, check=False)


def probe(port: int) -> int | None:
    import http.client

    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/readyz")
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


async def session(port: int) -> set[str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    import httpx2  # the HTTP client the SDK's transport takes

    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with client, streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (read, write):
        async with ClientSession(read, write) as s:
            with anyio.fail_after(30):
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                result = await s.call_tool("add", {"a": 20, "b": 22})
                assert result.structured_content == {"sum": 42}
                return names

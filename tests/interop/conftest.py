"""pytest wiring for tests/interop: anyio on asyncio, and the proxy's stderr
attached to every failure."""

from __future__ import annotations

import pytest

import harness


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _served(mode: str):
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: the SDK's stdio client cannot reach a URL without the proxy")
    with harness.everything_served(mode) as url:
        yield url


@pytest.fixture(scope="session")
def everything_http():
    """One server-everything serving Streamable HTTP for the whole run (each
    client session gets a server of its own inside it)."""
    yield from _served("streamableHttp")


@pytest.fixture(scope="session")
def everything_sse():
    """One server-everything serving legacy HTTP+SSE (2024-11-05) for the run."""
    yield from _served("sse")


@pytest.fixture(autouse=True)
def _collect_stderr():
    harness.STDERR_FILES.clear()
    yield
    # Tests that check for orphans do so themselves; here, whatever a test
    # left behind is ended so it cannot pile up over the run.
    harness.end_leftovers()
    # Files are removed at the start of the next test's report, not here, so the
    # report hook below can still read them.


def _tail(path, limit: int = 20_000) -> str:
    try:
        data = path.read_text(errors="replace")
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    if len(data) > limit:
        data = f"... ({len(data) - limit} bytes cut)\n" + data[-limit:]
    return data or "<empty>"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.failed):
        if report.failed:
            mode = "direct" if harness.DIRECT else str(harness.MCP_CHAIN)
            report.sections.append(("interop mode", mode))
            for label, path in harness.STDERR_FILES:
                report.sections.append((f"stderr of {label} ({path})", _tail(path)))
    if report.when == "teardown":
        for _, path in harness.STDERR_FILES:
            path.unlink(missing_ok=True)
            path.with_name(path.name.replace(".stderr", ".audit.jsonl")).unlink(missing_ok=True)
        harness.STDERR_FILES.clear()


def pytest_report_header(config):
    mode = "DIRECT (no proxy)" if harness.DIRECT else f"through {harness.MCP_CHAIN}"
    return [f"interop: servers launched {mode}"]


def pytest_terminal_summary(terminalreporter):
    """Skips grouped by reason: a skip is allowed only with a reason worth reading."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
            terminalreporter.line(f"{count:4d} × {reason}")

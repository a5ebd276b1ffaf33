"""`search` through the binary, driven by the official Python SDK client,
in front of a server holding LiveMCPBench's 527 real tools (70 servers,
named as a gateway names them): the list is `always` and the two search
tools; search finds by the words of a description; `call_tool` reaches the
server as a plain call that the layers after `search` judge (filter,
validate, approve, audit); a changed server list renews the index, not the list;
and LiveMCPBench's 94 annotated tasks measure the ranking (recall@1/5/10,
nDCG@10) next to a reference BM25 (rank_bm25) in the same run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError
from rank_bm25 import BM25Okapi

import harness
from harness import Chain, open_session

pytestmark = pytest.mark.anyio

CORPUS = harness.REPO / "tests/corpus/search"
REPORT = harness.REPO / "target/search-benchmark.md"


def server(limit: int | None = None) -> list[str]:
    argv = [str(harness.REPO / ".venv/bin/python"), str(harness.INTEROP / "tools_server.py"),
            str(CORPUS / "tools.jsonl")]
    return [*argv, *([str(limit)] if limit else []), harness.RUN_MARKER]


def chain(tmp_path: Path, search: str, inner: str = "") -> tuple[Chain, Path]:
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "search.toml"
    config.write_text(f'[[middleware]]\ntype = "search"\n{search}\n'
                      f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n{inner}')
    return Chain("search", config), audit


def found(result) -> list[str]:
    return [t["name"] for t in result.structured_content["tools"]]


async def test_short_list_search_and_calls_judged_as_direct_ones(tmp_path: Path):
    used, audit = chain(tmp_path, 'always = ["time__*"]',
                        '[[middleware]]\ntype = "filter"\ntools = { deny = ["*__delete*", "*__kill*"] }\n'
                        '[[middleware]]\ntype = "validate"\n')
    harness.require_chain(used)
    async with open_session(server(), used, label="search") as conn:
        listed = [t.name for t in (await conn.session.list_tools()).tools]
        assert listed[-2:] == ["search_tools", "call_tool"], listed
        assert all(n.startswith("time__") for n in listed[:-2]) and len(listed) > 2, listed

        hits = found(await conn.session.call_tool("search_tools", {"query": "convert currency exchange rate"}))
        assert any("exchange" in n or "currency" in n for n in hits[:3]), hits
        killers = found(await conn.session.call_tool("search_tools", {"query": "kill process terminate"}))
        assert not any("__kill" in n for n in killers), killers

        target = "exchange-rate-mcp__exchange_rate"
        assert target in hits, hits
        with pytest.raises(MCPError) as unfit:
            await conn.session.call_tool("call_tool", {"name": target, "arguments": {"from": "EUR"}})
        assert unfit.value.error.data["layer"] == "validate", "judged against the real tool's schema"
        fit = {"baseCurrency": "EUR", "targetCurrency": "NOK"}
        called = await conn.session.call_tool("call_tool", {"name": target, "arguments": fit})
        assert json.loads(called.content[0].text) == {"called": target, "arguments": fit}, called

        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("call_tool", {"name": "desktop-commander__kill_process",
                                                       "arguments": {"pid": 1}})
        assert refused.value.error.code == -32602
        assert refused.value.error.data["layer"] == "filter"

        huge = await conn.session.call_tool("search_tools", {"query": "file " * 20_000})
        assert huge.structured_content["tools"], "a 100 KB query is answered"
    lines = harness.jsonl(audit)
    calls = [line for line in lines if line.get("method") == "tools/call" and line.get("kind") == "request"]
    assert [line.get("tool") for line in calls] == [target, target, "desktop-commander__kill_process"], calls


async def test_a_changed_server_list_changes_the_results_not_the_list(tmp_path: Path):
    used, _ = chain(tmp_path, 'always = ["time__*"]')
    async with open_session(server(50), used, label="search-changed") as conn:
        before = [t.name for t in (await conn.session.list_tools()).tools]
        assert not found(await conn.session.call_tool("search_tools", {"query": "zebra crossings"}))
        await conn.session.call_tool("call_tool", {"name": "fixture__add_tool", "arguments": {
            "name": "city__zebra", "description": "Finds zebra crossings near a street"}})
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"),
                                what="list_changed passed on (always names tools)")
        assert found(await conn.session.call_tool("search_tools", {"query": "zebra crossings"})) == ["city__zebra"]
        assert [t.name for t in (await conn.session.list_tools()).tools] == before


def words(text: str) -> list[str]:
    return text.lower().split()


def scores(ranked: list[str], wanted: list[str]) -> tuple[float, float, float, float]:
    """recall@1, @5, @10 and nDCG@10 of tool names `ranked` for `wanted`."""
    names = []
    for n in ranked:  # a name listed by two servers counts once
        if n not in names:
            names.append(n)
    recall = [len(set(names[:k]) & set(wanted)) / len(wanted) for k in (1, 5, 10)]
    dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(names[:10]) if n in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    return recall[0], recall[1], recall[2], dcg / ideal


async def test_livemcpbench_ranking_next_to_a_reference_bm25(tmp_path: Path):
    tools = [json.loads(line) for line in (CORPUS / "tools.jsonl").read_text(encoding="utf-8").splitlines()]
    tasks = [json.loads(line) for line in (CORPUS / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    # The reference: rank_bm25's Okapi BM25 over each tool's name and
    # description, split at white space, as tool-retrieval papers run it.
    reference = BM25Okapi([words(f"{t['tool']['name']} {t['tool'].get('description', '')}") for t in tools])
    used, _ = chain(tmp_path, "max_results = 10")
    ours, theirs = [], []
    async with open_session(server(), used, label="search-bench") as conn:
        listed = await conn.session.list_tools()
        short = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]))
        for task in tasks:
            result = await conn.session.call_tool("search_tools", {"query": task["question"]})
            ranked = [n.split("__", 1)[1] for n in found(result)]
            ours.append(scores(ranked, task["tools"]))
            best = reference.get_scores(words(task["question"]))
            order = sorted(range(len(tools)), key=lambda i: -best[i])[:10]
            theirs.append(scores([tools[i]["tool"]["name"] for i in order], task["tools"]))
    mean = lambda rows, k: sum(r[k] for r in rows) / len(rows)  # noqa: E731
    full_300 = len(json.dumps([dict(t["tool"], name=f"{t['server']}__{t['tool']['name']}") for t in tools[:300]]))
    lines = ["| ranking (94 LiveMCPBench tasks, 527 tools) | recall@1 | recall@5 | recall@10 | nDCG@10 |",
             "|---|---:|---:|---:|---:|"]
    for label, rows in (("mcp-chain `search` (bm25 crate, names split, stemmed)", ours),
                        ("rank_bm25 BM25Okapi, name + description, white space", theirs)):
        lines.append(f"| {label} | " + " | ".join(f"{mean(rows, k):.3f}" for k in range(4)) + " |")
    lines += ["", f"tools/list: {full_300:,} bytes (~{full_300 // 4:,} tokens) for 300 tools without the layer, "
              f"{short:,} bytes (~{short // 4:,} tokens) with it ({short / full_300:.1%})"]
    report = "\n".join(lines) + "\n"
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(report)
    print(report)
    assert mean(ours, 1) >= mean(theirs, 1), report
    assert short <= 0.05 * full_300, report


async def test_approve_after_search_asks_about_the_tool_called(tmp_path: Path):
    used, _ = chain(tmp_path, "", '[[middleware]]\ntype = "approve"\ntools = ["time__*"]\n')
    asked: list[str] = []

    async def decide(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        decision = "allow_once" if len(asked) == 1 else "deny"
        return types.ElicitResult(action="accept", content={"decision": decision})

    async with open_session(server(), used, label="search-approve", elicitation_callback=decide) as conn:
        arguments = {"timezone": "Europe/Oslo"}
        called = await conn.session.call_tool("call_tool", {"name": "time__get_current_time", "arguments": arguments})
        assert json.loads(called.content[0].text)["called"] == "time__get_current_time", called
        assert len(asked) == 1 and '"time__get_current_time"' in asked[0], asked
        with pytest.raises(MCPError) as denied:
            await conn.session.call_tool("call_tool", {"name": "time__get_current_time", "arguments": arguments})
        assert denied.value.error.data["layer"] == "approve"
        hits = found(await conn.session.call_tool("search_tools", {"query": "current time timezone"}))
        assert "time__get_current_time" in hits and len(asked) == 2, "searching asks nothing"

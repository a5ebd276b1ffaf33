"""`scan` measured on a corpus it was not written against
(tests/corpus/scan, README.md there: real servers' tool lists as the
benign side; cisco's and MCPSecBench's fixtures, AgentDojo's injection
styles and attacks written in the published styles as the poisoned side).
The corpus goes through the binary: a server serves it, the official
Python SDK client lists and calls through `scan` (audit mode) and `audit`,
and what the audit lines flag is counted, per part (`tune`: the rules may
be written against it; `held`: kept for reporting), per attack category,
next to a naive keyword list read over the same texts in the same run.
The table goes to target/scan-corpus.md; the bounds asserted are on the
held part."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

import harness
from harness import Chain, open_session

pytestmark = pytest.mark.anyio

CORPUS = harness.REPO / "tests/corpus/scan"
REPORT = harness.REPO / "target/scan-corpus.md"
WRONG = harness.REPO / "target/scan-corpus-tune-wrong.txt"

# What a user writes when told "flag poisoned tools" and given an
# afternoon: words the published attacks use, matched anywhere.
KEYWORDS = ["ignore", "important", "secret", "password", "ssh", "credential", "do not tell", "don't tell",
            "do not mention", "system prompt", "instruction", "bypass", "override", "exfiltrat", "hidden",
            "api key", "private key", ".env", "confidential", "<important>", "<system>", "send to"]


def keyword_hit(text: str) -> bool:
    folded = text.lower()
    return any(word in folded for word in KEYWORDS)


def texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in [k, *texts(v)]]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return []


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()]


def chain(tmp_path: Path, label: str) -> tuple[Chain, Path]:
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / f"{label}.toml"
    config.write_text(f"""
[[middleware]]
type = "audit"
path = "{audit}"

[[middleware]]
type = "scan"
listings = "audit"
results = "audit"
""")
    return Chain(label, config), audit


def server(mode: str, file: str) -> list[str]:
    return [str(harness.REPO / ".venv/bin/python"), str(harness.INTEROP / "corpus_server.py"), mode,
            str(CORPUS / file), harness.RUN_MARKER]


class Tally:
    """Counts per (part, category) for scan and the keyword list."""

    def __init__(self) -> None:
        self.counts: dict = defaultdict(lambda: [0, 0, 0])  # items, scan flagged, keywords flagged
        self.wrong: list[str] = []  # the tune part's misses and false positives, for whoever writes rules

    def add(self, item: dict, flagged: bool, keyword: bool) -> None:
        keys = {(item["part"], item["category"]), (item["part"], item["label"])}
        for key in keys:
            row = self.counts[key]
            row[0] += 1
            row[1] += flagged
            row[2] += keyword
        if item["part"] == "tune" and flagged != (item["label"] == "poisoned"):
            self.wrong.append(item["id"])

    def rate(self, part: str, category: str) -> tuple[float, float, int]:
        items, flagged, keyword = self.counts[(part, category)]
        return flagged / items, keyword / items, items

    def table(self, title: str) -> str:
        lines = [f"### {title}", "", "| part | category | items | scan | keywords |", "|---|---|---:|---:|---:|"]
        for (part, category), (items, flagged, keyword) in sorted(self.counts.items()):
            if category == "poisoned":
                continue
            what = "false positives" if category == "benign" else "recall"
            lines.append(f"| {part} | {category} ({what}) | {items} | {flagged / items:.2f} | {keyword / items:.2f} |")
        for part in ("tune", "held"):
            if (part, "poisoned") in self.counts:
                items, flagged, keyword = self.counts[(part, "poisoned")]
                lines.append(f"| {part} | **all poisoned (recall)** | {items} | {flagged / items:.2f} | {keyword / items:.2f} |")
        return "\n".join(lines) + "\n"


async def test_descriptions_and_results_of_the_corpus(tmp_path: Path):
    descriptions, results = load("descriptions.jsonl"), load("results.jsonl")
    used, audit = chain(tmp_path, "corpus-descriptions")
    harness.require_chain(used)
    async with open_session(server("descriptions", "descriptions.jsonl"), used, label="corpus") as conn:
        listed = (await conn.session.list_tools()).tools
        assert len(listed) == len(descriptions), "audit mode hides nothing"
    listing = next(line for line in harness.jsonl(audit) if line.get("method") == "tools/list" and line.get("notes"))
    flagged_names = {f["name"] for f in listing["notes"]["scan"]["findings"]}
    tools = Tally()
    for n, item in enumerate(descriptions):
        tools.add(item, f"{item['tool']['name']}__{n}" in flagged_names, keyword_hit(" ".join(texts(item["tool"]))))

    (tmp_path / "results").mkdir()
    used, audit = chain(tmp_path / "results", "corpus-results")
    async with open_session(server("results", "results.jsonl"), used, label="corpus-results") as conn:
        for n, item in enumerate(results):
            got = await conn.session.call_tool("read_doc", {"n": n})
            assert got.content[0].text == item["text"], "audit mode changes nothing"
    flagged_calls = [bool(line.get("notes", {}).get("scan")) for line in harness.jsonl(audit)
                     if line.get("tool") == "read_doc" and line.get("kind") == "response"]
    assert len(flagged_calls) == len(results)
    docs = Tally()
    for item, flagged in zip(results, flagged_calls):
        docs.add(item, flagged, keyword_hit(item["text"]))

    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(tools.table("Tool descriptions") + "\n" + docs.table("Tool results"))
    WRONG.write_text("\n".join(tools.wrong + docs.wrong) + "\n")
    report = REPORT.read_text()
    print(report)
    # The rules are written against the tune part: all of it is judged right.
    for tally in (tools, docs):
        assert tally.rate("tune", "poisoned")[0] == 1.0 and tally.rate("tune", "benign")[0] == 0.0, report
    # The held part, floors at what was measured when the corpus was
    # written (docs/layers/scan.md): below the bounds (0.85 at
    # 0.03 for descriptions, 0.80 at 0.02 for results), so a change that
    # loses ground fails here, and one that gains raises them.
    recall, keyword_recall, _ = tools.rate("held", "poisoned")
    assert recall >= 0.66 and tools.rate("held", "benign")[0] <= 0.0, report
    assert recall > keyword_recall, report
    recall, keyword_recall, _ = docs.rate("held", "poisoned")
    assert recall >= 0.65 and docs.rate("held", "benign")[0] <= 0.025, report
    assert recall > keyword_recall, report

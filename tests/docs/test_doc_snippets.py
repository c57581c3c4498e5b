"""Every Python block in `docs/` marked `<!-- runnable -->` runs as written, offline, so the
docs cannot drift from the library.

A block runs in a fresh temporary directory (files it writes go there), with `STEADYLOOP_HOME`
there too, and with the provider variables pointing at a local stand-in server
(`docs_wire_server`), so `Agent("openai:gpt-4.1-mini")` and its kin work without a network or a
key. A block may use top-level `await`. A failure names the page and the line.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs.docs_wire_server import WireServer

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKED = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.DOTALL | re.MULTILINE)

# Guide pages that show code: each must have at least one block the tests run.
GUIDES = [
    "getting-started.md",
    "patterns/loop.md",
    "patterns/errors-as-text.md",
    "patterns/limits.md",
    "patterns/truncation.md",
    "patterns/parallel-calls.md",
    "patterns/append-only.md",
    "patterns/retries.md",
    "patterns/repeat-guard.md",
    "errors.md",
    "tools.md",
    "providers.md",
    "mcp.md",
    "typed-output.md",
    "dependencies.md",
    "images-and-documents.md",
    "approvals.md",
    "run-log.md",
    "sessions.md",
    "tracing.md",
    "scaling.md",
    "evals.md",
    "testing.md",
    "coming-from.md",
]


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int  # of the block's first line of code, 1-based
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"


def snippets() -> list[Snippet]:
    found: list[Snippet] = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in MARKED.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            found.append(Snippet(page, line, match.group(1)))
    return found


SNIPPETS = snippets()


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", wire.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", wire.api_key)
    monkeypatch.setenv("OLLAMA_HOST", wire.url)
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", wire.url)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", wire.api_key)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", wire.url)
    monkeypatch.setenv("GEMINI_API_KEY", wire.api_key)
    for name in ("STEADYLOOP_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run_snippet(snippet: Snippet) -> None:
    """Runs the block with its line numbers as on the page; top-level `await` is allowed."""
    source = "\n" * (snippet.line - 1) + snippet.code
    code = compile(
        source, str(snippet.page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    namespace = {"__name__": "docs_snippet"}
    outcome = eval(code, namespace)
    if inspect.iscoroutine(outcome):
        asyncio.run(outcome)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.name for s in SNIPPETS])
@pytest.mark.usefixtures("sandbox")
def test_runnable_snippet_runs(snippet: Snippet) -> None:
    run_snippet(snippet)


def test_snippets_are_collected() -> None:
    assert len(SNIPPETS) >= 45, f"only {len(SNIPPETS)} runnable blocks found under {DOCS}"


@pytest.mark.parametrize("guide", GUIDES)
def test_each_guide_has_a_runnable_block(guide: str) -> None:
    page = DOCS / guide
    assert page.exists(), f"{guide} is listed as a guide but does not exist"
    assert any(s.page == page for s in SNIPPETS), f"{guide} has no block marked runnable"


def test_no_marker_is_missed() -> None:
    """A marker not followed directly by a Python block would be silently skipped."""
    for page in DOCS.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        markers = text.count("<!-- runnable -->")
        found = len(MARKED.findall(text))
        assert markers == found, f"{page.relative_to(DOCS)}: {markers} markers, {found} blocks"

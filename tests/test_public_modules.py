"""The public module paths stay where the docs say they are.

A public path is one the docs name: a `::: steadyloop...` reference entry, a `steadyloop.x`
mention in the reference, an import in a code block of any page or the README, or a package's
face below. Each must import. Moving an internal module costs nothing; moving a public one fails
here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REFERENCE = sorted((DOCS / "reference").glob("*.md"))
PAGES = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]

# Each package's face: the names it exports (its `__all__` holds them).
FACES: dict[str, set[str]] = {
    "steadyloop.testing": {"FunctionModel", "ScriptedModel", "TestModel"},
    "steadyloop.models": {"Model", "ModelRequest", "StreamPart", "resolve_model", "PROVIDERS"},
    "steadyloop.models.openai_chat": {"OpenAIChatModel"},
    "steadyloop.models.openai_responses": {"OpenAIResponsesModel"},
    "steadyloop.models.anthropic": {"AnthropicModel"},
    "steadyloop.models.bedrock": {"BedrockModel"},
    "steadyloop.models.google": {"GoogleModel"},
    "steadyloop.mcp": {
        "MCPServer",
        "MCPTool",
        "Accept",
        "Decline",
        "Cancel",
        "Elicitation",
        "Resource",
        "ResourceTemplate",
        "Prompt",
        "PromptArgument",
    },
    "steadyloop.tracing": {"instrument", "uninstrument"},
    "steadyloop.store": {
        "open_store",
        "RunLog",
        "RunInfo",
        "RunLinks",
        "LoggedEvent",
        "ToolRecord",
        "SQLiteStore",
        "RunStore",
        "PostgresStore",
        "SCHEMA_VERSION",
        "read_export",
        "find_run",
    },
    "steadyloop.batch": {
        "run_batch",
        "LocalEngine",
        "RayEngine",
        "Rate",
        "BatchReport",
        "Engine",
        "Task",
        "BadTask",
    },
    "steadyloop.engines.dbos": {"durable"},
    "steadyloop.evals": {
        "Attempt",
        "BadCase",
        "Case",
        "CaseChange",
        "CaseResult",
        "Comparison",
        "Contains",
        "Dataset",
        "EvalReport",
        "ExactMatch",
        "JSONEqual",
        "Judge",
        "MaxCost",
        "MaxLatency",
        "MaxTokens",
        "MaxTurns",
        "NoToolErrors",
        "Regex",
        "Score",
        "Scorer",
        "ToolCalled",
        "Verdict",
        "compare",
        "evaluate",
        "load_report",
        "scorer",
    },
    "steadyloop.cli": {"main", "entry"},
}

# Single modules whose `__all__` is their face.
SINGLE_MODULES = [
    "steadyloop.events",
    "steadyloop.effects",
    "steadyloop.errors",
    "steadyloop.messages",
    "steadyloop.tools",
    "steadyloop.retry",
    "steadyloop.lint",
    "steadyloop.replay",
]

DIRECTIVE = re.compile(r"^::: (steadyloop[\w.]*)", re.MULTILINE)
MENTION = re.compile(r"`(steadyloop(?:\.\w+)+)`")
CODE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def resolve(path: str) -> object:
    """The module or object a dotted path names: the longest importable module prefix, then
    attributes. `ImportError` or `AttributeError` when the path does not lead anywhere."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name is None or not path.startswith(exc.name):
                raise  # a dependency is missing, not the path
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(f"no module on the path {path}")


def imported_paths(code: str) -> set[str]:
    """The `steadyloop` paths a code block imports: `module` or `module.name`."""
    tree = compile(code, "<docs>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "steadyloop")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "steadyloop":
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def documented_paths() -> list[str]:
    """Every `steadyloop` path the reference names or a page's code imports."""
    found: set[str] = set()
    for page in REFERENCE:
        text = page.read_text(encoding="utf-8")
        found.update(DIRECTIVE.findall(text), MENTION.findall(text))
    for page in PAGES:
        for block in CODE.findall(page.read_text(encoding="utf-8")):
            found.update(imported_paths(block))
    return sorted(found)


DOCUMENTED = documented_paths()


def test_the_docs_name_the_public_modules() -> None:
    """The scan finds what it is meant to: a reference entry, a page's import, the README's."""
    assert {
        "steadyloop.mcp.MCPServer",
        "steadyloop.retry.Backoff",
        "steadyloop.store.open_store",
        "steadyloop.testing.TestModel",
        "steadyloop.models.openai_chat.OpenAIChatModel",
    } <= set(DOCUMENTED)


@pytest.mark.parametrize("path", DOCUMENTED)
def test_each_documented_path_imports(path: str) -> None:
    resolve(path)


@pytest.mark.parametrize("package", sorted(FACES))
def test_each_package_exports_its_face(package: str) -> None:
    module = importlib.import_module(package)
    assert FACES[package] <= set(getattr(module, "__all__", ())), package
    for name in FACES[package]:
        getattr(module, name)


@pytest.mark.parametrize("name", SINGLE_MODULES)
def test_each_public_single_module_has_a_face(name: str) -> None:
    module = importlib.import_module(name)
    exported: list[str] = getattr(module, "__all__", [])
    assert exported, f"{name} has no __all__"
    for attribute in exported:
        getattr(module, attribute)


def test_resolve_fails_for_a_moved_path() -> None:
    """A path whose module moved fails, rather than being skipped."""
    with pytest.raises((ImportError, AttributeError)):
        resolve("steadyloop.mcp_schema.input_schema")
    with pytest.raises(AttributeError):
        resolve("steadyloop.store.NoSuchStore")
    assert isinstance(resolve("steadyloop.store"), ModuleType)

"""The package's import graph keeps its layers: a module imports only from its own layer or
the ones below, except under `if TYPE_CHECKING:` (a type, not a dependency), and no
two modules import each other when they are loaded.

The graph is read from the source with `ast`, so every import counts, also one inside a
function. A new module needs a layer here before it can land.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "steadyloop"

# Module (or package, for every module in it) -> layer. The most specific entry wins.
LAYERS: dict[str, int] = {
    # 0 · vocabulary: frozen values and the sentences the model reads
    "errors": 0,
    "texts": 0,
    "media": 0,
    "messages": 0,
    "usage": 0,
    "frozen": 0,
    "events": 0,
    "result": 0,
    "truncate": 0,
    "secrets": 0,
    # 1 · pure logic, no I/O
    "tools": 1,
    "schema": 1,
    "context": 1,
    "config": 1,
    "cache": 1,
    "limits": 1,
    "transcript": 1,
    "repeats": 1,
    "compaction": 1,
    "output": 1,
    "cost": 1,
    "costshare": 1,
    "retry": 1,
    "effects": 1,
    "toolchanges": 1,
    "offer": 1,
    "unanswered": 1,
    "models.base": 1,
    # 2 · edges: one turn's calls, providers, the run log, MCP, tracing, shipped fakes
    "deadline": 2,
    "approvals": 2,  # the hook around gated calls: asks a sync approver in a worker thread
    "approver_thread": 2,
    "dispatch": 2,
    "failures": 2,
    "toolthreads": 2,
    "models": 2,
    "fallback": 2,
    "store": 2,
    "store.claims": 2,
    "store.postgres_session": 2,
    "mcp": 2,
    "tracing": 2,
    "testing": 2,
    # 3 · the loop, its face, runs driven from the log
    "start": 3,
    "loop": 3,
    "modelcall": 3,
    "runs": 3,
    "toolbox": 3,
    "agent": 3,
    "launch": 3,
    "resume": 3,
    "subagents": 3,
    "sessions": 3,
    "replay": 3,
    # 4 · past one process, and the interfaces
    "": 4,  # the package's face, `steadyloop/__init__.py`
    "__main__": 4,
    "batch": 4,
    "engines": 4,
    "evals": 4,
    "evals.render": 4,
    "cli": 4,
    "ui": 4,
    "lint": 4,
    "lint.checks": 4,
    "toolfile": 4,
}

# Imports that run up a layer today, each with the reason it is still there.
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    """`steadyloop/store/rows.py` -> `store.rows`; a package's `__init__` is the package."""
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def layer(module: str) -> int:
    """The layer of `module`: its own entry, or its closest package's."""
    parts = module.split(".") if module else []
    for cut in range(len(parts), -1, -1):
        name = ".".join(parts[:cut])
        if name in LAYERS and (cut == len(parts) or name):
            return LAYERS[name]
    raise LookupError(module)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str) -> Iterator[tuple[str, int, bool]]:
    """(imported steadyloop module, line, at load time) for each import `module` makes at run
    time; imports under `if TYPE_CHECKING:` are left out."""

    def walk(node: ast.AST, loading: bool) -> Iterator[tuple[str, int, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    yield from walk_one(other, loading)
                continue
            yield from walk_one(child, loading)

    def walk_one(node: ast.AST, loading: bool) -> Iterator[tuple[str, int, bool]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from target(alias.name, node.lineno, loading)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                name = full if full.removeprefix("steadyloop.") in MODULES else node.module
                yield from target(name, node.lineno, loading)
        inside = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from walk(node, loading and not inside)

    def target(name: str, line: int, loading: bool) -> Iterator[tuple[str, int, bool]]:
        if name == "steadyloop" or name.startswith("steadyloop."):
            yield name.removeprefix("steadyloop").removeprefix("."), line, loading

    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return walk(tree, True)


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for module in MODULES:
        try:
            layer(module)
        except LookupError:
            unplaced.append(module)
    assert unplaced == [], "give these modules a layer in LAYERS"


def test_no_import_runs_up_a_layer() -> None:
    upward = sorted(
        f"{module} (layer {layer(module)}) -> {imported} (layer {layer(imported)}), line {line}"
        for module in MODULES
        for imported, line, _ in imports(module)
        if layer(imported) > layer(module) and (module, imported) not in ALLOWED
    )
    assert upward == []


def test_no_allowed_exception_is_stale() -> None:
    """An exception whose import is gone is taken off the list."""
    present = {(module, imported) for module in MODULES for imported, _, _ in imports(module)}
    assert ALLOWED - present == set()


def test_no_two_modules_import_each_other_when_loaded() -> None:
    loaded = {
        module: {imported for imported, _, at_load in imports(module) if at_load}
        for module in MODULES
    }
    cycles = sorted(cycle for cycle in _cycles(loaded) if len(cycle) > 1)
    assert cycles == []


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of `graph` (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in graph:
                continue
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from steadyloop.agent import Agent\n", ["agent"]),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import steadyloop.agent\n", []),
        ("def f():\n    from steadyloop.store import rows\n", ["store.rows"]),
    ],
)
def test_the_graph_reader_sees_run_time_imports_only(
    source: str, expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import under TYPE_CHECKING is left out; one inside a function counts."""
    monkeypatch.setitem(MODULES, "probe", tmp_path / "probe.py")
    (tmp_path / "probe.py").write_text(source, encoding="utf-8")
    assert [name for name, _, _ in imports("probe")] == expected

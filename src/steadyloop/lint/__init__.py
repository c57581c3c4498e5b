"""Checks tool descriptions the way a model reads them: a description is a prompt.

When a model uses a tool wrongly, the description is usually what is broken. Each check below
answers a question the model would otherwise have to guess, from the tool's name, description and
JSON schema only (so tools from MCP servers are checked the same way as `@tool` functions):

    check                severity  points  flags
    missing-description  error       40    no description at all
    restates-name        error       30    a one-liner repeating the name ("Search the database.")
    no-when              warning     15    nothing says when to use it ("use it to...")
    no-returns           warning     15    nothing says what comes back ("Returns...")
    no-size              warning     10    many items come back, but not how many ("up to 20")
    no-matching          warning     10    a search-like tool does not say how matching works
    undescribed-param    error       20    a parameter without a description
    mode-param           error       25    a mode/action-style parameter choosing between jobs
    generic-name         error       20    a name like `run`, `do`, `tool`, `helper`, `process`
    short-name           warning     10    a name under 4 characters
    no-verb              warning     10    a name that says what the tool is, not what it does

Scoring: a tool starts at 100 and loses the points of each check it fails, once per check (three
undescribed parameters cost 20, not 60), never going below 0. The overall score is the mean of
the tool scores, rounded (100 when there are no tools). Errors are what the CLI fails on.

The checks are word heuristics, deliberately simple: they look for the phrases a good
description has, not for whether the phrases are true.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.lint.checks import CHECKS, Finding, Severity, check_tool
from steadyloop.tools import Tool, Toolset, as_tool

__all__ = ["CHECKS", "Finding", "LintReport", "Severity", "ToolLint", "lint_tools"]


@dataclass(frozen=True, slots=True)
class ToolLint:
    """The findings for one tool and its score out of 100."""

    tool: str
    score: int
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class LintReport:
    """The result of `lint_tools`: one `ToolLint` per tool, in the order given."""

    tools: tuple[ToolLint, ...]

    @property
    def score(self) -> int:
        if not self.tools:
            return 100
        return round(sum(t.score for t in self.tools) / len(self.tools))

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for t in self.tools for f in t.findings)

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def render(self) -> str:
        """Plain text: a block per tool (score, then each finding with its fix), then a total."""
        blocks = [_render_tool(t) for t in self.tools]
        errors = sum(f.severity == "error" for f in self.findings)
        warnings = len(self.findings) - errors
        blocks.append(
            f"overall {self.score}/100: {_count(len(self.tools), 'tool')}, "
            f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
        )
        return "\n\n".join(blocks) + "\n"


def lint_tools(tools: Iterable[Tool | Callable[..., Any]]) -> LintReport:
    """Runs every check on every tool; plain functions are wrapped as `Agent` wraps them.

    Raises `ConfigError` for anything else. A toolset (an MCP server) must be started to offer
    its tools: lint those, `lint_tools(await server.tools())`.
    """
    results = []
    for tool in map(_as_tool, tools):
        findings = tuple(check_tool(tool))
        failed = {f.check for f in findings}
        score = max(0, 100 - sum(CHECKS[check][1] for check in failed))
        results.append(ToolLint(tool.name, score, findings))
    return LintReport(tuple(results))


def _as_tool(item: Tool | Callable[..., Any]) -> Tool:
    if isinstance(item, Toolset):
        raise ConfigError(
            f"{item!r} is a toolset, whose tools exist once it is started: lint them with "
            "lint_tools(await toolset.tools())"
        )
    return as_tool(item)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _render_tool(result: ToolLint) -> str:
    if not result.findings:
        return f"{result.tool}: {result.score}/100, no findings"
    lines = [f"{result.tool}: {result.score}/100"]
    for f in result.findings:
        about = f" [{f.parameter}]" if f.parameter else ""
        lines += _wrap(f"{f.severity:<7} {f.check}{about}: {f.message}", "  ")
        lines += _wrap(f"fix: {f.suggestion}", "    ")
    return "\n".join(lines)


def _wrap(text: str, indent: str) -> list[str]:
    """Lines of at most 100 characters that never split a name like `create-file` or `a_b`."""
    return textwrap.wrap(
        text,
        width=100,
        initial_indent=indent,
        subsequent_indent="      ",
        break_on_hyphens=False,
        break_long_words=False,
    )

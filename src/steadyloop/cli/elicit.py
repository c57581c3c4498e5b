"""`steadyloop run` and `resume` on a terminal: an MCP server's requests for input are asked.

The server's message goes to stderr, then one question per field of its form, in schema order:
its title, `*` when required, its description, choices and default. An empty line takes the
default or leaves an optional field out; booleans take y/n, integers and numbers are parsed, an
enum takes one of its values, anything else is asked again. End of input (Ctrl-D) declines the
whole request. A url-mode request shows the URL and takes Enter as accept. The live view stands
aside while a request is asked, and requests are asked one at a time across servers. Without a
terminal nothing is asked: the servers decline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from steadyloop.cli.approve import Terminal
from steadyloop.cli.live import View

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.mcp.elicitation import Answer, Elicitation

__all__ = ["ask_on_terminal", "terminal_elicitor"]

_NO_VALUE = object()


def ask_on_terminal(agent: Agent[Any], view: View) -> None:
    """Has the agent's MCP servers without an `on_elicit` of their own ask the person at the
    terminal (stdin must be one)."""
    if not agent.toolsets:
        return
    from steadyloop.mcp.server import MCPServer

    servers = [t for t in agent.toolsets if isinstance(t, MCPServer) and t.on_elicit is None]
    if servers:
        elicitor = terminal_elicitor(view)
        for server in servers:
            server.on_elicit = elicitor


def terminal_elicitor(
    view: View, read: Callable[[], Awaitable[str]] | None = None, out: IO[str] | None = None
) -> Callable[[Elicitation], Awaitable[Answer]]:
    """A handler that asks each request on the terminal; `read` returns the next line and
    raises EOFError at the end (default: the lines of stdin, read on the event loop)."""
    terminal = Terminal(read, out)
    ask, write = terminal.ask, terminal.write
    one_at_a_time = asyncio.Lock()

    async def elicit(request: Elicitation) -> Answer:
        from steadyloop.mcp.elicitation import Accept, Decline

        async with one_at_a_time:
            with view.paused():
                write(f"\n{request.server} asks: {request.message}\n")
                try:
                    if request.mode == "url":
                        await ask(f"open {request.url} and press Enter (Ctrl-D declines): ")
                        return Accept()
                    return Accept(await _form(request.schema, ask, write))
                except EOFError:
                    write("\nno answer: the request is declined\n")
                    return Decline()

    return elicit


async def _form(
    schema: Mapping[str, Any],
    ask: Callable[[str], Awaitable[str]],
    write: Callable[[str], None],
) -> dict[str, Any]:
    """The form's content, one question per field."""
    required = set(schema.get("required", ()))
    content: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        value = await _field(name, field, name in required, ask, write)
        if value is not _NO_VALUE:
            content[name] = value
    return content


async def _field(
    name: str,
    field: Mapping[str, Any],
    required: bool,
    ask: Callable[[str], Awaitable[str]],
    write: Callable[[str], None],
) -> Any:
    """One field's value, asked until it is one; `_NO_VALUE` for an optional field left out."""
    prompt = _prompt(name, field, required)
    while True:
        text = await ask(prompt)
        if not text:
            if "default" in field:
                return field["default"]
            if not required:
                return _NO_VALUE
            write("this field is required\n")
            continue
        value, problem = _parse(text, field)
        if problem is None:
            return value
        write(f"{problem}; try again\n")


def _prompt(name: str, field: Mapping[str, Any], required: bool) -> str:
    """`Title *: description [choices] (default: x): `."""
    line = str(field.get("title") or name) + (" *" if required else "")
    if field.get("description"):
        line += f" ({field['description']})"
    choices = _choices(field)
    if choices:
        line += f" [{'/'.join(map(str, choices))}]"
    elif field.get("type") == "boolean":
        line += " [y/n]"
    if "default" in field:
        line += f" (default: {field['default']})"
    return line + ": "


def _choices(field: Mapping[str, Any]) -> list[Any]:
    if "enum" in field:
        return list(field["enum"])
    options = field.get("oneOf") or field.get("anyOf") or ()
    return [
        option["const"] for option in options if isinstance(option, Mapping) and "const" in option
    ]


def _parse(text: str, field: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The typed value of an answer, or the reason it is not one."""
    choices = _choices(field)
    if choices:
        match = [c for c in choices if str(c) == text]
        return (
            (match[0], None) if match else (None, f"answer one of {', '.join(map(str, choices))}")
        )
    kind = field.get("type", "string")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True, None
        if text.lower() in ("n", "no", "false"):
            return False, None
        return None, "answer y or n"
    if kind == "integer":
        try:
            return int(text), None
        except ValueError:
            return None, "answer a whole number"
    if kind == "number":
        try:
            return float(text), None
        except ValueError:
            return None, "answer a number"
    return text, None

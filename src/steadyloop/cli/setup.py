"""How the command line builds what it runs: the run log's location, the tools, the agent."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steadyloop.agent import Agent
from steadyloop.config import RunConfig
from steadyloop.context import Instructions
from steadyloop.limits import Limits
from steadyloop.models import Model, resolve_model
from steadyloop.tools import Tool, Toolset

if TYPE_CHECKING:
    from steadyloop.store import RunLog

__all__ = [
    "agent_from_config",
    "build_agent",
    "load_tools",
    "open_store",
    "store_path",
]


def store_path() -> Path:
    """`$STEADYLOOP_HOME/runs.db`; STEADYLOOP_HOME defaults to the user data directory."""
    home = os.environ.get("STEADYLOOP_HOME")
    if not home:
        import platformdirs

        home = platformdirs.user_data_dir("steadyloop")
    return Path(home).expanduser() / "runs.db"


def open_store(url: str | None = None, *, read_only: bool = False) -> RunLog:
    """The run log at `url` (a path or URL; None: `store_path()`); commands that only read open
    it read-only (they never create one)."""
    from steadyloop.store import open_store as open_log

    return open_log(url if url is not None else store_path(), read_only=read_only)


def load_tools(files: Sequence[str]) -> list[Tool]:
    """The tools defined in each file (see `steadyloop.toolfile`; none: it is not loaded)."""
    if not files:
        return []
    from steadyloop.toolfile import load_tools_from_file

    tools: list[Tool] = []
    for file in files:
        tools.extend(load_tools_from_file(file))
    return tools


def mcp_servers(commands: Sequence[str], urls: Sequence[str]) -> list[Toolset]:
    """MCP servers from `--mcp 'CMD ARGS'` and `--mcp-url URL` (none: the SDK is not loaded)."""
    if not commands and not urls:
        return []
    from steadyloop.mcp.server import servers_from_cli

    return list(servers_from_cli(commands, urls))


def build_agent(
    *,
    model: Model | str | None,
    tool_files: Sequence[str],
    mcp: Sequence[str] = (),
    mcp_url: Sequence[str] = (),
    instructions: Instructions | None = None,
    limits: Limits | None = None,
    max_tool_output: int = 8_000,
    store: RunLog | None = None,
    settings: Mapping[str, Any] | None = None,
    output: str | None = None,
) -> Agent[Any]:
    """The agent a command line describes; its tool files, servers, model settings and answer
    type (`FILE.py:NAME`) are logged with each run so that `resume` and `replay` can rebuild
    it. A `model` made already was made with `settings`."""
    tools: list[Tool | Toolset] = [*load_tools(tool_files), *mcp_servers(mcp, mcp_url)]
    metadata: dict[str, Any] = {
        "tool_files": [str(Path(f).resolve()) for f in tool_files],
        "mcp": list(mcp),
        "mcp_url": list(mcp_url),
        "settings": dict(settings or {}),
    }
    output_type = None
    if output is not None:
        from steadyloop.toolfile import load_from_file

        output_type = load_from_file(output)
        path, _, name = output.rpartition(":")
        metadata["output"] = f"{Path(path).resolve()}:{name}"
    return Agent(
        model if isinstance(model, Model) else resolve_model(model, settings=settings),
        tools=tools,
        instructions=instructions,
        limits=limits,
        max_tool_output=max_tool_output,
        store=store,
        metadata=metadata,
        output=output_type,
    )


def agent_from_config(
    config: Mapping[str, Any], store: RunLog, *, model: str | None = None
) -> Agent[Any]:
    """The agent a logged run was made with (its tool files are loaded again)."""
    settings = config.get("settings")
    logged = RunConfig.from_dict(
        config, model=resolve_model(model or config.get("model"), settings=settings)
    )
    extra = logged.metadata
    return build_agent(
        model=logged.model,
        tool_files=extra.get("tool_files", []),
        mcp=extra.get("mcp", []),
        mcp_url=extra.get("mcp_url", []),
        instructions=logged.instructions,
        limits=logged.limits,
        max_tool_output=logged.max_tool_output,
        store=store,
        settings=settings,
        output=extra.get("output"),
    )

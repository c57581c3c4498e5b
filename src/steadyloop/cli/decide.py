"""How `steadyloop resume` continues a paused run: its options as decisions, checked against
the calls the run waits on, and the agent the run came from rebuilt, tools included.

Everything here refuses before anything is decided: a run that cannot go on as asked stays
paused, and the error says which option or which agent would continue it.
"""

from __future__ import annotations

import json
from typing import Any

import click

from steadyloop.agent import Agent
from steadyloop.approvals import Approve, Decision, Deny, Edit, PendingCall
from steadyloop.cli.batch import agent_from_factory
from steadyloop.cli.setup import agent_from_config
from steadyloop.errors import ConfigError
from steadyloop.store import RunInfo, RunLog
from steadyloop.store.ids import short_id

__all__ = ["check_decisions", "decisions_from_options", "resuming_agent"]

TOOL_SOURCES = ("tool_files", "mcp", "mcp_url")
"""The logged settings from which the command line rebuilds a run's tools."""


def decisions_from_options(
    approved: tuple[str, ...], denied: tuple[str, ...], edited: tuple[str, ...]
) -> dict[str, Decision] | None:
    """`--approve CALL`, `--deny CALL=REASON` and `--edit CALL=JSON` as decisions by call id
    (None when there are none); a call given two decisions is a usage error."""
    given: list[tuple[str, Decision]] = [(call, Approve()) for call in approved]
    for item in denied:
        call, _, reason = item.partition("=")
        if not call:
            raise click.UsageError(f"--deny takes CALL=REASON, got {item!r}")
        given.append((call, Deny(reason)))
    for item in edited:
        given.append(_edit(item))
    decisions: dict[str, Decision] = {}
    for call, decision in given:
        if call in decisions:
            raise click.UsageError(
                f"call {call} is given more than one decision (--approve, --deny, --edit): give "
                "it one; nothing was decided"
            )
        decisions[call] = decision
    return decisions or None


def _edit(item: str) -> tuple[str, Decision]:
    """`--edit CALL=JSON`: the call id and its new arguments."""
    call, _, text = item.partition("=")
    try:
        arguments = json.loads(text)
    except ValueError:
        arguments = None
    if not call or not isinstance(arguments, dict):
        raise click.UsageError(
            f"--edit takes CALL=JSON with the arguments as a JSON object, like "
            f"call_0='{{\"amount\": 10}}', got {item!r}"
        )
    return call, Edit(arguments)


def check_decisions(
    info: RunInfo, waiting: list[PendingCall], decisions: dict[str, Decision] | None
) -> None:
    """Refuses, in the command line's terms, decisions that do not fit the calls the paused
    run waits on (one for each, and no other); nothing is decided then."""
    if not waiting:
        return  # not paused: `resume` itself refuses decisions for a run that waits on none
    names = ", ".join(f"{call.call_id} ({call.name})" for call in waiting)
    how = "with --approve CALL, --deny CALL=REASON or --edit CALL=JSON"
    if decisions is None:
        first = waiting[0].call_id
        raise ConfigError(
            f"run {short_id(info.id)} is waiting for decisions on {names}: decide each {how}, "
            f"e.g. steadyloop resume {short_id(info.id)} --approve {first}"
        )
    unknown = [call for call in decisions if call not in {c.call_id for c in waiting}]
    if unknown:
        raise ConfigError(
            f"no call {unknown[0]} is waiting in run {short_id(info.id)} (waiting: {names}): "
            f"decide those {how}; nothing was decided"
        )
    missing = [f"{c.call_id} ({c.name})" for c in waiting if c.call_id not in decisions]
    if missing:
        raise ConfigError(
            f"no decision for {', '.join(missing)}: decide every waiting call {how}; nothing "
            "was decided"
        )


def resuming_agent(
    info: RunInfo,
    store: RunLog,
    waiting: list[PendingCall],
    *,
    model: str | None,
    factory: str | None,
    tools: tuple[str, ...],
) -> Agent[Any]:
    """The agent to continue run `info` with: `--agent`'s factory, else the factory a batch
    logged for the run, else the command line's agent rebuilt from the logged settings (`--tools`
    replacing its tool files). A paused run whose waiting calls name tools this agent lacks is
    refused, and stays paused: those calls would be answered "unknown tool"."""
    config = info.config
    factory = factory or (None if tools else config.get("agent_factory"))
    rebuilds_tools = factory or tools or any(config.get(key) for key in TOOL_SOURCES)
    if waiting and not rebuilds_tools:
        _refuse_missing(info, waiting, set())
    if factory is not None:
        agent = agent_from_factory(factory, store, model=model)
    else:
        logged = {**config, "tool_files": list(tools)} if tools else config
        agent = agent_from_config(logged, store, model=model)
    if not agent.toolsets:  # an MCP server's tools are known once it runs: `resume` checks them
        _refuse_missing(info, waiting, {tool.name for tool in agent.tools})
    return agent


def _refuse_missing(info: RunInfo, waiting: list[PendingCall], have: set[str]) -> None:
    """One line saying how to resume the paused run, when a waiting call's tool is not in
    `have`; the run is left as it is."""
    missing = sorted({call.name for call in waiting if call.name not in have})
    if missing:
        raise ConfigError(
            f"cannot rebuild the tool {', '.join(missing)} that run {short_id(info.id)} waits "
            "on; nothing was decided and the run stays paused: resume it with --agent "
            "MODULE:FUNCTION (a function returning the Agent with its tools), or from Python "
            f"with agent.resume({info.id!r}, decisions=...)"
        )

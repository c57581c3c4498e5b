"""Replay a logged run: the recorded model replies instead of a model, and report where the new
run departs from the log, so a bug seen in production can be reproduced from its log alone.

Tools run for real (the caller passes them) or, with recorded tools, answer with the outputs the
log holds for the same calls, in order. Summaries are replayed from the log too, and so are the
decisions on gated calls (a run paused, then approved, replays approved), the prompt as it was
sent (images and documents included) and, given its type, a typed answer.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop.agent import Agent
from steadyloop.approvals import Decision, Defer, PendingCall, logged_decision
from steadyloop.config import RunConfig
from steadyloop.context import RunContext
from steadyloop.errors import LimitExceeded, ModelError, ToolError
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Prompt,
    Summary,
    UserMessage,
    canonical_arguments,
)
from steadyloop.output import FINAL_ANSWER
from steadyloop.result import RunResult
from steadyloop.store import LoggedEvent, RunInfo, RunLog, ToolRecord
from steadyloop.testing import ScriptedModel
from steadyloop.tools import BoundCall, Tool, ToolSpec

__all__ = ["RecordedTool", "ReplayReport", "replay_run"]


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """`divergence` says where the replay first departed from the log (None: it matched)."""

    run_id: str
    divergence: str | None
    result: RunResult[Any] | None
    entries: int


async def replay_run(
    store: RunLog,
    run_id: str,
    tools: Sequence[Tool] = (),
    *,
    recorded_tools: bool = False,
    output: Any = None,
    deps: Any = None,
) -> ReplayReport:
    """Re-runs run `run_id` with its recorded replies and compares the transcript with the log.

    `output` is the run's answer type when it had one (it is not logged: the command line
    logs the file it came from); `deps` reaches tools that take a `RunContext`, as in `run`.
    """
    info = store.run(run_id)
    events = store.events(info.id)
    logged = store.messages(info.id)
    config = info.config
    if recorded_tools:
        # Every tool the run ever offered: those it started with, and those it gained later.
        gained = [n for e in events if e.kind == "tools_changed" for n in e.data["tools"]]
        offered = dict.fromkeys([*config.get("tools", ()), *gained])
        names = [n for n in offered if n != FINAL_ANSWER or output is None]
        tools = _recorded_tools(names, store.tool_records(info.id).values())
    replies = [m for m in logged[info.history :] if isinstance(m, AssistantMessage)]
    summaries = deque(m.text for m in logged[info.history :] if isinstance(m, Summary))
    logged_config = RunConfig.from_dict(
        config,
        model=ScriptedModel(replies, name=f"replay of {info.model}"),
        summarise=lambda _messages: summaries.popleft() if summaries else "",
    )
    agent = Agent(
        logged_config.model,
        tools=tools,
        instructions=logged_config.instructions,
        limits=logged_config.limits,
        max_tool_output=logged_config.max_tool_output,
        tool_timeout=logged_config.tool_timeout,
        compaction=logged_config.compaction,
        model_retries=0,
        output=output,
        approver=_logged_decisions(events),
    )
    result: RunResult[Any] | None
    problem: str | None = None
    try:
        result = await agent.run(_prompt(info, logged), history=logged[: info.history], deps=deps)
    except LimitExceeded as exc:
        result = exc.result
    except ModelError:
        result = None
        problem = (
            f"the replayed run asked the model for more than the {len(replies)} logged replies"
        )
        if output is None and FINAL_ANSWER in config.get("tools", ()):
            problem += (
                f"; the run answered with {FINAL_ANSWER}: pass its answer type (output=, or "
                "--output FILE.py:NAME)"
            )
    finally:
        await agent.aclose()
    replayed = result.messages if result is not None else ()
    divergence = problem or _first_difference(logged, replayed)
    return ReplayReport(info.id, divergence, result, len(logged))


def _prompt(info: RunInfo, logged: Sequence[Message]) -> Prompt:
    """The prompt as the run sent it: its logged message, images and documents included (the
    run's row has its text only)."""
    first = logged[info.history] if len(logged) > info.history else None
    if isinstance(first, UserMessage):
        return first.parts or first.text
    return info.prompt


def _logged_decisions(
    events: Iterable[LoggedEvent],
) -> Callable[[PendingCall, RunContext[Any]], Awaitable[Decision]]:
    """An approver that decides each gated call as the log has it decided last (a call deferred
    and then approved on resume is approved); a call the log has no decision for waits."""
    decided: dict[str, Decision] = {}
    for event in events:
        if event.kind == "decision":
            decided[event.data["call"]["id"]] = logged_decision(event.data)

    async def decide(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        return decided.get(call.call_id, Defer())

    return decide


def _first_difference(logged: Sequence[Message], replayed: Sequence[Message]) -> str | None:
    for index, (old, new) in enumerate(zip(logged, replayed, strict=False)):
        if _compared(old) != _compared(new):
            return (
                f"entry {index} differs:\n  logged:   {_preview(old)}\n  replayed: {_preview(new)}"
            )
    if len(logged) != len(replayed):
        return (
            f"the log has {len(logged)} entries, the replay {len(replayed)}; the first "
            f"{min(len(logged), len(replayed))} match"
        )
    return None


def _compared(message: Message) -> dict[str, Any]:
    """What a replay compares of an entry: all of it but which model made a reply (a replay's
    replies are recordings; a log written before replies named their model has none)."""
    data = message.to_dict()
    data.pop("model", None)
    return data


def _preview(message: Message) -> str:
    text = json.dumps(message.to_dict(), ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "..."


class RecordedTool(Tool):
    """Answers each call with the logged output of the same call (name and arguments), in order."""

    def __init__(self, name: str, records: Sequence[ToolRecord]) -> None:
        super().__init__(ToolSpec(name, f"recorded outputs of {name}", {"type": "object"}))
        self._outputs: dict[str, deque[ToolRecord]] = defaultdict(deque)
        for record in records:
            self._outputs[canonical_arguments(record.call.arguments)].append(record)

    def bind(self, arguments: Mapping[str, Any]) -> BoundCall:
        return BoundCall(self._answer, {"key": canonical_arguments(arguments)}, is_async=True)

    async def _answer(self, key: str) -> str:
        waiting = self._outputs.get(key)
        if not waiting:
            raise ToolError(f"the log has no recorded output for this call to {self.name}")
        record = waiting.popleft()
        if record.result.is_error:
            raise ToolError(record.output)
        return record.output


def _recorded_tools(names: Sequence[str], records: Iterable[ToolRecord]) -> list[Tool]:
    by_name: dict[str, list[ToolRecord]] = defaultdict(list)
    for record in records:
        by_name[record.call.name].append(record)
    return [RecordedTool(name, by_name.get(name, [])) for name in names]

"""Where a logged run stands, so that it can go on: its transcript, budget and finished calls."""

from __future__ import annotations

from dataclasses import dataclass

from steadyloop.errors import ConfigError
from steadyloop.messages import AssistantMessage, Message, ToolResult, Usage, UserMessage
from steadyloop.result import RunResult
from steadyloop.store import RunInfo, RunLog

__all__ = ["ResumePoint", "logged_result", "resume_point"]

RESUMABLE = ("running", "interrupted", "error")


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """A logged run's state: its whole transcript, the model calls and usage it has spent, and
    the results of tool calls that finished (logged) but may not be in the transcript yet.
    `prompt` is the run's prompt when the process died before it was logged as a message (the
    run's row has it): the run goes on by appending it, as it was about to."""

    run_id: str
    messages: tuple[Message, ...]
    turns_used: int
    usage: Usage
    recovered: dict[str, ToolResult]
    prompt: str | None = None


def resume_point(store: RunLog, run_id: str) -> ResumePoint:
    """Reads run `run_id` (or a unique prefix) from the log; ConfigError if it cannot go on."""
    info = store.run(run_id)
    if info.status not in RESUMABLE:
        raise ConfigError(
            f"run {info.id} ended with status {info.status!r} and cannot be resumed; only runs "
            f"that were {', '.join(RESUMABLE)} can (start a new run with its history instead)"
        )
    messages = store.messages(info.id)
    own = messages[info.history :]
    prompt = None if any(isinstance(m, UserMessage) for m in own) else info.prompt
    replies = [m for m in own if isinstance(m, AssistantMessage)]
    usage = Usage(requests=len(replies), tool_calls=sum(len(r.tool_calls) for r in replies))
    for reply in replies:
        if reply.usage is not None:
            usage += Usage(input_tokens=reply.usage.input_tokens,
                           output_tokens=reply.usage.output_tokens,
                           cost_usd=reply.usage.cost_usd)  # fmt: skip
    recovered = {call_id: record.result for call_id, record in store.tool_records(info.id).items()}
    return ResumePoint(info.id, messages, len(replies), usage, recovered, prompt)


def logged_result(store: RunLog, info: RunInfo) -> RunResult:
    """The result of a run that finished, as its log has it (nothing is called again)."""
    finished = [e for e in store.events(info.id) if e.kind == "finished"]
    messages = store.messages(info.id)
    if finished:
        output = str(finished[-1].data["output"])
    else:
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        output = last.text if last is not None else ""
    return RunResult(
        output=output,
        messages=messages,
        stop_reason=info.stop_reason or "end_turn",
        usage=info.usage,
        run_id=info.id,
    )

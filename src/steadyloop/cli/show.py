"""Text for `steadyloop logs` and `steadyloop show`: runs listed, and a transcript laid out with
its errors, truncations, compactions and stops marked where they happened."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from steadyloop.cli.live import format_cost, tools_changed_line
from steadyloop.media import attachment_text
from steadyloop.messages import (
    AssistantMessage,
    Summary,
    ToolResult,
    Usage,
    UserMessage,
    message_from_dict,
)
from steadyloop.store import RunInfo, RunLog, ToolRecord, reading
from steadyloop.store.ids import short_id
from steadyloop.ui.entries import arguments_text

__all__ = [
    "format_cost",
    "format_tokens",
    "render_runs",
    "render_transcript",
    "tools_changed_line",
    "transcript_json",
]


def format_tokens(usage: Usage) -> str:
    """Tokens sent and received; "-" when no reply reported them, "≥N" when some did not."""
    total = usage.total_tokens
    if total is None:
        return "-"
    return f"{total:,}" if usage.tokens_known else f"≥{total:,}"


def render_runs(runs: Sequence[RunInfo]) -> str:
    """One line per run: id, when, model, turns, tokens, cost, how it ended."""
    if not runs:
        return "no runs logged yet"
    header = (
        f"{'RUN':<12}  {'WHEN':<19}  {'MODEL':<28}  {'TURNS':>5}  {'TOKENS':>9}  {'COST':>9}  ENDED"
    )
    lines = [header]
    for run in runs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created))
        ended = run.stop_reason if run.status in ("answered", "limit") else run.status
        lines.append(
            f"{short_id(run.id):<12}  {when:<19}  {run.model[:28]:<28}  {run.usage.requests:>5}  "
            f"{format_tokens(run.usage):>9}  {format_cost(run.usage.cost_usd):>9}  {ended}"
        )
    return "\n".join(lines)


def render_transcript(store: RunLog, run_id: str, *, full: bool = False) -> str:
    """The run as the model saw it, each entry in order; `full` adds untruncated tool output."""
    info = store.run(run_id)
    return "\n".join(_transcript_lines(store, info, full=full))


def _transcript_lines(store: RunLog, info: RunInfo, *, full: bool) -> Iterator[str]:
    """The lines of `show`, in the order things happened (see `reading.log_order`): an answer
    a resume gave after a pause comes after the decision that let it run. A result is shown
    once, as its call finished; its message row is shown only when the model read something
    else (a result the loop replaced)."""
    events = store.events(info.id)
    finished = reading.tool_records(events)
    shown: set[str] = set()
    yield f"run {info.id} · {info.model} · {info.status}" + (
        f" ({info.stop_reason})" if info.stop_reason else ""
    )
    yield from _link_lines(store, info)
    if info.status != "running":
        yield f"tokens {format_tokens(info.usage)} · cost {format_cost(info.usage.cost_usd)}"
    if info.error:
        yield f"error: {info.error}"
    for event in reading.log_order(events):
        data = event.data
        if event.kind == "model_request":
            yield (
                f"\n── turn {data['turn']} · context {data['context_tokens']:,}/"
                f"{data['max_context_tokens']:,} tokens ──"
            )
        elif event.kind == "tool_finished":
            record = ToolRecord.from_event(event)
            shown.add(record.call.id)
            yield from _result_lines(record.result, record, record.duration, full=full)
        elif event.kind == "model_retry":
            yield f"  ↻ model call failed ({data['error']}); attempt {data['attempt']}"
        elif event.kind == "model_fallback":
            yield f"  ⇢ {data['failed']} failed ({data['error']}); trying {data['next']}"
        elif event.kind == "limit":
            yield f"\n■ stopped: {data['message']}"
        elif event.kind == "instructions":
            yield f"instructions: {data['text']}"
        elif event.kind == "decision":
            yield _decision_line(data)
        elif event.kind == "tools_changed":
            yield tools_changed_line(data)
        elif event.kind == "finished" and data["stop_reason"] == "approval":
            yield "■ paused: waiting for approval"
        elif event.kind == "message":
            message = message_from_dict(data["message"])
            if data["index"] == info.history and info.history:
                yield f"\n── {info.history} messages of earlier history above ──"
            if _shown_already(message, finished, shown):
                continue
            if isinstance(message, AssistantMessage) and message.model not in (None, info.model):
                yield f"answered by {message.model}"
            yield from _message_lines(message, finished, full=full)


def _link_lines(store: RunLog, info: RunInfo) -> Iterator[str]:
    """How the run is linked to others: its session and place in it, the run it continued, the
    run and call that started it (a sub-agent's), and the sub-agent runs it started."""
    previous = f"previous run {short_id(info.previous_run_id)}" if info.previous_run_id else ""
    if info.session is not None:
        runs = [run.id for run in store.session(info.session)]
        place = f"run {runs.index(info.id) + 1} of {len(runs)}" if info.id in runs else ""
        yield " · ".join(part for part in (f"session {info.session}", place, previous) if part)
    elif previous:
        yield f"continues {previous}"
    if info.parent_run_id is not None:
        yield f"sub-agent of run {short_id(info.parent_run_id)}, call {info.parent_call_id}"
    for child in store.children(info.id):
        yield f"sub-agent run {short_id(child.id)} answered call {child.parent_call_id}"


def _shown_already(message: Any, finished: Mapping[str, ToolRecord], shown: set[str]) -> bool:
    """True for a result message that repeats what its call's `tool_finished` row showed."""
    if not isinstance(message, ToolResult) or message.call_id not in shown:
        return False
    return bool(message == finished[message.call_id].result)


def _decision_line(data: Mapping[str, Any]) -> str:
    """One line per decision on a gated call: its id and approved, denied, edited or waiting."""
    call = data["call"]
    decision = data["decision"]
    line = f"decision [{call['id']}] {call['name']}: "
    if decision == "denied":
        return line + "denied" + (f" ({data['reason']})" if data.get("reason") else "")
    if decision == "edited":
        return line + f"edited to {json.dumps(data.get('edited'), ensure_ascii=False)}"
    return line + ("waiting for approval" if decision == "deferred" else decision)


def _message_lines(message: Any, records: dict[str, Any], *, full: bool) -> Iterator[str]:
    if isinstance(message, UserMessage):
        yield f"user: {message.text}"
        for part in message.parts:
            if not isinstance(part, str):
                yield f"  [{attachment_text(part)}]"
    elif isinstance(message, AssistantMessage):
        if message.reasoning_text:  # readable reasoning only: never signatures or ciphertext
            yield f"assistant (thinking): {message.reasoning_text}"
        if message.text:
            cut = " [cut off by the output limit]" if message.stop_reason == "max_tokens" else ""
            yield f"assistant: {message.text}{cut}"
        elif not message.tool_calls:
            yield "assistant: [empty reply: no text and no tool calls]"
        for call in message.tool_calls:
            yield f"assistant → {call.name}({arguments_text(call)})  [{call.id}]"
    elif isinstance(message, ToolResult):
        yield from _result_lines(message, records.get(message.call_id), None, full=full)
    elif isinstance(message, Summary):
        yield f"\n── compaction: {message.replaced} earlier messages summarised ──\n{message.text}"


def _result_lines(
    result: ToolResult, record: ToolRecord | None, duration: float | None, *, full: bool
) -> Iterator[str]:
    """A tool result; `duration` when shown as the call finished, with its full output."""
    mark = "✗ error" if result.is_error else "✓"
    took = f" {duration:.2f}s" if duration is not None else ""
    note = ""
    if record is not None and len(record.output) > len(result.content):
        note = f"  [truncated: {len(record.output):,} characters, model read the ends]"
    yield f"tool {mark} {result.name} [{result.call_id}]{took}{note}: {result.content}"
    if full and note and record is not None:
        yield f"  full output:\n{record.output}"


def transcript_json(store: RunLog, run_id: str) -> str:
    """The run row and its events as one JSON document."""
    info = store.run(run_id)
    return json.dumps(
        {
            "run": {
                "id": info.id,
                "created": info.created,
                "model": info.model,
                "prompt": info.prompt,
                "status": info.status,
                "stop_reason": info.stop_reason,
                "error": info.error,
                "usage": info.usage.as_json(),
                "config": info.config,
                "session": info.session,
                "previous_run_id": info.previous_run_id,
                "parent_run_id": info.parent_run_id,
                "parent_call_id": info.parent_call_id,
            },
            "events": [
                {"seq": e.seq, "at": e.at, "kind": e.kind, "data": e.data}
                for e in store.events(info.id)
            ],
        },
        indent=2,
        ensure_ascii=False,
    )

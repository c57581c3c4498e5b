"""Opt-in compaction: a Summary entry appended, the view derived from it, pairs never split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    ConfigError,
    ContextLimitExceeded,
    ContextWindowExceeded,
    Limits,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.compaction import SUMMARY_INSTRUCTIONS, render_for_summary
from steadyloop.events import Compacted, Event, ModelRequestStarted, RunFinished
from steadyloop.limits import estimate_tokens
from steadyloop.messages import Message
from steadyloop.models.base import ModelRequest
from steadyloop.retry import Backoff
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import Transcript, calls_answered


def read_page(n: int) -> str:
    """Reads one page of a long document."""
    return f"page {n}: " + "lorem ipsum " * 40  # about 125 tokens


def paging_model(pages: int, *, parallel: int = 1) -> FunctionModel:
    """Reads `pages` turns of pages (`parallel` calls a turn), then answers."""

    turn = -1

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        nonlocal turn
        if not tools:
            return AssistantMessage("SUMMARY BY MODEL", usage=Usage(50, 10))
        turn += 1
        if turn >= pages:
            return AssistantMessage("read everything")
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"t{turn}_{i}", "read_page", f'{{"n": {turn * parallel + i}}}')
                for i in range(parallel)
            )
        )

    return FunctionModel(decide)


def make_agent(model: Any, compaction: Compaction | None, max_context: int = 1_000) -> Agent:
    return Agent(
        model,
        tools=[read_page],
        limits=Limits(max_turns=50, max_context_tokens=max_context),
        compaction=compaction,
        backoff=Backoff.none(),
    )


def requests_with_tools(model: FunctionModel) -> list[ModelRequest]:
    return [r for r in model.requests if r.tools]


async def test_without_compaction_a_long_run_hits_the_context_limit() -> None:
    with pytest.raises(ContextLimitExceeded):
        await make_agent(paging_model(20), None).run("read the document")


async def test_compaction_appends_a_summary_and_the_run_finishes() -> None:
    summarised: list[tuple[Message, ...]] = []

    def summarise(messages: Sequence[Message]) -> str:
        summarised.append(tuple(messages))
        return f"read {len(messages)} messages of pages"

    model = paging_model(20)
    compaction = Compaction(keep_recent=2, trigger=0.6, summarise=summarise)
    result = await make_agent(model, compaction).run("read the document")
    assert result.output == "read everything"
    summaries = [m for m in result.messages if isinstance(m, Summary)]
    assert summaries
    assert len(summaries) == len(summarised)
    # append-only: everything the run produced is still there, summaries added in between
    conversation = [m for m in result.messages if not isinstance(m, Summary)]
    assert calls_answered(conversation)
    assert len([m for m in conversation if isinstance(m, ToolResult)]) == 20
    # a later summary covers the earlier one
    assert any(isinstance(batch[0], Summary) for batch in summarised[1:])
    for request in requests_with_tools(model):
        assert calls_answered(request.messages)
        assert request.messages[0] == UserMessage("read the document")
        assert sum(isinstance(m, Summary) for m in request.messages) <= 1


@pytest.mark.parametrize("trigger", [0.3, 0.5, 0.9])
async def test_compaction_starts_only_once_the_context_passes_the_trigger(trigger: float) -> None:
    events: list[Event] = []
    agent = make_agent(
        paging_model(12), Compaction(keep_recent=2, trigger=trigger, summarise=lambda m: "g")
    )
    async for event in agent.stream("read the document"):
        events.append(event)
    threshold = trigger * 1_000
    first = next(i for i, e in enumerate(events) if isinstance(e, Compacted))
    compacted = events[first]
    assert isinstance(compacted, Compacted)
    assert compacted.tokens_before > threshold
    sizes = [e.context_tokens for e in events[:first] if isinstance(e, ModelRequestStarted)]
    assert sizes
    assert all(size <= threshold for size in sizes)


async def test_the_view_is_head_note_and_recent_tail() -> None:
    model = paging_model(8)
    compaction = Compaction(keep_recent=2, trigger=0.6, summarise=lambda messages: "the gist")
    result = await make_agent(model, compaction).run("read the document")
    requests = requests_with_tools(model)
    compacted = next(r for r in requests if any(isinstance(m, Summary) for m in r.messages))
    head, summary, *tail = compacted.messages
    assert head == UserMessage("read the document")
    assert isinstance(summary, Summary)
    assert summary.text == "the gist"
    assert summary.note.startswith(f"[{summary.replaced} earlier messages summarised]")
    assert summary.note.endswith("the gist")
    assert not isinstance(tail[0], ToolResult)
    assert len(tail) >= 2
    # the tail is exactly the conversation after the replaced messages
    index = result.messages.index(summary)
    before = [m for m in result.messages[:index] if not isinstance(m, Summary)]
    assert before[1 + summary.replaced :] == tail[: len(before) - 1 - summary.replaced]


async def test_keep_recent_moves_earlier_so_parallel_results_stay_with_their_call() -> None:
    model = paging_model(10, parallel=3)
    compaction = Compaction(keep_recent=2, trigger=0.5, summarise=lambda messages: "gist")
    await make_agent(model, compaction, max_context=2_000).run("read")
    compacted = [
        r for r in requests_with_tools(model) if any(isinstance(m, Summary) for m in r.messages)
    ]
    assert compacted
    for request in compacted:
        tail = request.messages[2:]
        assert isinstance(tail[0], AssistantMessage)
        assert len(tail[0].tool_calls) == 3
        assert calls_answered(request.messages)


async def test_default_summariser_asks_the_model_with_no_tools() -> None:
    model = paging_model(12)
    events: list[Event] = []
    agent = make_agent(model, Compaction(keep_recent=2, trigger=0.6))
    async for event in agent.stream("read the document"):
        events.append(event)
    summary_requests = [r for r in model.requests if not r.tools]
    assert summary_requests
    for request in summary_requests:
        assert request.tools == ()
        assert request.instructions == SUMMARY_INSTRUCTIONS
        assert len(request.messages) == 1
        assert isinstance(request.messages[0], UserMessage)
        assert "read_page" in request.messages[0].text
    compactions = [e for e in events if isinstance(e, Compacted)]
    assert len(compactions) == len(summary_requests)
    assert all(c.summary.text == "SUMMARY BY MODEL" for c in compactions)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    result = finished.result
    # the summary requests are counted in the run's usage
    assert result.usage.requests == len(model.requests)
    assert result.usage.input_tokens == 50 * len(summary_requests)


async def test_an_async_summariser_is_awaited() -> None:
    async def summarise(messages: Sequence[Message]) -> str:
        return "async gist"

    result = await make_agent(
        paging_model(10), Compaction(keep_recent=2, trigger=0.6, summarise=summarise)
    ).run("read")
    assert any(isinstance(m, Summary) and m.text == "async gist" for m in result.messages)


async def test_provider_too_long_compacts_once_and_retries_the_call() -> None:
    refused: list[int] = []

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        if not tools:
            return AssistantMessage("gist")
        if any(isinstance(m, Summary) for m in messages):
            return AssistantMessage("answered after compaction")
        if len(messages) >= 7:
            refused.append(len(messages))
            raise ContextWindowExceeded("prompt is too long: 210000 tokens > 200000 maximum")
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        return AssistantMessage(tool_calls=(ToolCall(f"c{turn}", "read_page", '{"n": 1}'),))

    model = FunctionModel(decide)
    events: list[Event] = []
    agent = make_agent(model, Compaction(keep_recent=2), max_context=100_000)
    async for event in agent.stream("read"):
        events.append(event)
    assert refused == [7]
    assert sum(isinstance(e, Compacted) for e in events) == 1
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.output == "answered after compaction"


async def test_provider_too_long_again_after_compaction_is_a_context_limit() -> None:
    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        if not tools:
            return AssistantMessage("gist")
        if len(messages) >= 4:
            raise ContextWindowExceeded("prompt is too long")
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        return AssistantMessage(tool_calls=(ToolCall(f"c{turn}", "read_page", '{"n": 1}'),))

    model = FunctionModel(decide)
    with pytest.raises(ContextLimitExceeded) as info:
        await make_agent(model, Compaction(keep_recent=2), max_context=100_000).run("read")
    assert isinstance(info.value.__cause__, ContextWindowExceeded)
    partial = info.value.result
    assert sum(isinstance(m, Summary) for m in partial.messages) == 1
    assert partial.stop_reason == "context_limit"


async def test_nothing_to_compact_is_a_context_limit_not_a_loop() -> None:
    calls: list[int] = []

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        calls.append(1)
        raise ContextWindowExceeded("prompt is too long")

    with pytest.raises(ContextLimitExceeded):
        await make_agent(FunctionModel(decide), Compaction()).run("a prompt")
    assert calls == [1]


async def test_compaction_that_cannot_get_under_the_limit_stops_before_sending() -> None:
    model = paging_model(3)
    with pytest.raises(ContextLimitExceeded):
        await make_agent(model, Compaction(), max_context=100).run("x" * 4_000)
    assert model.requests == []


@pytest.mark.parametrize(
    "options",
    [{"keep_recent": 0}, {"keep_recent": True}, {"trigger": 0}, {"trigger": 1.5}],
)
def test_bad_compaction_settings_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Compaction(**options)


# -- the transcript's side ----------------------------------------------------------------------


def conversation(turns: int, parallel: int) -> list[Message]:
    messages: list[Message] = [UserMessage("go")]
    for t in range(turns):
        calls = tuple(ToolCall(f"c{t}_{i}", "tool", "{}") for i in range(parallel))
        messages.append(AssistantMessage(f"turn {t}", calls))
        messages.extend(ToolResult(c.id, "tool", "out") for c in calls)
    messages.append(AssistantMessage("done"))
    return messages


@pytest.mark.parametrize("parallel", [1, 2, 4])
@pytest.mark.parametrize("keep", range(1, 12))
def test_the_cut_never_starts_the_tail_with_a_result(parallel: int, keep: int) -> None:
    transcript = Transcript(conversation(4, parallel), estimate_tokens)
    cut = transcript.compaction_cut(keep)
    if cut is None:
        return
    transcript.append(transcript.summary_for(cut, "gist"))
    view = transcript.view()
    assert view[0] == UserMessage("go")
    assert isinstance(view[1], Summary)
    assert not isinstance(view[2], ToolResult)
    assert len(view) - 2 >= keep
    assert calls_answered(view)


def test_nothing_to_cut_in_a_short_conversation() -> None:
    transcript = Transcript([UserMessage("go"), AssistantMessage("hi")], estimate_tokens)
    assert transcript.compaction_cut(6) is None
    assert transcript.compaction_cut(1) is None


def test_summaries_count_messages_and_rebuild_from_the_entries() -> None:
    messages = conversation(5, 2)
    transcript = Transcript(messages, estimate_tokens)
    cut = transcript.compaction_cut(3)
    assert cut is not None
    first = transcript.summary_for(cut, "first")
    transcript.append(first)
    assert first.replaced == cut - 1
    assert transcript.compaction_cut(2) is None  # only the kept tail is left
    more = conversation(3, 2)[1:]
    for message in more:
        transcript.append(message)
    second_cut = transcript.compaction_cut(2)
    assert second_cut is not None
    assert transcript.to_summarise(second_cut)[0] == first
    second = transcript.summary_for(second_cut, "second")
    transcript.append(second)
    assert transcript.entries == (*messages, first, *more, second)
    assert second.replaced > first.replaced
    rebuilt = Transcript(transcript.entries, estimate_tokens)
    assert rebuilt.view() == transcript.view()
    assert transcript.view()[1] == second


def test_a_summary_replacing_more_than_exists_is_refused() -> None:
    transcript = Transcript([UserMessage("go"), AssistantMessage("hi")], estimate_tokens)
    with pytest.raises(ValueError, match="replaces 5"):
        transcript.append(Summary("x", 5))


def test_compaction_lowers_the_estimate() -> None:
    transcript = Transcript(conversation(6, 1), estimate_tokens)
    before = transcript.context_tokens(0)
    cut = transcript.compaction_cut(2)
    assert cut is not None
    transcript.append(transcript.summary_for(cut, "short"))
    assert transcript.context_tokens(0) < before


def test_summary_text_flattens_tool_blocks() -> None:
    text = render_for_summary(
        [
            UserMessage("find refunds"),
            AssistantMessage("looking", (ToolCall("c1", "search", {"q": "refund"}),)),
            ToolResult("c1", "search", "x" * 10_000, is_error=True),
            Summary("earlier", 3),
        ]
    )
    assert "User: find refunds" in text
    assert 'Assistant called search (c1) with {"q": "refund"}' in text
    assert "Tool error (search, c1)" in text
    assert "characters omitted" in text
    assert "Earlier summary: earlier" in text
    assert len(text) < 3_000


def test_the_summary_request_reads_each_calls_arguments_as_the_model_sent_them() -> None:
    """Arguments a provider delivered as an object keep their own characters (no `\\u` escapes
    for the summariser to read); text that is not a JSON object is shown as it came."""
    text = render_for_summary(
        [
            AssistantMessage(tool_calls=(ToolCall("c1", "weather", {"city": "São Paulo"}),)),
            AssistantMessage(tool_calls=(ToolCall("c2", "weather", '{"city": "Mal'),)),
        ]
    )
    assert 'Assistant called weather (c1) with {"city": "São Paulo"}' in text
    assert 'Assistant called weather (c2) with {"city": "Mal' in text

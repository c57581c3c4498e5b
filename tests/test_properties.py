"""Property tests: transcripts stay valid whatever happens; messages and wire histories hold up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    ContextWindowExceeded,
    FatalToolError,
    LimitExceeded,
    Limits,
    Summary,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    UserMessage,
    tool,
)
from steadyloop.launch import launch_for
from steadyloop.limits import estimate_tokens
from steadyloop.loop import Run
from steadyloop.messages import ArgumentsError, Image, Message, Reasoning, message_from_dict
from steadyloop.models.wire import MISSING_RESULT_TEXT, IdRules, ToolNames, prepare_history
from steadyloop.retry import Backoff
from steadyloop.start import RunStart
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import Transcript, calls_answered

# -- transcript validity under anything a run can meet -----------------------------------------

OUTCOMES = (
    "ok",
    "ok_sync",
    "tool_error",
    "value_error",
    "unexpected",
    "bad_json",
    "not_object",
    "unknown",
    "no_name",
    "timeout",
    "fatal",
    "self_cancel",
    "outer_cancel",
)
ID_KINDS = ("fresh", "empty", "same_as_previous", "from_earlier_turn")


@dataclass(frozen=True)
class PlannedCall:
    outcome: str
    id_kind: str


@dataclass(frozen=True)
class PlannedTurn:
    calls: tuple[PlannedCall, ...]
    cut_off: bool  # the reply was cut by the output limit
    too_long: bool  # the provider first says the context is too long
    cancel_in_model: bool  # the run is cancelled while the model is thinking


def sometimes(one_in: int) -> st.SearchStrategy[bool]:
    return st.sampled_from([False] * (one_in - 1) + [True])


planned_call = st.builds(PlannedCall, st.sampled_from(OUTCOMES), st.sampled_from(ID_KINDS))
planned_turn = st.builds(
    PlannedTurn,
    st.lists(planned_call, min_size=1, max_size=5).map(tuple),
    sometimes(10),
    sometimes(6),
    sometimes(20),
)


@dataclass
class Script:
    turns: list[PlannedTurn]
    run_task: asyncio.Task[Any] | None = None


def build_agent(script: Script, compaction: Compaction | None, max_turns: int) -> Agent:
    @tool
    async def act(kind: str) -> str:
        """Does what `kind` says."""
        if kind == "tool_error":
            raise ToolError("fix your input")
        if kind == "value_error":
            raise ValueError("bad value")
        if kind == "unexpected":
            raise KeyError("internal")
        if kind == "fatal":
            raise FatalToolError("cannot go on")
        if kind == "self_cancel":
            raise asyncio.CancelledError
        if kind == "outer_cancel":
            assert script.run_task is not None
            script.run_task.cancel()
            await asyncio.sleep(10)
        await asyncio.sleep(0)
        return f"did {kind} " + "z" * 300

    @tool
    def act_sync(kind: str) -> str:
        """The same, in a thread."""
        return f"did {kind} in a thread"

    @tool(timeout=0.01)
    async def hang(kind: str) -> str:
        """Never returns."""
        await asyncio.sleep(10)
        return "never"

    turn_index = 0
    refused: set[int] = set()

    async def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        nonlocal turn_index
        if not tools:
            return AssistantMessage("summary of earlier work")
        if turn_index >= len(script.turns):
            return AssistantMessage("finished")
        plan = script.turns[turn_index]
        if plan.too_long and turn_index not in refused:
            refused.add(turn_index)
            raise ContextWindowExceeded("prompt is too long")
        if plan.cancel_in_model:
            assert script.run_task is not None
            script.run_task.cancel()
            await asyncio.sleep(10)
        turn_index += 1
        return AssistantMessage(
            f"turn {turn_index}",
            tuple(_make_call(c, i, turn_index) for i, c in enumerate(plan.calls)),
            stop_reason="max_tokens" if plan.cut_off else "tool_use",
        )

    return Agent(
        FunctionModel(decide),
        tools=[act, act_sync, hang],
        limits=Limits(max_turns=max_turns, max_context_tokens=4_000, max_repeats=3),
        compaction=compaction,
        backoff=Backoff.none(),
        max_tool_output=200,
    )


def _make_call(plan: PlannedCall, index: int, turn: int) -> ToolCall:
    call_id = {
        "fresh": f"t{turn}_{index}",
        "empty": "",
        "same_as_previous": f"t{turn}_{max(index - 1, 0)}",
        "from_earlier_turn": f"t{max(turn - 1, 1)}_0",
    }[plan.id_kind]
    kind = plan.outcome
    name = {"ok_sync": "act_sync", "timeout": "hang", "unknown": "nope", "no_name": ""}.get(
        kind, "act"
    )
    arguments = {"bad_json": '{"kind": "ok', "not_object": "[1, 2]"}.get(
        kind, json.dumps({"kind": kind})
    )
    return ToolCall(call_id, name, arguments)


def assert_valid(entries: Sequence[Message]) -> None:
    conversation = [m for m in entries if not isinstance(m, Summary)]
    assert calls_answered(conversation)
    ids = [c.id for m in conversation if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert all(ids)
    assert len(ids) == len(set(ids))
    results = [m for m in conversation if isinstance(m, ToolResult)]
    assert len(results) == len(ids)
    calls = {c.id: c for m in conversation if isinstance(m, AssistantMessage) for c in m.tool_calls}
    for result in results:
        assert result.name == calls[result.call_id].name
    assert calls_answered(Transcript(entries, estimate_tokens).view())
    for message in entries:
        assert message_from_dict(json.loads(json.dumps(message.to_dict()))) == message


async def drive(script: Script, compaction: Compaction | None, max_turns: int) -> Run:
    agent = build_agent(script, compaction, max_turns)
    history = (UserMessage("earlier"), AssistantMessage("earlier answer"))
    launch = launch_for(agent, None, None, None)
    run = Run(launch.config, launch.dispatcher, RunStart.fresh(UserMessage("do the plan"), history))
    task = asyncio.create_task(run.execute())
    script.run_task = task
    try:
        await task
    except (LimitExceeded, FatalToolError, asyncio.CancelledError):
        pass
    finally:
        await agent.aclose()
    model = agent.model
    assert isinstance(model, FunctionModel)
    for request in model.requests:
        assert calls_answered(request.messages)
    return run


compactions = st.none() | st.builds(
    Compaction,
    keep_recent=st.integers(1, 8),
    trigger=st.floats(0.05, 1.0),
    summarise=st.just(lambda messages: f"{len(messages)} messages summarised"),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(planned_turn, min_size=1, max_size=6), compactions, st.integers(1, 8))
def test_every_call_is_answered_once_in_order_whatever_happens(
    turns: list[PlannedTurn], compaction: Compaction | None, max_turns: int
) -> None:
    run = asyncio.run(drive(Script(turns), compaction, max_turns))
    entries = run.transcript.entries
    assert entries[:2] == (UserMessage("earlier"), AssistantMessage("earlier answer"))
    assert entries[2] == UserMessage("do the plan")
    assert_valid(entries)
    cut_off = [m for m in entries if isinstance(m, AssistantMessage) and m.stop_reason]
    for reply in cut_off:
        if reply.stop_reason == "max_tokens":
            index = entries.index(reply)
            answers = entries[index + 1 : index + 1 + len(reply.tool_calls)]
            assert all(isinstance(a, ToolResult) and "cut off" in a.content for a in answers)


# -- the transcript's cut, at every point -------------------------------------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [UserMessage("go")]
    for turn in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            messages.append(UserMessage(f"user {turn}"))
        n = draw(st.integers(0, 4))
        calls = tuple(ToolCall(f"c{turn}_{i}", "t", "{}") for i in range(n))
        messages.append(AssistantMessage(f"reply {turn}", calls))
        messages.extend(ToolResult(c.id, "t", "r" * draw(st.integers(0, 50))) for c in calls)
    return messages


@given(conversations(), st.lists(st.integers(1, 10), max_size=4))
def test_repeated_compaction_keeps_every_view_valid(
    messages: list[Message], keeps: list[int]
) -> None:
    transcript = Transcript(messages, estimate_tokens)
    for keep in keeps:
        cut = transcript.compaction_cut(keep)
        if cut is None:
            continue
        part = transcript.to_summarise(cut)
        assert not isinstance(part[-1], AssistantMessage) or not part[-1].tool_calls
        transcript.append(transcript.summary_for(cut, f"gist of {len(part)}"))
        view = transcript.view()
        assert calls_answered(view)
        assert isinstance(view[1], Summary)
        assert len(view) - 2 >= keep
        assert Transcript(transcript.entries, estimate_tokens).view() == view
    assert [m for m in transcript.entries if not isinstance(m, Summary)] == messages


# -- messages round-trip ------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
tool_calls = st.builds(
    ToolCall,
    st.text(max_size=12),
    st.text(max_size=12),
    st.text(max_size=30) | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
usages = st.builds(Usage, *[st.integers(0, 10**9)] * 6)
messages = st.one_of(
    st.builds(UserMessage, st.text()),
    st.builds(
        AssistantMessage,
        st.text(),
        st.lists(tool_calls, max_size=3).map(tuple),
        st.none() | usages,
        st.none() | st.text(max_size=10),
        st.lists(
            st.builds(
                Reasoning, st.text(max_size=8), st.dictionaries(st.text(max_size=5), json_values)
            ),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        ToolResult,
        st.text(max_size=12),
        st.text(max_size=12),
        st.text(),
        st.booleans(),
        st.lists(st.builds(Image, st.text(max_size=10), st.text(max_size=20)), max_size=2).map(
            tuple
        ),
    ),
    st.builds(Summary, st.text(), st.integers(0, 10**6)),
)


@settings(deadline=None)  # a loaded machine must not fail it: only the round trip is judged
@given(messages)
def test_every_message_survives_json(message: Message) -> None:
    text = json.dumps(message.to_dict())
    assert message_from_dict(json.loads(text)) == message


def _read_as_json_loads_does(text: str) -> object:
    """A call's arguments as `json.loads` reads them, or the complaint it makes."""
    stripped = text.strip()
    if stripped in ("", "null"):
        return {}
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {exc}"
    return value if isinstance(value, dict) else f"not an object: {type(value).__name__}"


def _read(call: ToolCall) -> object:
    try:
        return call.parsed_arguments()
    except ArgumentsError as exc:
        text = str(exc)
        if text.startswith("arguments are not valid JSON ("):
            return (
                "not JSON: "
                + text.removeprefix("arguments are not valid JSON (").rsplit("); received:", 1)[0]
            )
        return "not an object: " + text.split("got ", 1)[1].split(":", 1)[0]


argument_texts = (
    st.text(max_size=20)
    | json_values.map(json.dumps)
    | st.tuples(
        json_values.map(json.dumps), st.sampled_from(["", " ", "\n", " x", "}", "\ufeff"])
    ).map("".join)
    | st.tuples(st.sampled_from(["", " ", "\ufeff"]), json_values.map(json.dumps)).map("".join)
)


@given(argument_texts)
def test_arguments_read_as_json_loads_reads_them_however_often(text: str) -> None:
    expected = _read_as_json_loads_does(text)
    call = ToolCall("c", "f", text)
    with contextlib.suppress(ArgumentsError):
        call.arguments_json()  # measuring a call keeps what it read for the next reader
    assert _read(call) == expected
    assert _read(call) == expected


# -- wire histories -----------------------------------------------------------------------------

ODD_IDS = [
    "call_1",
    "call_1",
    "",
    "functions.get_weather:0",
    "call_a|fc_b",
    "call__0_get_weather_cmpl-" + "8" * 32,
    "toolu_01A09q90qw90lq917835lq9",
    "x" * 80,
    "id with spaces",
    "ümlaut",
]
RULES = [
    IdRules(),
    IdRules(max_length=64, prefix="toolu_"),
    IdRules(pattern=re.compile(r"^[a-zA-Z0-9]{9}$"), max_length=9, prefix=""),
    IdRules(pattern=re.compile(r"^fc_[a-zA-Z0-9_-]+$"), max_length=64, prefix="fc_"),
]


@st.composite
def wire_histories(draw: st.DrawFn) -> list[Message]:
    ids = st.sampled_from(ODD_IDS) | st.text(max_size=6)
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "result", "summary"]))
        if kind == "user":
            out.append(UserMessage("u"))
        elif kind == "assistant":
            out.append(AssistantMessage("a"))
        elif kind == "calls":
            calls = draw(st.lists(ids, min_size=1, max_size=4))
            out.append(AssistantMessage("", tuple(ToolCall(i, "t", "{}") for i in calls)))
        elif kind == "result":
            out.append(ToolResult(draw(ids), "t", draw(st.text(max_size=5)), draw(st.booleans())))
        else:
            out.append(Summary("s", 1))
    return out


def assert_provider_valid(out: Sequence[Message], rules: IdRules) -> None:
    """Each reply's calls answered right after it, each once; no result anywhere else."""
    seen_ids: set[str] = set()
    index = 0
    while index < len(out):
        message = out[index]
        index += 1
        assert not isinstance(message, ToolResult), "orphan result on the wire"
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        ids = [c.id for c in message.tool_calls]
        for call_id in ids:
            assert rules.accepts(call_id), call_id
            assert call_id not in seen_ids
            seen_ids.add(call_id)
        answered: list[str] = []
        while index < len(out) and isinstance(out[index], ToolResult):
            answered.append(out[index].call_id)  # type: ignore[union-attr]
            index += 1
        assert sorted(answered) == sorted(ids)


@given(wire_histories(), st.sampled_from(RULES))
def test_prepare_history_always_gives_a_valid_consistent_history(
    history: list[Message], rules: IdRules
) -> None:
    out = prepare_history(history, rules)
    assert_provider_valid(out, rules)
    assert prepare_history(history, rules) == out  # deterministic
    # nothing is lost: each result is sent as a result or as text; nothing else is invented
    sent_results = [
        m for m in out if isinstance(m, ToolResult) and m.content != MISSING_RESULT_TEXT
    ]
    orphans = [m for m in out if isinstance(m, UserMessage) and m.text.startswith("[tool ")]
    given_results = [m for m in history if isinstance(m, ToolResult)]
    assert len(sent_results) + len(orphans) >= len(given_results)
    kept = [_shape(m) for m in out if not isinstance(m, ToolResult) and m not in orphans]
    assert kept == [_shape(m) for m in history if not isinstance(m, ToolResult)]
    # a result keeps its content and flag, and lands on the call it answered
    call_names = {
        c.id: c.name for m in out if isinstance(m, AssistantMessage) for c in m.tool_calls
    }
    for result in sent_results:
        assert result.call_id in call_names


def _shape(message: Message) -> object:
    """A message with its call ids left out (adapters may rewrite those, nothing else)."""
    if isinstance(message, AssistantMessage):
        return (message.text, [(c.name, c.arguments) for c in message.tool_calls])
    return message


@given(wire_histories(), st.sampled_from(RULES))
def test_prepare_history_is_stable_on_its_own_output(
    history: list[Message], rules: IdRules
) -> None:
    once = prepare_history(history, rules)
    assert prepare_history(once, rules) == once


@given(wire_histories())
def test_valid_unique_ids_are_kept_as_they_are(history: list[Message]) -> None:
    rules = IdRules()
    out = prepare_history(history, rules)
    given_ids = [c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls]
    sent_ids = [c.id for m in out if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert len(given_ids) == len(sent_ids)
    for original, sent in zip(given_ids, sent_ids, strict=True):
        if rules.accepts(original) and given_ids.count(original) == 1:
            assert sent == original


@given(st.sampled_from(RULES), st.text())
def test_made_ids_satisfy_their_rules(rules: IdRules, seed: str) -> None:
    made = rules.make(seed)
    assert rules.accepts(made)
    assert made == rules.make(seed)


@given(st.lists(st.text(max_size=80) | st.sampled_from(["calendar.respond", "get weather", "a/b"])))
def test_tool_names_map_to_valid_unique_wire_names_and_back(names: list[str]) -> None:
    unique = list(dict.fromkeys(names))
    mapping = ToolNames(unique)
    wire = [mapping.to_wire(n) for n in unique]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", w) for w in wire)
    assert len(set(wire)) == len(wire)
    assert [mapping.from_wire(w) for w in wire] == unique
    assert mapping.from_wire("never_mapped") == "never_mapped"

"""Messages are frozen values that survive a trip through JSON unchanged."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle

import pytest

from steadyloop import Agent, AssistantMessage, Summary, ToolCall, ToolResult, Usage, UserMessage
from steadyloop.messages import ArgumentsError, Image, Message, Reasoning, message_from_dict
from steadyloop.testing import ScriptedModel
from steadyloop.usage import Tally

EXAMPLES: list[Message] = [
    UserMessage("hello"),
    UserMessage(""),
    AssistantMessage(),
    AssistantMessage("just text", stop_reason="end_turn"),
    AssistantMessage(
        "let me look",
        (
            ToolCall("call_1", "search", '{"q": "refund"}'),
            ToolCall("", "get", ""),
            ToolCall("call_3", "get", {"id": 3, "nested": {"a": [1, 2]}}),
        ),
        Usage(10, 5, 1, 3, cache_read_tokens=4, cache_write_tokens=2),
        "tool_use",
        (Reasoning("anthropic", {"type": "thinking", "signature": "abc"}),),
    ),
    ToolResult("call_1", "search", "3 tickets", False),
    ToolResult("call_2", "get", "get failed: KeyError", True),
    ToolResult("call_4", "shot", "an image", False, (Image("image/png", "iVBORw0KGgo="),)),
    Summary("the user wants refunds; two found", 7),
    UserMessage("unicode: ünïcødé 🎉 \u0000"),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips_through_json(message: Message) -> None:
    wire = json.dumps(message.to_dict())
    again = message_from_dict(json.loads(wire))
    assert again == message
    assert type(again) is type(message)


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_the_class_own_from_dict_agrees(message: Message) -> None:
    assert type(message).from_dict(message.to_dict()) == message


def test_mapping_arguments_are_kept_as_a_mapping() -> None:
    call = ToolCall("c", "t", {"a": 1})
    again = ToolCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert again.arguments == {"a": 1}


def test_to_dict_names_the_kind() -> None:
    assert [m.to_dict()["type"] for m in EXAMPLES[:1]] == ["user"]
    assert AssistantMessage().to_dict() == {"type": "assistant", "text": ""}
    assert ToolResult("c", "t", "x").to_dict()["type"] == "tool_result"
    assert Summary("s", 2).to_dict() == {"type": "summary", "text": "s", "replaced": 2}


@pytest.mark.parametrize("data", [{}, {"type": "system", "text": "x"}, {"type": 3}])
def test_unknown_kind_is_a_clear_error(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not a steadyloop message"):
        message_from_dict(data)


def test_messages_are_frozen() -> None:
    message = UserMessage("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "b"  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        message.extra = 1  # type: ignore[attr-defined]


def test_usage_adds_field_by_field() -> None:
    total = Usage(1, 2, 3, 4, 5, 6) + Usage(10, 20, 30, 40, 50, 60)
    assert total == Usage(11, 22, 33, 44, 55, 66)
    assert Usage.from_dict({"input_tokens": "7", "unknown": 1}) == Usage(input_tokens=7)


def test_summary_note_names_how_many_messages_it_stands_for() -> None:
    assert Summary("facts", 12).note == "[12 earlier messages summarised]\nfacts"


def test_arguments_json_is_the_models_own_text_when_it_is_an_object() -> None:
    sent = '{"b": 1,  "a": "ü"} '  # key order, spacing and all: a prompt cache matches on bytes
    assert ToolCall("1", "f", sent).arguments_json() == sent
    assert ToolCall("1", "f", {"a": "ü", "b": [1]}).arguments_json() == '{"a": "ü", "b": [1]}'
    assert ToolCall("1", "f", "").arguments_json() == "{}"
    assert ToolCall("1", "f", " null ").arguments_json() == "{}"


def test_parsed_arguments_reads_an_object_or_says_what_is_wrong() -> None:
    assert ToolCall("1", "f", '{"a": 1}').parsed_arguments() == {"a": 1}
    assert ToolCall("1", "f", "  ").parsed_arguments() == {}
    with pytest.raises(
        ArgumentsError, match=r"^arguments are not valid JSON \(.*received: \{\"a\""
    ):
        ToolCall("1", "f", '{"a": ').parsed_arguments()
    with pytest.raises(ArgumentsError, match=r"must be a JSON object .* got list: \[1\]"):
        ToolCall("1", "f", "[1]").arguments_json()
    long = '{"a": "' + "x" * 500
    with pytest.raises(ArgumentsError) as info:
        ToolCall("1", "f", long).parsed_arguments()
    assert str(info.value).endswith(long[:200] + "...")


def test_a_usage_sum_adds_every_count_and_the_known_costs() -> None:
    counts = [f.name for f in dataclasses.fields(Usage) if f.name != "cost_usd"]
    one = Usage(**{name: i + 1 for i, name in enumerate(counts)}, cost_usd=None)
    two = Usage(**{name: 10 * (i + 1) for i, name in enumerate(counts)}, cost_usd=0.5)
    total = one + two
    assert [getattr(total, name) for name in counts] == [11 * (i + 1) for i in range(len(counts))]
    assert total.cost_usd == 0.5
    assert (one + one).cost_usd is None


def test_fields_added_after_the_first_form_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Usage(1, 2, 3, 4, 5, 6, 0.25)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        AssistantMessage("hi", (), None, "end_turn", (), "resp_1")  # type: ignore[call-arg]
    assert AssistantMessage("hi", response_id="resp_1").response_id == "resp_1"


async def test_a_calls_arguments_are_read_once_when_measured_and_dispatched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The transcript measures a reply as it is appended and the dispatcher then runs its
    calls: both need the arguments read, and the one reading serves both."""
    sent = '{"order": "A7", "items": [1, 2]}'
    reads: list[str] = []
    decode = json.JSONDecoder.raw_decode

    def counted(self: json.JSONDecoder, text: str, idx: int = 0) -> tuple[object, int]:
        if text == sent:
            reads.append(text)
        return decode(self, text, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    got: list[object] = []

    def look_up(order: str, items: list[int]) -> str:
        """Looks an order up.

        Args:
            order: the order.
            items: its items.
        """
        got.append((order, items))
        return "found"

    model = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("c1", "look_up", sent),)), "ok"])
    result = await Agent(model, tools=[look_up]).run("look A7 up")
    assert result.output == "ok"
    assert got == [("A7", [1, 2])]
    assert len(reads) == 1


def test_the_arguments_each_reader_gets_are_its_own() -> None:
    """What `arguments_json()` read is kept for the next reader only: changing it changes
    nothing anyone else reads, and copies, pickles and replacements carry none of it."""
    call = ToolCall("c1", "f", '{"a": [1]}')
    assert call.arguments_json() == '{"a": [1]}'
    first = call.parsed_arguments()
    assert isinstance(first, dict)
    first["a"].append(2)
    first["b"] = 3
    assert call.parsed_arguments() == {"a": [1]}
    assert call.arguments_json() == '{"a": [1]}'
    for again in (
        pickle.loads(pickle.dumps(call)),
        copy.deepcopy(call),
        dataclasses.replace(call, id="c2"),
    ):
        assert again.parsed_arguments() == {"a": [1]}
    assert pickle.loads(pickle.dumps(call)) == call
    assert [f.name for f in dataclasses.fields(call)] == ["id", "name", "arguments"]
    assert dataclasses.asdict(call) == {"id": "c1", "name": "f", "arguments": '{"a": [1]}'}
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.id = "c3"  # type: ignore[misc]


def test_a_tally_sums_as_usage_sums_do() -> None:
    parts = [Usage(1, 2, cost_usd=None), Usage(3, 4, 1, 2, 5, 6, cost_usd=0.25, unreported=1)]
    parts += [Usage(requests=1, unreported=1), Usage(7, cost_usd=0.5)]
    tally = Tally(Usage(requests=2))
    total = Usage(requests=2)
    for part in parts:
        tally.add(part)
        total += part
        assert tally.total() == total
        assert tally.cost_usd == total.cost_usd
    tally.add_calls(3)
    assert tally.total() == total + Usage(tool_calls=3)

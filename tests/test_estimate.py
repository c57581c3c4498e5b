"""The token estimate between provider counts: close for ASCII, never far under for other scripts.

The reference counts are cl100k_base's (GPT-4's tokenizer, the least compact for non-Latin
scripts of those in use); o200k_base and Claude's need fewer tokens for the same text.
"""

from __future__ import annotations

import pytest

from steadyloop import Agent, ContextLimitExceeded, Limits
from steadyloop.limits import estimate_fixed_tokens, estimate_tokens
from steadyloop.messages import AssistantMessage, ToolCall, ToolResult, UserMessage
from steadyloop.testing import ScriptedModel

# (text, its cl100k_base token count)
SAMPLES = {
    "english": (
        "The quick brown fox jumps over the lazy dog. Please check the refund status of ticket "
        "4821 and reply to the customer.",
        26,
    ),
    "chinese": (
        "请帮我查询一下这个订单的退款状态，并且回复客户说我们已经在处理中了。"  # noqa: RUF001
        "谢谢！人工智能正在改变世界。",  # noqa: RUF001 - Chinese text has Chinese punctuation
        46,
    ),
    "japanese": (
        "東京は日本の首都です。今日はとても良い天気ですね。プログラミングを勉強しています。",
        40,
    ),
    "korean": ("안녕하세요. 오늘 날씨가 정말 좋네요. 저는 프로그래밍을 공부하고 있습니다.", 41),
    "hindi": ("नमस्ते, आप कैसे हैं? आज मौसम बहुत अच्छा है। मैं प्रोग्रामिंग सीख रहा हूँ।", 77),
    "thai": ("สวัสดีครับ วันนี้อากาศดีมาก ผมกำลังเรียนเขียนโปรแกรม", 49),
    "russian": ("Привет, как дела? Сегодня очень хорошая погода. Я изучаю программирование.", 33),
    "german": ("Größenänderung für Übergrößen: äöü ß Straße München Fußgänger", 22),
}


def text_tokens(text: str) -> int:
    """The estimate for `text` as a user message, without the per-message overhead."""
    return estimate_tokens(UserMessage(text)) - estimate_tokens(UserMessage(""))


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_the_estimate_is_not_under_the_real_count_nor_far_over_it(sample: str) -> None:
    text, counted = SAMPLES[sample]
    assert counted <= text_tokens(text) <= 2 * counted


def test_every_kind_of_message_is_measured_the_same_way() -> None:
    text, counted = SAMPLES["chinese"]
    assert estimate_tokens(ToolResult("c", "lookup", text)) >= counted
    assert estimate_tokens(AssistantMessage(text)) >= counted
    call = ToolCall("c", "note", {"text": text})
    assert estimate_tokens(AssistantMessage(tool_calls=(call,))) >= counted
    assert estimate_fixed_tokens(text, ()) >= counted


def test_text_that_is_not_valid_unicode_is_still_measured() -> None:
    assert text_tokens("bad \udcff byte") >= 2


async def test_a_prompt_in_chinese_that_cannot_fit_is_never_sent() -> None:
    """About 1,400 real tokens against a 1,000-token limit: stopped before the model call."""
    text, _ = SAMPLES["chinese"]
    model = ScriptedModel(["never"])
    agent = Agent(model, limits=Limits(max_context_tokens=1_000))
    with pytest.raises(ContextLimitExceeded):
        await agent.run(text * 30)
    assert model.requests == []


async def test_arguments_that_are_not_a_json_object_count_as_the_empty_object_sent() -> None:
    """A request carries such arguments as `{}` (the error result quotes the start of the
    text), so a long cut-off call does not stop the run at the context limit."""
    broken = ToolCall("c1", "lookup", '{"query": "' + "x" * 8_000)
    model = ScriptedModel([AssistantMessage(tool_calls=(broken,)), "done"])
    agent = Agent(model, limits=Limits(max_context_tokens=1_500))
    result = await agent.run("look it up")
    assert result.output == "done"
    assert len(model.requests) == 2

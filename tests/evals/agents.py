"""Agents and judges the eval tests build by name ("evals.agents:make_agent"), as users' are.

The fake agent looks the prompt up with its `lookup` tool, then answers from `ANSWERS` (the
prompt in upper case for any other). Every model call (the agent's and the judges') is counted
in `CALLS` and, when `EVAL_TEST_JOURNAL` names a file, appended to it as `model PROMPT TURN` or
`judge`, so a test can count them across processes. `EVAL_TEST_SLEEP` ("LOW,HIGH" seconds) makes
each model call wait; `EVAL_TEST_BROKEN` names an answer the tool fails for.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from collections.abc import Sequence

from steadyloop import Agent, AssistantMessage, ToolCall, ToolError, UserMessage, tool
from steadyloop.evals import Judge
from steadyloop.messages import Message
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

CALLS: Counter[str] = Counter()
ANSWERS = {
    "capital of France": "Paris",
    "capital of Spain": "Madrid",
    "two plus two": "4",
    "refunds": '{"open": ["T-101", "T-103"], "count": 2}',
    # Text JSON carries but UTF-8 cannot: a lone surrogate, beside accents and an emoji.
    "odd text": "caf\u00e9 \U0001f600 \udc80 end",
}


def journal(line: str) -> None:
    path = os.environ.get("EVAL_TEST_JOURNAL")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


async def _nap() -> None:
    low, high = (float(x) for x in os.environ.get("EVAL_TEST_SLEEP", "0,0").split(","))
    if high:
        await asyncio.sleep(random.uniform(low, high))


@tool
def lookup(query: str) -> str:
    """Looks a question up.

    Args:
        query: the question.
    """
    if query == os.environ.get("EVAL_TEST_BROKEN"):
        raise ToolError(f"nothing known about {query}")
    return ANSWERS.get(query, query.upper())


async def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    prompt = next(m.text for m in messages if isinstance(m, UserMessage))
    turn = sum(isinstance(m, AssistantMessage) for m in messages) + 1
    CALLS[f"model {prompt}"] += 1
    journal(f"model {prompt.replace(' ', '_')} {turn}")
    await _nap()
    if turn == 1:
        return AssistantMessage(tool_calls=(ToolCall(f"c-{turn}", "lookup", {"query": prompt}),))
    return AssistantMessage(ANSWERS.get(prompt, prompt.upper()))


def make_agent() -> Agent:
    return Agent(FunctionModel(reply), tools=[lookup])


async def plain_reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    """Answers at once, without the tool, always "Paris" (a worse agent)."""
    prompt = next(m.text for m in messages if isinstance(m, UserMessage))
    CALLS[f"plain {prompt}"] += 1
    journal(f"model {prompt.replace(' ', '_')} 1")
    return AssistantMessage("Paris")


def make_plain_agent() -> Agent:
    return Agent(FunctionModel(plain_reply), tools=[lookup])


async def judge_reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    """Passes an answer that holds the expected one, as a `final_answer` verdict."""
    prompt = next(m.text for m in messages if isinstance(m, UserMessage))
    CALLS["judge"] += 1
    journal("judge")
    expected = prompt.split("Expected answer:\n", 1)[-1].split("\n\n", 1)[0]
    answer = prompt.rsplit("The agent's answer:\n", 1)[-1]
    good = "Expected answer:" in prompt and expected in answer
    verdict = {"reason": "holds the answer" if good else "wrong", "score": 1.0 if good else 0.2,
               "passed": good}  # fmt: skip
    return AssistantMessage(tool_calls=(ToolCall("v", "final_answer", verdict),))


judge = Judge(FunctionModel(judge_reply), "The answer names the expected answer.")

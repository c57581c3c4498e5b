"""Runs for the viewer to show, logged by the real Agent driving the shipped fake models.

Each function runs one agent to its end on `store` and returns the run's id. `pause` makes the
tools (and the model, where it decides) take that many seconds, so a timeline has visible
widths; tests leave it at 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    LimitExceeded,
    Limits,
    Message,
    ToolCall,
    tool,
)
from steadyloop.errors import ModelError
from steadyloop.messages import ToolResult, Usage
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec
from support.processes import python_env

PARALLEL_TOOLS = ("search_tickets", "fetch_order", "lookup_customer")
KILLED_RUN = Path(__file__).with_name("killed_run.py")


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def reply(*calls: ToolCall, text: str = "", tokens: tuple[int, int] = (0, 0)) -> AssistantMessage:
    """A reply making `calls` (or answering with `text`), using `tokens` (in, out)."""
    return AssistantMessage(
        text,
        tool_calls=calls,
        usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
        stop_reason="tool_use" if calls else "end_turn",
    )


def answered_run(store: RunStore, prompt: str = "Which refunds are still open?") -> str:
    """A run that calls one tool, then answers."""

    @tool
    def search_tickets(query: str) -> list[str]:
        """Full-text search over support tickets; returns the open ones' ids."""
        return ["T-101", "T-103"]

    model = ScriptedModel(
        [
            reply(call("c1", "search_tickets", query="refund"), tokens=(812, 31)),
            reply(text="Two refunds are open: T-101 and T-103.", tokens=(870, 64)),
        ],
        name="gpt-4.1-mini",
    )
    result = Agent(model, tools=[search_tickets], store=store).run_sync(prompt)
    assert result.run_id is not None
    return result.run_id


def parallel_run(store: RunStore, pause: float = 0.0) -> str:
    """A run whose first reply makes three calls that can only finish together (each waits at
    a barrier for the others), then answers."""
    barrier = threading.Barrier(len(PARALLEL_TOOLS), timeout=30)

    def together(answer: str, extra: float) -> str:
        barrier.wait()
        time.sleep(pause * extra)
        return answer

    @tool
    def search_tickets(query: str) -> list[str]:
        """Full-text search over support tickets; returns the open ones' ids."""
        return [together("T-101", 1.0)]

    @tool
    def fetch_order(order_id: str) -> str:
        """The order with this id, as text."""
        return together(f"order {order_id}: 2 items, refund requested", 2.2)

    @tool
    def lookup_customer(email: str) -> str:
        """The customer with this email, as text."""
        return together(f"{email}: customer since 2021", 1.6)

    async def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        await asyncio.sleep(pause * 1.4)
        if isinstance(messages[-1], ToolResult):
            return reply(text="T-101 is open: the refund for order A-7 waits.", tokens=(1460, 88))
        return reply(
            call("s", "search_tickets", query="refund"),
            call("o", "fetch_order", order_id="A-7"),
            call("u", "lookup_customer", email="ana@example.com"),
            tokens=(1210, 74),
        )

    agent = Agent(FunctionModel(decide, name="claude-sonnet-4-5"), tools=[search_tickets,
                  fetch_order, lookup_customer], store=store)  # fmt: skip
    result = agent.run_sync("Is the refund for order A-7 still open, and who asked?")
    assert result.run_id is not None
    return result.run_id


def limit_run(store: RunStore) -> str:
    """A run stopped by its turn limit, with a tool error and a truncated result on the way."""

    @tool
    def read_log(lines: int) -> str:
        """The last `lines` lines of the service log."""
        if lines > 100:
            raise ValueError("at most 100 lines")
        return "".join(f"line {n}: all quiet\n" for n in range(lines))

    model = ScriptedModel(
        [
            reply(call("a", "read_log", lines=500), tokens=(400, 20)),
            reply(call("b", "read_log", lines=80), tokens=(460, 22)),
        ],
        name="gpt-4.1-mini",
    )
    agent = Agent(model, tools=[read_log], limits=Limits(max_turns=2), max_tool_output=200,
                  store=store)  # fmt: skip
    with contextlib.suppress(LimitExceeded):
        agent.run_sync("Why did the nightly job fail?")
    return store.runs(1)[0].id


def failed_run(store: RunStore, prompt: str = "Is billing up?") -> str:
    """A run whose second model call fails for good: it ends with status error."""
    first = ScriptedModel(
        [
            reply(call("c", "check_status", service="billing")),
            ModelError("the API key was revoked"),
        ],
        name="gpt-4.1-mini",
    )
    with contextlib.suppress(ModelError):
        Agent(first, tools=[check_status], store=store).run_sync(prompt)
    return store.runs(1)[0].id


def resumed_run(store: RunStore) -> str:
    """A run that failed as `failed_run` does, then resumed to its answer."""
    run_id = failed_run(store, "Is billing up now?")
    again = ScriptedModel([reply(text="Billing is up.")], name="gpt-4.1-mini")
    asyncio.run(Agent(again, tools=[check_status], store=store).resume(run_id))
    return run_id


def killed_and_resumed_run(store: RunStore) -> str:
    """A run whose process was killed in the middle of a tool call, resumed from the log: the
    call it was making is answered as interrupted."""
    subprocess.run(
        [sys.executable, str(KILLED_RUN), str(store.path)], env=python_env(), check=False,
        timeout=60,
    )  # fmt: skip
    run_id = store.runs(1)[0].id
    again = ScriptedModel([reply(text="The charge was interrupted.")], name="gpt-4.1-mini")
    asyncio.run(Agent(again, store=store).resume(run_id))
    return run_id


@tool
def check_status(service: str) -> str:
    """Whether `service` is up, as text."""
    return f"{service} is up"


def long_run(store: RunStore, turns: int) -> str:
    """A run of `turns` model calls, each making one tool call, then an answer."""

    @tool
    def step(n: int) -> str:
        """Takes step `n` of the job."""
        return f"step {n} done"

    replies = [reply(call(f"c{n}", "step", n=n), tokens=(100 + n, 12)) for n in range(turns)]
    model = ScriptedModel([*replies, reply(text="All steps done.")], name="gpt-4.1-mini")
    agent = Agent(model, tools=[step], limits=Limits(max_turns=turns + 1), store=store)
    result = agent.run_sync(f"Run the {turns} steps of the job.")
    assert result.run_id is not None
    return result.run_id


def compacted_run(store: RunStore) -> str:
    """A run whose context outgrows half its limit, so older messages are summarised."""

    @tool
    def read_page(page: int) -> str:
        """Page `page` of the incident report."""
        return f"page {page}: " + "the disk filled up at 02:14 and the job stopped. " * 6

    pages = [reply(call(f"p{n}", "read_page", page=n)) for n in range(4)]
    model = ScriptedModel([*pages, reply(text="The disk filled up.")], name="gpt-4.1-mini")
    agent = Agent(
        model,
        tools=[read_page],
        limits=Limits(max_context_tokens=400),
        compaction=Compaction(
            keep_recent=2, trigger=0.5, summarise=lambda _: "Pages 0-1: disk full."
        ),
        store=store,
    )
    agent.run_sync("What stopped the nightly job?")
    return store.runs(1)[0].id

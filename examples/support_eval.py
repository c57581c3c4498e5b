"""An eval of the support-desk agent (examples/support_tickets.py) on examples/support_eval.jsonl.

Run it offline (a scripted stand-in model):   python examples/support_eval.py
Or with a model, and a model as the judge:    python examples/support_eval.py \
    --model openai:gpt-4.1-mini --judge openai:gpt-4.1
Then browse it: steadyloop ui --store support_eval.db   (/evals)

Running it again reads every finished attempt from the run log: no model is asked twice.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from steadyloop import Agent, AssistantMessage, ToolCall, ToolResult, UserMessage
from steadyloop.evals import (
    Case,
    Contains,
    Judge,
    MaxTurns,
    NoToolErrors,
    evaluate,
    scorer,
)
from steadyloop.messages import Message
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

DATASET = Path(__file__).with_name("support_eval.jsonl")
# The agent under test, from its own example file beside this one.
DESK = runpy.run_path(str(Path(__file__).with_name("support_tickets.py")))
build_agent: Callable[[str | None], Agent] = DESK["build_agent"]
TICKET_ID = re.compile(r"T-\d+")


async def stand_in(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    """A scripted model for running offline: one tool call chosen from the question's words,
    then an answer made from what the tool returned."""
    question = next(m.text for m in messages if isinstance(m, UserMessage)).lower()
    last = messages[-1]
    if not isinstance(last, ToolResult):
        if "how many" in question:
            return AssistantMessage(tool_calls=(ToolCall("c1", "count_tickets_by_status", {}),))
        query = next(w for w in ("refund", "log", "invoice") if w in question)
        arguments: dict[str, Any] = {"query": query}
        if "open" in question:
            arguments["status"] = "open"
        return AssistantMessage(tool_calls=(ToolCall("c1", "search_tickets", arguments),))
    found = json.loads(last.content)
    if isinstance(found, dict):
        return AssistantMessage(f"{found.get('open', 0)} tickets are open.")
    return AssistantMessage("Tickets: " + ", ".join(f"{t['id']} ({t['title']})" for t in found))


def make_agent() -> Agent:
    """The support agent on $SUPPORT_EVAL_MODEL, or on the scripted stand-in."""
    model = os.environ.get("SUPPORT_EVAL_MODEL")
    agent = build_agent(model or "test")
    if not model:
        agent.model = FunctionModel(stand_in)
    return agent


@scorer
def cites_only_expected(case: Case, attempt: Any) -> bool | float:
    """No ticket id in the answer that the case does not expect (a share when some are)."""
    if not isinstance(case.expected, list):
        return True
    cited = set(TICKET_ID.findall(str(attempt.output or "")))
    extra = cited - set(case.expected)
    return 1.0 - len(extra) / len(cited) if cited else False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="the agent's model (default: offline)")
    parser.add_argument("--judge", default=None, help="a model that judges each answer too")
    parser.add_argument("--store", default="support_eval.db", help="the run log")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    if args.model:
        os.environ["SUPPORT_EVAL_MODEL"] = args.model
    scorers: list[Any] = [Contains(), cites_only_expected, NoToolErrors(), MaxTurns(4)]
    if args.judge:
        scorers.append(Judge(args.judge, "Answers the question, citing the right ticket ids."))
    name = "support-" + re.sub(r"[^A-Za-z0-9._-]", "_", args.model or "offline")
    report = evaluate(make_agent, DATASET, scorers, name=name, store=args.store,
                      repeat=args.repeat)  # fmt: skip
    print(report.render())
    return 0 if report.pass_rate == 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""A boss agent whose one call goes to a researcher sub-agent, in a process of its own, for tests
that kill it.

    python subagent_process.py STORE FOLDER MODE

STORE is a path or URL; the boss's run id is always `boss-run`. The boss asks `research` once,
then answers. The researcher calls `lookup` once, then answers. Each model call appends a line
to FOLDER/models.log (`boss N` or `researcher N`, N counting that agent's replies in its view
plus one), and `lookup` appends `lookup` to FOLDER/calls.log after its effect. MODE:

- `kill-in-child`: the researcher's second model call kills the process (SIGKILL).
- `kill-after-child`: the boss's second model call kills the process (the child answered).
- `resume`: `run(..., run_id="boss-run", if_exists="resume")`; prints the answer and the
  boss's `usage.requests`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, ToolCall, tool
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

RUN_ID = "boss-run"


def main(store: str, folder: Path, mode: str) -> None:
    def note(log: str, line: str) -> None:
        with (folder / log).open("a") as file:
            file.write(line + "\n")

    @tool
    def lookup(topic: str) -> str:
        """Looks a topic up."""
        note("calls.log", "lookup")
        return f"{topic}: three vendors"

    def replies(
        name: str, kill_at: int | None, first: AssistantMessage, last: str
    ) -> FunctionModel:
        def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
            number = sum(isinstance(m, AssistantMessage) for m in messages) + 1
            note("models.log", f"{name} {number}")
            if number == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return first if number == 1 else AssistantMessage(last)

        return FunctionModel(reply, name=name)

    researcher = Agent(
        replies(
            "researcher",
            2 if mode == "kill-in-child" else None,
            AssistantMessage(tool_calls=(ToolCall("r1", "lookup", {"topic": "vendors"}),)),
            "the findings",
        ),
        tools=[lookup],
    )
    research = researcher.as_tool(name="research", description="Researches one question.")
    boss = Agent(
        replies(
            "boss",
            2 if mode == "kill-after-child" else None,
            AssistantMessage(tool_calls=(ToolCall("b1", "research", {"prompt": "vendors?"}),)),
            "compared",
        ),
        tools=[research],
        store=store,
    )
    result = boss.run_sync("Compare the vendors.", run_id=RUN_ID, if_exists="resume")
    print(result.output, result.usage.requests)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3])

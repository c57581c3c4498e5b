"""A logged run with a typed answer, in a process of its own, for the tests that kill it.

    python typed_run.py STORE kill|resume

The model answers `Refund(order_id="A1", amount=10)` through `final_answer` the first time it is
called and `amount=99` after that; each model call appends a line to `model-calls.log` beside
the store, so a test counts them across processes. `kill` runs "refund-1" and SIGKILLs its own
process the moment the answer is accepted and logged, before the run is marked finished;
`resume` resumes it and prints the answer as JSON.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from steadyloop import Agent, AssistantMessage, Message, ToolCall
from steadyloop.events import Event, ToolCallFinished
from steadyloop.output import FINAL_ANSWER
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec


class Refund(BaseModel):
    order_id: str
    amount: int


def main(store: str, mode: str) -> None:
    calls = Path(store).parent / "model-calls.log"

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        first = not calls.exists()
        with calls.open("a") as log:
            log.write("model\n")
        arguments = {"order_id": "A1", "amount": 10 if first else 99}
        return AssistantMessage(tool_calls=(ToolCall("a1", FINAL_ANSWER, arguments),))

    agent = Agent(FunctionModel(reply), output=Refund, store=store)

    def die_once_accepted(event: Event) -> None:
        if isinstance(event, ToolCallFinished) and event.call.name == FINAL_ANSWER:
            assert agent.store is not None
            agent.store.flush()  # the acceptance is in the log; the finish is not
            os.kill(os.getpid(), signal.SIGKILL)

    if mode == "kill":
        asyncio.run(agent.run("refund order A1", run_id="refund-1", on_event=die_once_accepted))
    else:
        print(asyncio.run(agent.resume("refund-1")).output.model_dump_json())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

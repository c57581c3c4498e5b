"""A logged run in a process of its own, for tests that kill, block or crowd it.

    python scripted_run.py STORE MODE [RUN_ID] [--calls FOLDER]

STORE is a path or URL. Each run asks for one `charge` call (not idempotent) and one `lookup`
call (idempotent), then answers. Every call appends its name to FOLDER/calls.log (default: the
store's folder) *after* its effect, so a test counts the effects. MODE says where the process
stops:

- `kill-in-tool`: `charge` kills its own process (SIGKILL) the moment it starts.
- `kill-in-model`: the second model call kills the process, after both tools have finished.
- `block`: `charge` waits until the file `release` exists in FOLDER.
- `answer`: runs to the end; prints the run id.
- `resume`: resumes RUN_ID and prints its answer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, ToolCall, tool
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec


def main(store: str, mode: str, run_id: str | None, folder: Path) -> None:
    def note(name: str) -> None:
        with (folder / "calls.log").open("a") as log:
            log.write(name + "\n")

    @tool
    def charge(amount: int) -> str:
        """Charges the card: not safe to repeat."""
        if mode == "kill-in-tool":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "block":
            (folder / "charging").touch()
            while not (folder / "release").exists():
                time.sleep(0.01)
        note("charge")
        return f"charged {amount}"

    @tool(idempotent=True)
    def lookup(order: str) -> str:
        """Reads an order: safe to repeat."""
        note("lookup")
        return f"order {order} is open"

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        asked = sum(isinstance(m, AssistantMessage) for m in messages)
        if asked == 0:
            return AssistantMessage(
                tool_calls=(
                    ToolCall("c1", "charge", '{"amount": 5}'),
                    ToolCall("c2", "lookup", '{"order": "A7"}'),
                )
            )
        if mode == "kill-in-model":
            os.kill(os.getpid(), signal.SIGKILL)
        return AssistantMessage("all done")

    agent = Agent(FunctionModel(reply), tools=[charge, lookup], store=store)
    if mode == "resume":
        assert run_id is not None
        result = asyncio.run(agent.resume(run_id))
    else:
        result = agent.run_sync("charge and look up")
    print(result.run_id, result.output)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    calls = Path(arguments[0]).parent
    if "--calls" in arguments:
        at = arguments.index("--calls")
        calls = Path(arguments[at + 1])
        del arguments[at : at + 2]
    main(arguments[0], arguments[1], arguments[2] if len(arguments) > 2 else None, calls)

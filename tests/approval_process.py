"""A run paused for approval in a process of its own, for the test that kills it between the
pause and the approval.

    python approval_process.py STORE pause           # prints the run id once paused, then waits
    python approval_process.py STORE resume RUN_ID   # approves the waiting call, prints the answer
    python approval_process.py STORE resume-then-die RUN_ID  # approves it; the refund kills
                                                     # its process right after its effect
    python approval_process.py STORE continue RUN_ID # resumes with no decisions, prints the
                                                     # answer and each call's result

Each tool appends its name to STORE's folder/effects.log after its effect, so the test counts
effects across processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from steadyloop import Agent, Approve, AssistantMessage, ToolCall, ToolResult, tool
from steadyloop.testing import ScriptedModel

CALLS = AssistantMessage(
    tool_calls=(
        ToolCall("refund_1", "issue_refund", '{"order_id": "A1", "amount": 30}'),
        ToolCall("lookup_1", "lookup_order", '{"order_id": "A1"}'),
    )
)


def main(store: Path, mode: str, run_id: str | None = None) -> None:
    def note(name: str) -> None:
        with (store.parent / "effects.log").open("a") as log:
            log.write(name + "\n")

    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order: money leaves, so a person approves it first."""
        note("issue_refund")
        if mode == "resume-then-die":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded {amount} on {order_id}"

    @tool
    def lookup_order(order_id: str) -> str:
        """The order's status."""
        note("lookup_order")
        return f"{order_id}: delivered"

    replies: list[AssistantMessage | str] = [CALLS] if mode == "pause" else ["Refunded."]
    agent = Agent(ScriptedModel(replies), tools=[issue_refund, lookup_order], store=store)
    if mode == "pause":
        result = agent.run_sync("Refund A1")
        print(result.run_id, result.stop_reason, flush=True)
        time.sleep(600)  # a process that lingers after the pause until it is killed
        return
    assert run_id is not None
    if mode == "continue":
        resumed = asyncio.run(agent.resume(run_id))
        print(resumed.output, flush=True)
        for message in resumed.messages:
            if isinstance(message, ToolResult):
                print(f"{message.call_id}: {message.content}", flush=True)
        return
    resumed = asyncio.run(agent.resume(run_id, decisions={"refund_1": Approve()}))
    print(resumed.output, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], *sys.argv[3:])

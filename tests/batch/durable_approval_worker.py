"""A DBOS worker for the durable-approval tests, as a process of its own.

    python durable_approval_worker.py SYSTEM_DB_URL STORE_URL MODE RUN_ID...

Each run is a ticket ("ticket N" for run id w0, c0...: the run id less its letters) handled by
a durable agent whose model first asks for an ungated `look_up` and a gated `pay` together (the
run pauses), then, once paid, answers "paid ticket N". Modes:

- `pause`: one workflow per run, named after it, runs it until it pauses;
- `approve`: one workflow per run, `approve-RUN_ID`, approves its `pay` with
  `agent.resume(run_id, decisions=...)`;
- `recover`: only launches DBOS, which recovers the approvals a dead worker left.

Prints the workflows' outputs as a JSON list. When `DURABLE_TEST_DIE_AT` is set, the first run
is doomed: once the other approvals are done, it kills its worker ("pay": in its `pay`, before
the payment; "model": in the model call after it), once (`DURABLE_TEST_DIED` is the marker).
Each payment appends its run id to `DURABLE_TEST_PAYMENTS`; `DURABLE_TEST_JOURNAL` gets
`pay RUN_ID` when `pay` starts and `model TICKET TURN` per model call.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence

from dbos import DBOS, SetWorkflowID

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Message,
    RunContext,
    ToolCall,
    UserMessage,
    tool,
)
from steadyloop.engines.dbos import durable
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

system_db, store_url, mode, *run_ids = sys.argv[1:]
others_done = asyncio.Event()  # the doomed run kills its worker only once this is set


def ticket_of(run_id: str) -> str:
    return "ticket " + run_id.lstrip("abcdefghijklmnopqrstuvwxyz")


DOOMED = ticket_of(run_ids[0])


def append(path: str, line: str) -> None:
    with open(path, "a") as out:
        out.write(line + "\n")


def journal(line: str) -> None:
    append(os.environ["DURABLE_TEST_JOURNAL"], line)


async def die_here(where: str, ticket: str) -> None:
    """Kills this worker the first time the doomed run's ticket gets to `where`."""
    if ticket != DOOMED or os.environ.get("DURABLE_TEST_DIE_AT") != where:
        return
    await others_done.wait()
    try:
        os.close(os.open(os.environ["DURABLE_TEST_DIED"], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    os._exit(9)


@tool(idempotent=True)
async def look_up(ticket: str) -> str:
    """Reads a ticket.

    Args:
        ticket: the ticket.
    """
    return f"{ticket} asks for 5 EUR"


@tool(approve=True)
async def pay(ctx: RunContext[None], ticket: str) -> str:
    """Pays a ticket's refund.

    Args:
        ticket: the ticket.
    """
    journal(f"pay {ctx.run_id}")
    await asyncio.sleep(0.01)
    await die_here("pay", ticket)
    append(os.environ["DURABLE_TEST_PAYMENTS"], f"{ctx.run_id}")
    return f"paid 5 EUR for {ticket}"


async def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    ticket = next(m.text for m in messages if isinstance(m, UserMessage))
    turn = sum(isinstance(m, AssistantMessage) for m in messages) + 1
    journal(f"model {ticket} {turn}")
    await asyncio.sleep(0.005)
    if turn == 1:
        calls = (
            ToolCall("l1", "look_up", {"ticket": ticket}),
            ToolCall("p1", "pay", {"ticket": ticket}),
        )
        return AssistantMessage(tool_calls=calls)
    await die_here("model", ticket)
    return AssistantMessage(f"paid {ticket}")


DBOS(
    config={
        "name": "steadyloop-durable-approvals",
        "system_database_url": system_db,
        "log_level": "WARNING",
    }
)
agent = durable(Agent(FunctionModel(reply), tools=[look_up, pay], store=store_url))


@DBOS.workflow()
async def answer(ticket: str) -> str:
    return (await agent.run(ticket, run_id=DBOS.workflow_id)).stop_reason


@DBOS.workflow()
async def approve(run_id: str) -> str:
    return (await agent.resume(run_id, decisions={"p1": Approve()})).output


async def main() -> list[str]:
    DBOS.launch()
    if mode == "recover":
        ids = [f"approve-{run_id}" for run_id in run_ids]
        return [await (await DBOS.retrieve_workflow_async(wid)).get_result() for wid in ids]
    handles = []
    for run_id in run_ids:
        if mode == "pause":
            with SetWorkflowID(run_id):
                handles.append(await DBOS.start_workflow_async(answer, ticket_of(run_id)))
        else:
            with SetWorkflowID(f"approve-{run_id}"):
                handles.append(await DBOS.start_workflow_async(approve, run_id))
    others = [await handle.get_result() for handle in handles[1:]]
    others_done.set()
    return [await handles[0].get_result(), *others]


if __name__ == "__main__":
    outputs = asyncio.run(main())
    print(json.dumps(outputs))
    DBOS.destroy()

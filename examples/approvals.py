"""A support agent whose refunds wait for a person's approval; the run resumes from its log.

Run it offline:
    python examples/approvals.py --model test
With a model:
    python examples/approvals.py --model openai:gpt-4.1-mini "Refund order A1: it arrived broken."

The refund tool is gated (`@tool(approve=True)`). The agent has no approver, so the run pauses
when the model asks for a refund: `stop_reason == "approval"`, the waiting calls in
`result.pending`, everything in the run log. This script then plays the reviewer (refunds up to
100 approved, larger ones cut to 100) and resumes the run by its id, as another process could,
hours later. The answer is a typed `Resolution`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from steadyloop import Agent, Approve, Edit, PendingCall, RunContext, tool


@dataclass
class Shop:
    """The application's own objects, passed to each run as `deps` (never logged)."""

    orders: dict[str, float]
    refunded: list[tuple[str, float]] = field(default_factory=list)


class Resolution(BaseModel):
    order_id: str
    refunded: float
    note: str


@tool
def lookup_order(ctx: RunContext[Shop], order_id: str) -> str:
    """The amount paid for an order; 'no such order' when the id is unknown.

    Args:
        order_id: the order's id as the customer gave it, like A1.
    """
    paid = ctx.deps.orders.get(order_id)
    return "no such order" if paid is None else f"order {order_id}: paid {paid:.2f}"


@tool(approve=True)
def issue_refund(ctx: RunContext[Shop], order_id: str, amount: float) -> str:
    """Refunds part or all of an order's amount to the customer's card. A person approves each
    refund before it is made.

    Args:
        order_id: the order to refund.
        amount: how much to refund, at most what was paid.
    """
    ctx.deps.refunded.append((order_id, amount))
    return f"refunded {amount:.2f} on order {order_id}"


def review(call: PendingCall) -> Approve | Edit:
    """The reviewer's rule: refunds up to 100 go through, larger ones are cut to 100."""
    amount = float(call.arguments.get("amount", 0))
    print(f"reviewer: {call.name}({dict(call.arguments)}) [{call.call_id}]")
    return Approve() if amount <= 100 else Edit({**call.arguments, "amount": 100})


async def main(model: str | None, prompt: str, log: Path) -> Resolution | None:
    shop = Shop(orders={"A1": 240.0, "example": 30.0})
    instructions = "You resolve refund requests: look the order up, refund, then answer."
    async with Agent(
        model, tools=[lookup_order, issue_refund], instructions=instructions, store=log
    ) as agent:
        result = await agent.run(prompt, deps=shop, output=Resolution)
        while result.stop_reason == "approval":
            print(f"run {result.run_id} is waiting for {len(result.pending)} approval(s)")
            decisions = {call: review(call) for call in result.pending}
            assert result.run_id is not None
            result = await agent.resume(
                result.run_id, decisions=decisions, deps=shop, output=Resolution
            )
    print(f"refunds made: {shop.refunded}")
    return result.output


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model spec, e.g. test or openai:gpt-4.1")
    parser.add_argument("prompt", nargs="?", default="Refund order A1: it arrived broken.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        answer = asyncio.run(main(args.model, args.prompt, Path(folder) / "runs.db"))
    print(answer.model_dump_json() if answer is not None else "no answer")
    sys.exit(0 if answer is not None else 1)

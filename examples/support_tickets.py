"""A support-desk agent over a small in-memory ticket store, with three well-described tools.

Run it offline:   python examples/support_tickets.py --model test "Which refunds are still open?"
Or with a model:  python examples/support_tickets.py --model openai:gpt-4.1-mini "..."
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass

from steadyloop import Agent, LimitExceeded, ToolError, tool


@dataclass(frozen=True)
class Ticket:
    id: str
    title: str
    status: str
    body: str


TICKETS = {
    t.id: t
    for t in [
        Ticket("T-101", "Refund for double charge", "open", "Charged twice for the March plan."),
        Ticket("T-102", "Cannot log in", "closed", "Password reset mail never arrived."),
        Ticket("T-103", "Refund after cancellation", "open", "Cancelled on day 2, wants refund."),
        Ticket("T-104", "Invoice address wrong", "pending", "Needs the company name on invoices."),
        Ticket("T-105", "Refund processed twice", "closed", "Refund was sent two times."),
    ]
}


@tool
def search_tickets(query: str, status: str | None = None, limit: int = 20) -> list[dict[str, str]]:
    """Full-text search over support tickets; use it to find tickets by topic.

    Returns up to `limit` matches, newest first, each with its id, title and status (no body:
    use `get_ticket` for that). Matching is on whole words, case-insensitive: 'refund' does not
    match 'refunded'.

    Args:
        query: one or more whole words that must all appear in the title or body.
        status: only tickets with this status: 'open', 'pending' or 'closed' (default: any).
        limit: at most this many tickets, 1 to 100.
    """
    if not 1 <= limit <= 100:
        raise ValueError(f"limit must be between 1 and 100, got {limit}")
    words = query.lower().split()
    hits = [
        t
        for t in sorted(TICKETS.values(), key=lambda t: t.id, reverse=True)
        if all(w in f"{t.title} {t.body}".lower().replace(",", " ").split() for w in words)
        and (status is None or t.status == status)
    ]
    return [{"id": t.id, "title": t.title, "status": t.status} for t in hits[:limit]]


@tool
def get_ticket(ticket_id: str) -> dict[str, str]:
    """Fetches one ticket by its id, with its full body; use it once you know the id.

    Returns the ticket's id, title, status and body text.

    Args:
        ticket_id: the ticket's id, like 'T-101' (from `search_tickets`).
    """
    ticket = TICKETS.get(ticket_id)
    if ticket is None:
        raise ToolError(f"no ticket {ticket_id!r}; ids look like 'T-101'. Use search_tickets.")
    return {"id": ticket.id, "title": ticket.title, "status": ticket.status, "body": ticket.body}


@tool
def count_tickets_by_status() -> dict[str, int]:
    """Counts all tickets per status; use it for overview questions ('how many are open?').

    Returns a mapping from status ('open', 'pending', 'closed') to the number of tickets.
    """
    counts: dict[str, int] = {}
    for ticket in TICKETS.values():
        counts[ticket.status] = counts.get(ticket.status, 0) + 1
    return counts


def build_agent(model: str | None) -> Agent:
    """The support agent, on `model` (a spec string; None reads STEADYLOOP_MODEL)."""
    return Agent(
        model,
        tools=[search_tickets, get_ticket, count_tickets_by_status],
        instructions="You answer questions about support tickets. Cite ticket ids.",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model spec, e.g. test or openai:gpt-4.1")
    parser.add_argument("prompt", nargs="?", default="Which refunds are still open?")
    args = parser.parse_args(argv)
    agent = build_agent(args.model)
    try:
        result = asyncio.run(agent.run(args.prompt))
    except LimitExceeded as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    print(result.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

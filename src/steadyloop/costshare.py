"""A cost budget several runs spend from at once: the sub-agent runs one turn's calls start.

The calls of one reply run concurrently, so each sub-agent run sees the same budget left when
it starts. Were each bounded by that amount alone, two of them could together spend twice what
their caller had left. Instead they share it: each run charges what each of its model calls
cost as the reply arrives, and no run of the group starts another model call once the group
has spent it all (the run stops with `CostLimitExceeded`, as at its own limit). A group started
by a run that is itself in a group charges that group too, so a grandchild's spending counts
against every budget above it as it happens.
"""

from __future__ import annotations

from steadyloop.errors import CostLimitExceeded
from steadyloop.limits import Stop

__all__ = ["CostShare"]


class CostShare:
    """`limit` dollars that the runs holding this share spend together; `outer`: the share
    the run that made this one spends from, charged alongside."""

    __slots__ = ("limit", "outer", "spent")

    def __init__(self, limit: float, outer: CostShare | None = None) -> None:
        self.limit = limit
        self.outer = outer
        self.spent = 0.0

    def charge(self, cost: float | None) -> None:
        """Counts what one model call of a run of the group cost (None: not priced)."""
        if not cost:
            return
        share: CostShare | None = self
        while share is not None:
            share.spent += cost
            share = share.outer

    @property
    def left(self) -> float:
        """What the group may still spend: the least left here or in any share above."""
        left = self.limit - self.spent
        return left if self.outer is None else min(left, self.outer.left)

    def reached(self) -> Stop | None:
        """The cost limit, once this group (or one above it) has spent its budget."""
        share: CostShare | None = self
        while share is not None:
            if share.spent >= share.limit:
                return (
                    CostLimitExceeded,
                    f"cost limit reached: the sub-agent calls running together have cost "
                    f"${share.spent:.4f}, all their caller had left (${share.limit:g})",
                )
            share = share.outer
        return None

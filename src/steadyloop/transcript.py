"""The append-only transcript, the model's view of it, and where compaction may cut.

Nothing appended is ever changed or removed. Compaction appends a `Summary`; the model's view is
derived from the entries: the head (the first user message), the latest summary's note, and every
conversation message after the ones it replaced. A summary's `replaced` counts conversation
messages (summaries excluded) after the head, so the view can be rebuilt from the entries alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from steadyloop.limits import TokenEstimator
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Summary,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = ["Transcript", "calls_answered"]


class Transcript:
    """An append-only list of messages plus the bookkeeping for the model's view and its size."""

    __slots__ = (
        "_call_ids",
        "_conversation",
        "_entries",
        "_entries_read",
        "_estimate",
        "_reported",
        "_since_report",
        "_summary",
        "_view_estimate",
    )

    def __init__(self, history: Iterable[Message], estimate: TokenEstimator) -> None:
        self._estimate = estimate
        self._entries: list[Message] = []
        # `entries` as last read, until the next append: every call of a turn that takes a
        # `RunContext` (or waits for a decision) reads it, and a copy each would add up.
        self._entries_read: tuple[Message, ...] | None = None
        self._conversation: list[Message] = []
        self._summary: Summary | None = None
        self._call_ids: set[str] = set()
        self._view_estimate = 0
        self._reported: int | None = None
        self._since_report = 0
        for message in history:
            self.append(message)

    @property
    def entries(self) -> tuple[Message, ...]:
        """Everything, in order: history, this run's messages and any summaries."""
        read = self._entries_read
        if read is None:
            read = self._entries_read = tuple(self._entries)
        return read

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, message: Message) -> None:
        """Adds one entry; a `Summary` changes the view, anything else extends it."""
        self._entries.append(message)
        self._entries_read = None
        if isinstance(message, Summary):
            self._apply_summary(message)
            return
        self._conversation.append(message)
        cost = self._estimate(message)
        self._view_estimate += cost
        if isinstance(message, AssistantMessage):
            call_ids = self._call_ids
            for call in message.tool_calls:
                call_ids.add(call.id)
            usage = message.usage
            if usage is not None and usage.input_tokens > 0:
                self._reported = usage.input_tokens + usage.output_tokens
                self._since_report = 0
                return
        self._since_report += cost

    def view(self) -> tuple[Message, ...]:
        """The messages the model is sent: head, summary note, then the recent conversation."""
        if self._summary is None:
            return tuple(self._conversation)
        head = self._head_length()
        start = head + self._summary.replaced
        return (*self._conversation[:head], self._summary, *self._conversation[start:])

    def context_tokens(self, fixed: int) -> int:
        """The size of the next request: the provider's last count plus estimates since.

        `fixed` is the estimate for instructions and tool definitions, used only while no
        provider count covers the current view.
        """
        if self._reported is not None:
            return self._reported + self._since_report
        return fixed + self._view_estimate

    def with_unique_call_ids(self, reply: AssistantMessage) -> AssistantMessage:
        """`reply` with empty ids, and ids already used in this transcript, made unique."""
        used = self._call_ids
        fresh: set[str] = set()  # this reply's ids so far
        fixed: list[ToolCall] = []
        changed = False
        for index, call in enumerate(reply.tool_calls):
            call_id = call.id or f"call_{len(used) + index}"
            if call_id in used or call_id in fresh:
                suffix = 2
                while f"{call_id}_{suffix}" in used or f"{call_id}_{suffix}" in fresh:
                    suffix += 1
                call_id = f"{call_id}_{suffix}"
            fresh.add(call_id)
            if call_id != call.id:
                changed = True
                call = ToolCall(call_id, call.name, call.arguments)
            fixed.append(call)
        if not changed:
            return reply
        # `native` stays: each adapter decides whether a reply whose ids changed can still go
        # back as received (Chat sends the new ids with the reply's extras; Anthropic, whose
        # blocks name the old ids, sends it as canonical parts).
        return replace(reply, tool_calls=tuple(fixed))

    def open_calls(self) -> tuple[ToolCall, ...]:
        """The calls of the last reply that have no result yet, when that reply is followed by
        nothing but results (calls left open earlier are paired at the wire by the adapters)."""
        entries = self._entries
        tail = len(entries)
        while tail and isinstance(entries[tail - 1], ToolResult):
            tail -= 1
        last = entries[tail - 1] if tail else None
        if not isinstance(last, AssistantMessage):
            return ()
        answered = {m.call_id for m in entries[tail:] if isinstance(m, ToolResult)}
        return tuple(c for c in last.tool_calls if c.id not in answered)

    def compaction_cut(self, keep_recent: int) -> int | None:
        """Where the kept tail would start (a conversation index), or None if nothing can go.

        The tail keeps at least `keep_recent` messages and never starts with a tool result:
        the cut moves earlier to the reply that made the calls, so no pair is split.
        """
        start = self._head_length() + (self._summary.replaced if self._summary else 0)
        cut = len(self._conversation) - keep_recent
        while cut > start and isinstance(self._conversation[cut], ToolResult):
            cut -= 1
        return cut if cut > start else None

    def to_summarise(self, cut: int) -> tuple[Message, ...]:
        """The part of the view a summary made at `cut` stands for (earlier summary included)."""
        head = self._head_length()
        if self._summary is None:
            return tuple(self._conversation[head:cut])
        start = head + self._summary.replaced
        return (self._summary, *self._conversation[start:cut])

    def summary_for(self, cut: int, text: str) -> Summary:
        """The entry to append for a summary `text` of everything before `cut`."""
        return Summary(text=text, replaced=cut - self._head_length())

    def _head_length(self) -> int:
        conversation = self._conversation
        return 1 if conversation and isinstance(conversation[0], UserMessage) else 0

    def _apply_summary(self, summary: Summary) -> None:
        if summary.replaced > len(self._conversation) - self._head_length():
            raise ValueError(
                f"summary replaces {summary.replaced} messages but only "
                f"{len(self._conversation)} are in the conversation"
            )
        self._summary = summary
        self._reported = None
        self._since_report = 0
        self._view_estimate = sum(self._estimate(m) for m in self.view())


def calls_answered(messages: Sequence[Message]) -> bool:
    """True when every tool call in `messages` is answered, once, in order, right after it."""
    pending: list[str] = []
    for message in messages:
        if isinstance(message, ToolResult):
            if not pending or pending[0] != message.call_id:
                return False
            pending.pop(0)
            continue
        if pending:
            return False
        if isinstance(message, AssistantMessage):
            pending = [call.id for call in message.tool_calls]
    return not pending

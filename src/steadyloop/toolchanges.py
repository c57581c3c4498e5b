"""Tool lists that change while runs go on: what each run offers from each toolset, and what
changed since.

A toolset (an MCP server) that says its tools changed bumps its `revision`. Before each model
call a run compares the revisions it saw with the toolsets' own (no work at all while they are
equal), asks a changed toolset for its tools again, and offers the new list from that request
on; a `ToolsChanged` event says what changed. The calls of one reply always run against the
tools offered when it was made: nothing changes mid-turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from steadyloop.events import ToolsChanged
from steadyloop.tools import Tool, Toolset

__all__ = ["Listing", "ToolWatch", "list_toolsets"]

# A new tool that clashes with another is left out, said where MCP servers' problems are said.
logger = logging.getLogger("steadyloop.mcp")


@dataclass(frozen=True, slots=True)
class Listing:
    """The tools a run offers from `toolset`, as listed at `revision`."""

    toolset: Toolset
    revision: int
    tools: tuple[Tool, ...]


async def list_toolsets(toolsets: Sequence[Toolset]) -> tuple[Listing, ...]:
    """Each toolset's tools (starting it if needed), with the revision read before listing: a
    change said while the list is on its way is listed again at the next check."""
    revisions = [toolset.revision for toolset in toolsets]
    if len(toolsets) == 1:  # nothing to start alongside: no task for it
        started = [await toolsets[0].tools()]
    else:
        started = await asyncio.gather(*(toolset.tools() for toolset in toolsets))
    return tuple(
        Listing(toolset, revision, tuple(tools))
        for toolset, revision, tools in zip(toolsets, revisions, started, strict=True)
    )


class ToolWatch:
    """The toolsets of one run and the tools it offers from each."""

    def __init__(self, listings: Sequence[Listing]) -> None:
        self.listings = list(listings)

    def stale(self) -> bool:
        """True when a toolset said its tools changed since this run last listed them."""
        return any(listing.toolset.revision != listing.revision for listing in self.listings)

    async def refresh(
        self, offered: Mapping[str, Tool]
    ) -> tuple[dict[str, Tool], list[ToolsChanged]]:
        """Lists every changed toolset again: the tools to offer now (`offered` with each
        changed toolset's old tools replaced by its new ones) and one event per toolset whose
        list really changed. A new tool named like another tool is left out."""
        tools = dict(offered)
        events: list[ToolsChanged] = []
        for index, old in enumerate(self.listings):
            toolset = old.toolset
            if toolset.revision == old.revision:
                continue
            revision = toolset.revision
            listed = await toolset.tools()
            for tool in old.tools:
                tools.pop(tool.name, None)
            kept: list[Tool] = []
            for tool in listed:
                if tool.name in tools:
                    logger.warning(
                        "%s now offers a tool named %r, like another tool of the agent: it "
                        "is left out",
                        _source(toolset),
                        tool.name,
                    )
                    continue
                tools[tool.name] = tool
                kept.append(tool)
            self.listings[index] = Listing(toolset, revision, tuple(kept))
            event = _difference(_source(toolset), old.tools, kept)
            if event is not None:
                events.append(event)
        return tools, events


def _difference(source: str, old: Sequence[Tool], new: Sequence[Tool]) -> ToolsChanged | None:
    """What changed between two lists of one toolset; None when nothing did."""
    before = {tool.name: tool.spec for tool in old}
    after = {tool.name: tool.spec for tool in new}
    added = tuple(name for name in after if name not in before)
    removed = tuple(name for name in before if name not in after)
    changed = tuple(name for name in after if name in before and after[name] != before[name])
    if not (added or removed or changed):
        return None
    return ToolsChanged(source, added, removed, changed, tuple(after))


def _source(toolset: Toolset) -> str:
    """How events name a toolset: its `label` (an MCP server's command line or URL)."""
    label = getattr(toolset, "label", None)
    return label if isinstance(label, str) else type(toolset).__name__

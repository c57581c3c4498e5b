"""`Toolbox`: an agent's tools made ready for each run.

A run gets a dispatcher with every tool it may call: the agent's own, those of its toolsets
(MCP servers start on the first run that needs them) and the run's `final_answer`, each call
wrapped in the run's effects. A run of an agent without toolsets that needs nothing of its own
(traced or not: the spans' hooks around calls are shared) gets the dispatcher made for the last
such run, while the settings are the same. The threads of sync tools are the toolbox's, shared
by every run of the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from steadyloop.dispatch import Dispatcher
from steadyloop.tools import Tool, Toolset, check_unique_names
from steadyloop.toolthreads import ToolThreads

if TYPE_CHECKING:
    from steadyloop.config import RunConfig
    from steadyloop.toolchanges import Listing, ToolWatch
    from steadyloop.tracing.spans import Tracing

__all__ = ["Toolbox"]


class Toolbox:
    """An agent's tools and toolsets, and the threads its sync tools run in."""

    def __init__(self, tools: Sequence[Tool], toolsets: Sequence[Toolset]) -> None:
        check_unique_names(tools)
        self._tools = tuple(tools)
        self._toolsets = tuple(toolsets)
        self._threads = ToolThreads()
        # The last dispatcher made without a typed answer, by what it was made of:
        # the next run with the same settings and the same tools listed gets it again.
        self._plain: tuple[tuple[Any, ...], Dispatcher] | None = None

    @property
    def has_toolsets(self) -> bool:
        """Whether a run must list toolsets' tools (`listed`) before it can start."""
        return bool(self._toolsets)

    async def listed(self) -> tuple[Listing, ...]:
        """What each toolset offers now (starting it on first use); () without toolsets."""
        if not self._toolsets:
            return ()
        from steadyloop.toolchanges import list_toolsets  # only agents with toolsets load it

        return await list_toolsets(self._toolsets)

    def for_run(
        self,
        config: RunConfig,
        tracing: Tracing | None = None,
        answer: Tool | None = None,
        listings: tuple[Listing, ...] = (),
    ) -> tuple[Dispatcher, ToolWatch | None]:
        """A dispatcher of every tool (the agent's, those `listings` list, and `answer` when
        given), each call run with `config`'s settings and effects (inside the run's spans when
        it is traced); and what the run offers from each toolset, to see their tools change
        (None without toolsets)."""
        plain = answer is None  # a typed answer's `final_answer` is the run's own tool
        # A traced run's calls go through its spans' hooks, the same for every run of the agent.
        effects = config.effects if tracing is None else tracing.around(config.effects)
        key: tuple[Any, ...] = (
            effects, config.tool_timeout, config.max_tool_output, config.backoff
        )  # fmt: skip
        listed: tuple[Tool, ...] = ()
        watch = None
        if listings:
            from steadyloop.toolchanges import ToolWatch

            listed = tuple(tool for listing in listings for tool in listing.tools)
            key += listed
            watch = ToolWatch(listings)
        if plain and self._plain is not None and self._plain[0] == key:
            return self._plain[1], watch
        tools = (*self._tools, *listed)
        tools = tools if answer is None else (*tools, answer)
        check_unique_names(tools)
        dispatcher = Dispatcher(
            {t.name: t for t in tools},
            tool_timeout=config.tool_timeout,
            max_output=config.max_tool_output,
            backoff=config.backoff,
            executor=self._threads.get,
            effects=effects,
        )
        if plain:
            self._plain = (key, dispatcher)
        return dispatcher, watch

    async def aclose(self) -> None:
        """Stops the toolsets (MCP servers) and the threads of sync tools."""
        for toolset in self._toolsets:
            await toolset.aclose()
        self._threads.shutdown()

"""The threads sync tools run in: one pool per agent, with no cap."""

from __future__ import annotations

import sys
from concurrent.futures import Executor

__all__ = ["ToolThreads"]


class ToolThreads:
    """The agent's threads for sync tools, started on first use, with no cap: every sync call
    in flight, of all concurrent runs, starts at once instead of queueing behind others. The
    pool starts a thread only when none is idle, so it grows to the most calls that were ever
    in flight together.

    Its own object, so that the dispatcher holds no reference back to the agent: an agent
    nobody holds is freed at once (closing its run log), not at the next garbage collection.
    """

    def __init__(self) -> None:
        self._executor: Executor | None = None

    def get(self) -> Executor:
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor  # on the first sync call only

            self._executor = ThreadPoolExecutor(sys.maxsize, thread_name_prefix="steadyloop-tool")
        return self._executor

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

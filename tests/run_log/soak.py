"""Many logged runs with transient faults in one process; prints threads, files and memory.

    python soak.py STORE RUNS

Every run meets a retryable provider error before its first reply and a tool whose first attempt
fails with a `ConnectionError`; each run has a fresh `Agent` that is never closed (the way
scripts and notebooks use them), every other one opening the log itself. The figures are taken
after a warm-up of a tenth of the runs and at the end.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, ModelError, ToolCall, UserMessage, tool
from steadyloop.retry import Backoff
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec


def figures() -> dict[str, int]:
    """Threads, open files and resident memory, once the threads of agents just freed are gone
    (a freed thread pool's idle threads end soon after it, not at once)."""
    deadline = time.monotonic() + 5
    while threading.active_count() > 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return {
        "threads": threading.active_count(),
        "files": len(os.listdir("/proc/self/fd")),
        "rss_kb": pages * os.sysconf("SC_PAGE_SIZE") // 1024,
    }


def main(store_path: Path, runs: int) -> None:
    attempts: dict[str, int] = {}

    def fail_first(key: str) -> str:
        attempts[key] = attempts.get(key, 0) + 1
        if attempts[key] == 1:
            raise ConnectionError("connection reset")
        return f"ok {key}"

    @tool(retries=2)
    def flaky(key: str) -> str:
        """Fails with a connection error on its first attempt for each key."""
        return fail_first(key)

    @tool(retries=2)
    async def flaky_async(key: str) -> str:
        """The same, as a coroutine."""
        return fail_first(f"async {key}")

    overloaded: set[str] = set()

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        """Overloaded at each run's first request; then both flaky tools, then done."""
        prompt = messages[0]
        assert isinstance(prompt, UserMessage)
        if len(messages) > 1:
            return AssistantMessage("done")
        if prompt.text not in overloaded:
            overloaded.add(prompt.text)
            raise ModelError("overloaded", retryable=True)
        arguments = json.dumps({"key": prompt.text})
        return AssistantMessage(
            tool_calls=(ToolCall("a", "flaky", arguments), ToolCall("b", "flaky_async", arguments))
        )

    shared = RunStore(store_path)
    samples = []
    for number in range(runs):
        model = FunctionModel(reply)
        # Odd runs: an agent that opens the log itself; even ones share the caller's store.
        store = store_path if number % 2 else shared
        agent = Agent(model, tools=[flaky, flaky_async], store=store, backoff=Backoff.none())
        assert agent.run_sync(f"run {number}").output == "done"
        if number + 1 in (runs // 10, runs):
            del agent  # only the shared store's writer thread is left beside the main thread
            samples.append(figures())
    shared.close()
    print(json.dumps({"warm": samples[0], "end": samples[1]}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))

"""One turn of a session in a process of its own, for tests that overlap or kill sessions.

    python session_turn.py STORE SESSION PROMPT FOLDER MODE

The model answers `answer to PROMPT`, after noting what it read in FOLDER/PROMPT.seen (one
text a line). MODE says what else happens:

- `hold`: the model touches FOLDER/PROMPT.in-model, then waits until FOLDER/release exists.
- `answer`: runs to the end.
- `kill`: the turn asks for one `note` tool call, which kills its own process (SIGKILL).
- `resume-latest`: resumes the session's latest run instead of running a turn.
The run id is printed when the turn ends.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult, UserMessage, tool
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec


def main(store: str, session: str, prompt: str, folder: Path, mode: str) -> None:
    @tool(idempotent=True)
    def note(text: str) -> str:
        """Notes a text."""
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"noted {text}"

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        asked = [m.text for m in messages if isinstance(m, UserMessage)][-1]
        seen = [
            m.text for m in messages if isinstance(m, UserMessage | AssistantMessage) and m.text
        ]
        (folder / f"{asked}.seen").write_text("\n".join(seen))
        if mode == "hold":
            (folder / f"{asked}.in-model").touch()
            while not (folder / "release").exists():
                time.sleep(0.01)
        if mode in ("kill", "resume-latest") and not isinstance(messages[-1], ToolResult):
            return AssistantMessage(tool_calls=(ToolCall("n1", "note", '{"text": "x"}'),))
        return AssistantMessage(f"answer to {asked}")

    agent = Agent(FunctionModel(reply), tools=[note], store=store)
    if mode == "resume-latest":
        assert agent.store is not None
        result = asyncio.run(agent.resume(agent.store.session(session)[-1].id))
    else:
        result = agent.run_sync(prompt, session=session)
    print(result.run_id)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5])

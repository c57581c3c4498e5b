"""A logged run against the Gemini stand-in, killed between turns, for the resume tests.

    python gemini_killed_run.py STORE BASE_URL MODEL STREAM

The run asks for `lookup`, which kills its own process (SIGKILL) the moment it starts: the
model's reply, signature and all, is in the log; the next request was never sent. STREAM is
"stream" to stream the run, anything else not to.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from provider_google.gemini_fake_server import API_KEY
from steadyloop import Agent, tool
from steadyloop.models.google import GoogleModel


async def main(store: str, base_url: str, model_name: str, stream: str) -> None:
    @tool(idempotent=True)
    def lookup(day: str) -> str:
        """Looks up a day."""
        os.kill(os.getpid(), signal.SIGKILL)
        return day

    model = GoogleModel(model_name, base_url=base_url, api_key=API_KEY)
    agent = Agent(model, tools=[lookup], store=store)
    if stream == "stream":
        async for _ in agent.stream("is monday free?"):
            pass
    else:
        await agent.run("is monday free?")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

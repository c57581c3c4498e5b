"""A logged run against an OpenAI stand-in, killed between turns, for the resume tests.

    python openai_killed_run.py STORE BASE_URL API MODEL

API is "chat" or "responses". The run asks for `lookup`, which kills its own process (SIGKILL)
the moment it starts: the model's reply is in the log, the next request was never sent.
"""

from __future__ import annotations

import os
import signal
import sys

from steadyloop import Agent, tool
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel


def main(store: str, base_url: str, api: str, model_name: str) -> None:
    @tool(idempotent=True)
    def lookup(day: str) -> str:
        """Looks up a day."""
        os.kill(os.getpid(), signal.SIGKILL)
        return day

    cls: type[OpenAIModel] = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls(model_name, base_url=base_url, api_key="sk-test")
    Agent(model, tools=[lookup], store=store).run_sync("is monday free?")


if __name__ == "__main__":
    main(*sys.argv[1:5])

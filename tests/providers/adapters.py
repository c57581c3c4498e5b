"""Each provider adapter with its fake server, behind one face, so one test holds every
adapter to the same contract: the OpenAI Chat Completions and Responses adapters against
`FakeOpenAI`, the Anthropic adapter against `FakeAnthropic`, the Gemini adapter against
`FakeGemini`.

An `Adapter` makes the model under test (talking to its fake with a valid key) and scripts
its fake's next answers in the adapter's own wire shapes: a reply, a server error, a rate
limit, a stream cut mid-way, a reply that drips or never comes, a 200 that is not a reply.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from provider_anthropic import anthropic_fake_server as claude
from provider_google import gemini_fake_server as gemini
from provider_openai import openai_fake_server as openai
from steadyloop import Agent
from steadyloop.models.base import Model
from support.http import closed_port

Scripted = Any  # what a fake answers: its own reply, error or misbehaviour types


async def ask(agent: Agent, streaming: bool) -> str:
    """One run, as a whole or streamed; its answer."""
    if not streaming:
        return (await agent.run("hi")).output
    async for event in agent.stream("hi"):
        result = getattr(event, "result", None)
        if result is not None:
            return str(result.output)
    raise AssertionError("the stream ended without a result")


class Adapter(ABC):
    """One adapter and its fake server (started for the test, stopped after it)."""

    key_variable: str  # the environment variable a rejected key's error names
    unavailable_text: str  # what the fake's 5xx says
    rejected_key_text: str  # what the fake says of a wrong key

    @abstractmethod
    def model(self, **options: Any) -> Model:
        """The adapter under test, talking to the fake with its key (plus `options`)."""

    @abstractmethod
    def queue(self, *answers: Scripted) -> None:
        """The fake's next answers, in order."""

    @property
    @abstractmethod
    def requests(self) -> int:
        """How many requests the fake received."""

    @abstractmethod
    def answer(self, text: str) -> Scripted:
        """A plain text reply."""

    @abstractmethod
    def unavailable(self, headers: Mapping[str, str] = {}) -> Scripted:
        """A retryable server error (503, or Anthropic's 529 overloaded)."""

    @abstractmethod
    def rate_limited(self, headers: Mapping[str, str] = {}) -> Scripted:
        """A 429 rate limit (retryable)."""

    @abstractmethod
    def cut_stream(self) -> Scripted:
        """A 200 stream whose connection drops before the reply is whole."""

    @abstractmethod
    def drip(self, seconds: float) -> Scripted:
        """A 200 whose body trickles (keep-alives) for `seconds` before the reply."""

    @abstractmethod
    def stall(self, seconds: float) -> Scripted:
        """No answer at all for `seconds`."""

    @abstractmethod
    def page(self, html: str) -> Scripted:
        """A 200 with an HTML page instead of a reply (a proxy's)."""

    @abstractmethod
    def not_a_reply(self, data: dict[str, Any]) -> Scripted:
        """A 200 with JSON that is not a reply (a gateway's status)."""

    @abstractmethod
    def with_wrong_key(self, **options: Any) -> Model:
        """The adapter under test with a key the fake rejects (401)."""

    @abstractmethod
    def unreachable(self) -> Model:
        """The adapter under test pointed at a port of 127.0.0.1 nothing listens on."""


class OpenAIAdapter(Adapter):
    """`OpenAIChatModel` or `OpenAIResponsesModel` against `FakeOpenAI`."""

    key_variable = "OPENAI_API_KEY"
    unavailable_text = "Service Unavailable"
    rejected_key_text = "Incorrect API key provided"

    def __init__(self, fake: openai.FakeOpenAI, api: str) -> None:
        self.fake, self.api = fake, api

    def model(self, **options: Any) -> Model:
        from steadyloop.models.openai_chat import OpenAIChatModel
        from steadyloop.models.openai_responses import OpenAIResponsesModel

        options.setdefault("api_key", self.fake.api_key)
        options.setdefault("base_url", self.fake.base_url)
        cls = OpenAIChatModel if self.api == "chat" else OpenAIResponsesModel
        return cls("gpt-test", **options)

    def queue(self, *answers: Scripted) -> None:
        self.fake.queue(*answers)

    @property
    def requests(self) -> int:
        return len(self.fake.requests)

    def answer(self, text: str) -> Scripted:
        return openai.Reply(text=text)

    def unavailable(self, headers: Mapping[str, str] = {}) -> Scripted:
        body = {"error": {"message": self.unavailable_text, "type": "server_error"}}
        return openai.Fail(503, body, headers)

    def rate_limited(self, headers: Mapping[str, str] = {}) -> Scripted:
        return openai.Fail(429, openai.rate_limit_body(), headers)

    def cut_stream(self) -> Scripted:
        return openai.Drop()

    def drip(self, seconds: float) -> Scripted:
        return openai.Drip(seconds)

    def stall(self, seconds: float) -> Scripted:
        return openai.Stall(seconds)

    def page(self, html: str) -> Scripted:
        return openai.Html(html)

    def not_a_reply(self, data: dict[str, Any]) -> Scripted:
        return openai.Fail(200, data)

    def with_wrong_key(self, **options: Any) -> Model:
        return self.model(api_key="sk-wrong-key", **options)

    def unreachable(self) -> Model:
        return self.model(base_url=f"http://127.0.0.1:{closed_port()}/v1")


class AnthropicAdapter(Adapter):
    """`AnthropicModel` against `FakeAnthropic`."""

    key_variable = "ANTHROPIC_API_KEY"
    unavailable_text = "Overloaded"
    rejected_key_text = "invalid x-api-key"

    def __init__(self, fake: claude.FakeAnthropic) -> None:
        self.fake = fake

    def model(self, **options: Any) -> Model:
        return claude.model_for(self.fake, **options)

    def queue(self, *answers: Scripted) -> None:
        self.fake.replies.extend(answers)

    @property
    def requests(self) -> int:
        return len(self.fake.requests)

    def answer(self, text: str) -> Scripted:
        return claude.message(claude.text(text))

    def unavailable(self, headers: Mapping[str, str] = {}) -> Scripted:
        return claude.error(529, "overloaded_error", self.unavailable_text, headers)

    def rate_limited(self, headers: Mapping[str, str] = {}) -> Scripted:
        return claude.error(429, "rate_limit_error", "slow down", headers)

    def cut_stream(self) -> Scripted:
        whole = claude.message(claude.text("a whole answer")).message or {}
        return claude.Reply(events=claude.stream_events(whole)[:4], broken=True)

    def drip(self, seconds: float) -> Scripted:
        return claude.Reply(message=claude.message(claude.text("too late")).message, drip=seconds)

    def stall(self, seconds: float) -> Scripted:
        return claude.Reply(message=claude.message(claude.text("too late")).message, delay=seconds)

    def page(self, html: str) -> Scripted:
        return claude.Reply(page=html)

    def not_a_reply(self, data: dict[str, Any]) -> Scripted:
        return claude.Reply(message=data)

    def with_wrong_key(self, **options: Any) -> Model:
        self.queue(claude.error(401, "authentication_error", self.rejected_key_text))
        return self.model(**options)

    def unreachable(self) -> Model:
        from steadyloop.models.anthropic import AnthropicModel

        return AnthropicModel(
            "claude-fake", base_url=f"http://127.0.0.1:{closed_port()}", api_key="k"
        )


class GoogleAdapter(Adapter):
    """`GoogleModel` against `FakeGemini`."""

    key_variable = "GEMINI_API_KEY"
    unavailable_text = "The model is overloaded"
    rejected_key_text = gemini.KEY_TEXT

    def __init__(self, fake: gemini.FakeGemini) -> None:
        self.fake = fake

    def model(self, **options: Any) -> Model:
        model: Model = gemini.model_for(self.fake, **options)
        return model

    def queue(self, *answers: Scripted) -> None:
        self.fake.queue(*answers)

    @property
    def requests(self) -> int:
        return len(self.fake.requests)

    def answer(self, text: str) -> Scripted:
        return gemini.reply(gemini.text(text))

    def unavailable(self, headers: Mapping[str, str] = {}) -> Scripted:
        return gemini.unavailable(headers)

    def rate_limited(self, headers: Mapping[str, str] = {}) -> Scripted:
        return gemini.rate_limited(headers=headers)

    def cut_stream(self) -> Scripted:
        return gemini.reply(gemini.text("a whole answer"), broken=True)

    def drip(self, seconds: float) -> Scripted:
        return gemini.reply(gemini.text("too late"), drip=seconds)

    def stall(self, seconds: float) -> Scripted:
        return gemini.reply(gemini.text("too late"), delay=seconds)

    def page(self, html: str) -> Scripted:
        return gemini.Reply(page=html)

    def not_a_reply(self, data: dict[str, Any]) -> Scripted:
        return gemini.Reply(raw=data)

    def with_wrong_key(self, **options: Any) -> Model:
        return self.model(api_key="wrong-key", **options)

    def unreachable(self) -> Model:
        return self.model(base_url=f"http://127.0.0.1:{closed_port()}")

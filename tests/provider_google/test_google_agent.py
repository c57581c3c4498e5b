"""Gemini through the official `google-genai` SDK against a stand-in as strict as the API.

The stand-in refuses what Gemini refuses, with Google's texts: a call turn out of place,
function responses that do not match the calls, a Gemini 3 call without its thought
signature, a signature it did not issue for that model. A run that succeeds proves every
reply went back as Gemini requires: verbatim to the same model, rebuilt with the placeholder
signature elsewhere — streamed or not, resumed from the log, exported and imported, and
through a JSON round trip of the transcript.
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from provider_google import gemini_fake_server as gemini
from provider_google.gemini_fake_server import FakeGemini
from steadyloop import Agent, ConfigError, Document, Image, tool
from steadyloop.errors import ContextLimitExceeded, ContextWindowExceeded, ModelError
from steadyloop.events import RunFinished
from steadyloop.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    UserMessage,
    message_from_dict,
)
from steadyloop.models import resolve_model
from steadyloop.models.base import ModelRequest
from steadyloop.replay import replay_run
from steadyloop.result import RunResult
from steadyloop.retry import Backoff
from steadyloop.store import RunStore
from support.processes import python_env

KILLED_RUN = Path(__file__).resolve().parent / "gemini_killed_run.py"
PLACEHOLDER = base64.b64encode(b"skip_thought_signature_validator").decode()
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@tool(idempotent=True)
def lookup(day: str) -> str:
    """Looks up a day in the calendar."""
    return f"{day}: free"


async def run(agent: Agent[Any], prompt: str, streaming: bool, **options: Any) -> RunResult[Any]:
    if not streaming:
        return await agent.run(prompt, **options)
    async for event in agent.stream(prompt, **options):
        if isinstance(event, RunFinished):
            result: RunResult[Any] = event.result
            return result
    raise AssertionError("the stream ended without a result")


def tool_loop() -> list[gemini.Reply]:
    """Two turns of calls (the first parallel, with a thought), then the answer."""
    return [
        gemini.reply(
            gemini.thought("Two days to check."),
            gemini.call("lookup", {"day": "mon"}),
            gemini.call("lookup", {"day": "tue"}),
            usage={"thoughtsTokenCount": 30, "cachedContentTokenCount": 4},
        ),
        gemini.reply(gemini.text("And Wednesday. "), gemini.call("lookup", {"day": "wed"})),
        gemini.reply(gemini.text("Monday, Tuesday and Wednesday are free.")),
    ]


def signatures(body: dict[str, Any]) -> list[str]:
    return [
        part["thoughtSignature"]
        for content in body["contents"]
        for part in content["parts"]
        if "thoughtSignature" in part
    ]


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_gemini_3_tool_loop_sends_each_signature_back_byte_for_byte(
    streaming: bool,
) -> None:
    with FakeGemini(tool_loop()) as fake:
        async with Agent(gemini.model_for(fake), tools=[lookup], model_retries=0) as agent:
            result = await run(agent, "Which days are free?", streaming)
    assert fake.rejections == []
    assert result.output == "Monday, Tuesday and Wednesday are free."
    first, _second, last = (m for m in result.messages if isinstance(m, AssistantMessage))
    assert [c.arguments for c in first.tool_calls] == ['{"day": "mon"}', '{"day": "tue"}']
    assert first.reasoning_text == "Two days to check."
    assert first.stop_reason == "tool_use"
    assert last.stop_reason == "end_turn"
    assert first.model == "google:gemini-3-flash-preview"
    # parallel results: one content, in call order, as many as the calls
    turns = fake.requests[1].body["contents"]
    assert [t["role"] for t in turns] == ["user", "model", "user"]
    responses = [p["functionResponse"] for p in turns[2]["parts"]]
    assert [r["response"] for r in responses] == [{"output": "mon: free"}, {"output": "tue: free"}]
    # the model's own parts as received: thought, signed first call, unsigned second call
    assert first.native is not None
    assert turns[1]["parts"] == first.native.content
    assert "thoughtSignature" not in turns[1]["parts"][2]
    sent = signatures(fake.requests[2].body)
    issued = {base64.b64encode(s).decode() for s in fake.issued["gemini-3-flash-preview"]}
    assert len(sent) == 2
    assert set(sent) <= issued
    # usage: thinking billed as output, cached tokens part of the input
    assert first.usage is not None
    assert first.usage.output_tokens == 7 + 30
    assert first.usage.cache_read_tokens == 4
    assert result.usage.requests == 3


async def test_streamed_replies_keep_the_same_parts_as_plain_ones() -> None:
    kept: list[list[Any]] = []
    for streaming in (False, True):
        with FakeGemini(tool_loop()) as fake:
            async with Agent(gemini.model_for(fake), tools=[lookup]) as agent:
                result = await run(agent, "Which days are free?", streaming)
        kept.append(
            [
                [{k: v for k, v in p.items() if k != "thoughtSignature"} for p in m.native.content]
                for m in result.messages
                if isinstance(m, AssistantMessage) and m.native is not None
            ]
        )
    assert kept[0] == kept[1]
    assert kept[0][-1] == [{"text": "Monday, Tuesday and Wednesday are free."}]


async def test_a_history_through_json_is_sent_exactly_as_the_first_time() -> None:
    with FakeGemini(tool_loop()) as fake:
        async with Agent(gemini.model_for(fake), tools=[lookup]) as agent:
            first = await agent.run("Which days are free?")
            history: list[Message] = [
                message_from_dict(json.loads(json.dumps(m.to_dict()))) for m in first.messages
            ]
            fake.queue(
                gemini.reply(gemini.call("lookup", {"day": "thu"})),
                gemini.reply(gemini.text("Yes.")),
            )
            await agent.run("And Thursday?", history=history)
    assert fake.rejections == []
    before = fake.requests[2].body["contents"]
    after = fake.requests[3].body["contents"]
    assert after[: len(before)] == before


async def test_calls_another_model_made_carry_the_placeholder_on_the_first_call_only() -> None:
    """A hand-built history (another provider's replies) reaches Gemini 3 rebuilt, accepted."""
    history: list[Message] = [
        UserMessage("Check two days."),
        AssistantMessage(
            "Checking.",
            tool_calls=(
                ToolCall("toolu_01", "lookup", '{"day": "mon"}'),
                ToolCall("toolu_02", "lookup", {"day": "tue"}),
            ),
        ),
        ToolResult("toolu_01", "lookup", "mon: free"),
        ToolResult("toolu_02", "lookup", "tue: busy", is_error=True),
        AssistantMessage("Monday is free."),
    ]
    with FakeGemini([gemini.reply(gemini.text("Yes, Monday."))]) as fake:
        async with Agent(gemini.model_for(fake), tools=[lookup]) as agent:
            result = await agent.run("Sure?", history=history)
    assert fake.rejections == []
    assert result.output == "Yes, Monday."
    turns = fake.requests[0].body["contents"]
    calls = turns[1]["parts"]
    assert calls[0] == {"text": "Checking."}
    assert calls[1]["thoughtSignature"] == PLACEHOLDER
    assert "thoughtSignature" not in calls[2]
    assert [p["functionResponse"]["response"] for p in turns[2]["parts"]] == [
        {"output": "mon: free"},
        {"error": "tue: busy"},
    ]
    assert [t["role"] for t in turns] == ["user", "model", "user", "model", "user"]


async def test_signatures_of_another_gemini_model_never_reach_this_one() -> None:
    with FakeGemini(tool_loop()) as fake:
        async with Agent(gemini.model_for(fake), tools=[lookup]) as agent:
            first = await agent.run("Which days are free?")
        fake.queue(gemini.reply(gemini.text("Still free.")))
        other = gemini.model_for(fake, "gemini-3-pro-preview")
        async with Agent(other, tools=[lookup]) as agent:
            result = await agent.run("Sure?", history=first.messages)
    assert fake.rejections == []
    assert result.output == "Still free."
    assert set(signatures(fake.requests[-1].body)) == {PLACEHOLDER}


async def test_the_stand_in_refuses_a_gemini_3_call_without_its_signature() -> None:
    """The rule the tests above rely on holds: a canonical turn without a signature is refused."""
    body: dict[str, Any] = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [gemini.call("lookup", {"day": "mon"})]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "lookup", "response": {"output": "x"}}}],
            },
        ]
    }
    problem = gemini.validate(body, "gemini-3-flash-preview", {})
    assert problem is not None
    assert "missing a thought_signature" in problem
    assert gemini.validate(body, "gemini-2.5-flash", {}) is None
    body["contents"][2]["parts"].append(body["contents"][2]["parts"][0])
    assert gemini.validate(body, "gemini-2.5-flash", {}) == gemini.COUNT_TEXT


USER = {"role": "user", "parts": [{"text": "hi"}]}
SIGNED_CALL = {
    "role": "model",
    "parts": [{**gemini.call("lookup"), "thoughtSignature": PLACEHOLDER}],
}
ANSWER = {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {}}}]}


@pytest.mark.parametrize(
    ("contents", "problem"),
    [
        ([{"role": "assistant", "parts": [{"text": "x"}]}], gemini.ROLE_TEXT),
        (
            [USER, {"role": "model", "parts": [{"text": "x"}]}, SIGNED_CALL, ANSWER],
            gemini.CALL_TURN_TEXT,
        ),
        ([USER, ANSWER], gemini.RESPONSE_TURN_TEXT),
        ([USER, SIGNED_CALL, USER], gemini.COUNT_TEXT),
        (
            [
                USER,
                {"role": "model", "parts": [{**gemini.call("lookup"), "thoughtSignature": "c2ln"}]},
                ANSWER,
            ],
            gemini.CORRUPTED_TEXT,
        ),
        ([USER, SIGNED_CALL, ANSWER], None),
    ],
    ids=["role", "call-turn", "response-turn", "count", "corrupted", "valid"],
)
def test_the_stand_in_answers_a_broken_history_with_googles_text(
    contents: list[dict[str, Any]], problem: str | None
) -> None:
    assert gemini.validate({"contents": contents}, "gemini-3-flash-preview", {}) == problem


async def test_images_pdfs_and_text_documents_go_as_gemini_parts() -> None:
    prompt: list[str | Image | Document] = [
        "What is in these?",
        Image.from_bytes(PNG),
        Image.from_url("https://example.com/cat.png"),
        Document("application/pdf", base64.b64encode(b"%PDF-1.4 fake").decode(), "a.pdf"),
        Document("text/plain", base64.b64encode(b"plain notes").decode(), "notes.txt"),
    ]
    with FakeGemini([gemini.reply(gemini.text("A pixel."))]) as fake:
        async with Agent(gemini.model_for(fake)) as agent:
            await agent.run(prompt)
    parts = fake.requests[0].body["contents"][0]["parts"]
    assert parts[0] == {"text": "What is in these?"}
    assert parts[1] == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    }
    assert parts[2] == {
        "fileData": {"fileUri": "https://example.com/cat.png", "mimeType": "image/png"}
    }
    assert parts[3]["inlineData"]["mimeType"] == "application/pdf"
    assert parts[4] == {"text": "[document: notes.txt]\nplain notes"}


async def test_tools_go_as_plain_json_schema_and_instructions_as_the_system_instruction() -> None:
    @tool
    def book(day: str, rooms: list[str] | None = None) -> str:
        """Books a day."""
        return day

    with FakeGemini([gemini.reply(gemini.text("ok"))]) as fake:
        async with Agent(gemini.model_for(fake), tools=[book], instructions="Be brief.") as agent:
            await agent.run("hi")
    body = fake.requests[0].body
    assert fake.rejections == []
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert "parameters" not in declaration
    assert declaration["parametersJsonSchema"]["additionalProperties"] is False
    assert (
        gemini.validate(
            {
                **body,
                "tools": [
                    {
                        "functionDeclarations": [
                            {**declaration, "parameters": declaration["parametersJsonSchema"]}
                        ]
                    }
                ],
            },
            "gemini-3-flash-preview",
            {},
        )
        is not None
    )


# -- errors --------------------------------------------------------------------------------


async def test_a_rate_limit_waits_the_retry_delay_google_gives() -> None:
    with FakeGemini([gemini.rate_limited("26s", {"retry-after": "3"})]) as fake:
        async with Agent(gemini.model_for(fake), model_retries=0) as agent:
            with pytest.raises(ModelError) as info:
                await agent.run("hi")
    assert info.value.retryable
    assert info.value.status == 429
    assert info.value.retry_after == 26.0


async def test_a_context_overflow_is_a_context_window_error_with_the_limit() -> None:
    with FakeGemini(context_limit=5) as fake:
        async with Agent(gemini.model_for(fake)) as agent:
            with pytest.raises(ContextLimitExceeded):
                await agent.run("a prompt longer than five tokens of JSON")
    assert len(fake.requests) == 1
    with FakeGemini(context_limit=5) as fake:
        model = gemini.model_for(fake)
        with pytest.raises(ContextWindowExceeded) as info:
            await model.request(ModelRequest(None, (UserMessage("a long prompt indeed"),), ()))
        await model.aclose()
    assert info.value.limit == 5


async def test_a_rejected_key_is_a_config_error_naming_the_variable_and_is_not_retried() -> None:
    with FakeGemini() as fake:
        async with Agent(gemini.model_for(fake, api_key="wrong"), backoff=Backoff.none()) as agent:
            with pytest.raises(ConfigError, match="GEMINI_API_KEY") as info:
                await agent.run("hi")
    assert "API key not valid" in str(info.value)
    assert "wrong" not in str(info.value)
    assert len(fake.requests) == 1


async def test_an_unknown_model_is_a_config_error_naming_it() -> None:
    with FakeGemini(
        [gemini.error(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta")]
    ) as fake:
        async with Agent(gemini.model_for(fake, "gemini-9")) as agent:
            with pytest.raises(ConfigError, match="gemini-9"):
                await agent.run("hi")


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_safety_block_is_a_clear_error_that_is_not_retried(streaming: bool) -> None:
    rating = {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    blocked = gemini.reply(
        gemini.text("Here is"), finish="SAFETY", candidate={"safetyRatings": [rating]}
    )
    with FakeGemini([blocked]) as fake:
        async with Agent(gemini.model_for(fake), backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError, match="SAFETY: HARM_CATEGORY_DANGEROUS_CONTENT") as info:
                await run(agent, "hi", streaming)
    assert not info.value.retryable
    assert len(fake.requests) == 1


async def test_a_blocked_prompt_names_the_block_reason() -> None:
    feedback = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {}}
    with FakeGemini([gemini.Reply(raw=feedback)]) as fake:
        async with Agent(gemini.model_for(fake), backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError, match="PROHIBITED_CONTENT") as info:
                await agent.run("hi")
    assert not info.value.retryable
    assert len(fake.requests) == 1


async def test_a_malformed_call_is_sampled_again() -> None:
    replies = [gemini.reply(finish="MALFORMED_FUNCTION_CALL"), gemini.reply(gemini.text("fine"))]
    with FakeGemini(replies) as fake:
        async with Agent(gemini.model_for(fake), backoff=Backoff.none()) as agent:
            assert (await agent.run("hi")).output == "fine"
    assert len(fake.requests) == 2


async def test_a_cut_reply_reports_max_tokens() -> None:
    with FakeGemini([gemini.reply(gemini.text("Once upon"), finish="MAX_TOKENS")]) as fake:
        async with Agent(gemini.model_for(fake)) as agent:
            result = await agent.run("a story")
    assert result.messages[-1].stop_reason == "max_tokens"  # type: ignore[union-attr]


# -- settings and set-up -------------------------------------------------------------------


async def test_settings_are_generate_content_config_fields_on_the_wire() -> None:
    settings = {
        "temperature": 0,
        "maxOutputTokens": 256,
        "thinking_config": {"thinking_level": "low", "include_thoughts": True},
        "tool_config": {"function_calling_config": {"mode": "ANY"}},
    }
    replies = [gemini.reply(gemini.text("a")), gemini.reply(gemini.text("b"))]
    with FakeGemini(replies) as fake:
        model = gemini.model_for(fake, settings=settings)
        async with Agent(model, tools=[lookup]) as agent:
            await agent.run("hi")
        async with Agent(gemini.model_for(fake, settings=settings)) as agent:
            await agent.run("hi")
    with_tools, without = (r.body for r in fake.requests)
    generation = with_tools["generationConfig"]
    assert generation["temperature"] == 0
    assert generation["maxOutputTokens"] == 256
    assert generation["thinkingConfig"]["thinking_level"] == "LOW"
    assert with_tools["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert "toolConfig" not in without


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"temprature": 0.2}, "temprature"),
        ({"system_instruction": "x"}, "system_instruction"),
        ({"tools": []}, "tools"),
        ({"automaticFunctionCalling": {"disable": False}}, "automatic_function_calling"),
        ({"temperature": "hot"}, "temperature"),
    ],
)
def test_a_wrong_or_owned_setting_is_a_config_error_naming_it(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        resolve_model("google:gemini-3-flash-preview", settings=settings)


def test_set_on_the_command_line_names_a_wrong_field(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.cli import run_cli

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    code, _, err = run_cli(
        capsys, "run", "--model", "google:gemini-3-flash-preview", "--set", "temprature=0", "hi"
    )
    assert code != 0
    assert "temprature" in err
    assert "GenerateContentConfig" in err


def test_a_missing_key_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=r"GEMINI_API_KEY.*GOOGLE_API_KEY"):
        Agent("google:gemini-3-flash-preview")


def test_vertex_without_a_project_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(ConfigError, match="GOOGLE_CLOUD_PROJECT"):
        Agent("vertex:gemini-3-pro-preview")


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    for spec in ("google:gemini-3-flash-preview", "vertex:gemini-3-flash-preview"):
        with pytest.raises(ConfigError, match=r"steadyloop\[google\]"):
            Agent(spec)


def test_import_steadyloop_does_not_import_the_sdk() -> None:
    code = "import sys, steadyloop, steadyloop.models; print('google.genai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_vertex_sends_the_adc_token_to_the_project_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "adc.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "id",
                "client_secret": "secret",
                "refresh_token": "refresh",
                "token": "ya29.stand-in-token",
                "expiry": "2999-01-01T00:00:00Z",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    with FakeGemini([gemini.reply(gemini.text("hi from vertex"))]) as fake:
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", fake.url)
        async with Agent("vertex:gemini-3-flash-preview") as agent:
            result = await agent.run("hi")
    assert result.output == "hi from vertex"
    (request,) = fake.requests
    assert request.credential == "Bearer ya29.stand-in-token"
    assert request.path.startswith(
        "/v1beta1/projects/proj/locations/us-central1/publishers/google/models/"
        "gemini-3-flash-preview:generateContent"
    )


async def test_vertex_with_a_missing_credentials_file_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with FakeGemini([gemini.reply(gemini.text("never"))]) as fake:
        model = gemini.model_for(
            fake, vertex=True, api_key=None, project="proj", location="us-central1"
        )
        async with Agent(model, backoff=Backoff.none()) as agent:
            with pytest.raises(ConfigError, match="GOOGLE_APPLICATION_CREDENTIALS"):
                await agent.run("hi")
    assert fake.requests == []


# -- the run log ---------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_run_killed_between_turns_resumes_with_its_signature_and_exports(
    tmp_path: Path, streaming: bool
) -> None:
    """The process dies while the signed call runs; the resumed run sends the logged reply
    exactly as received and the stand-in accepts it. The run's export, imported into another
    log, equals it, and a replay finds no divergence."""
    store = tmp_path / "runs.db"
    with FakeGemini([gemini.reply(gemini.call("lookup", {"day": "mon"}))]) as fake:
        process = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, str(KILLED_RUN), str(store), fake.url, "gemini-3-flash-preview",
             "stream" if streaming else "plain"],
            capture_output=True, text=True, timeout=60, check=False, env=python_env(),
        )  # fmt: skip
        assert process.returncode == -signal.SIGKILL, process.stderr
        log = RunStore(store)
        (info,) = log.runs()
        logged = log.messages(info.id)[-1]
        assert isinstance(logged, AssistantMessage)
        assert logged.native is not None
        fake.queue(gemini.reply(gemini.text("Monday is free.")))
        agent = Agent(gemini.model_for(fake), tools=[lookup], store=log)
        result = await agent.resume(info.id)
        await agent.aclose()
    assert fake.rejections == []
    assert result.output == "Monday is free."
    assert fake.requests[-1].body["contents"][1]["parts"] == logged.native.content
    other = RunStore(tmp_path / "other.db")
    other.from_jsonl(list(log.to_jsonl(info.id)))
    assert other.messages(info.id) == log.messages(info.id)
    exported = other.messages(info.id)[1]
    assert isinstance(exported, AssistantMessage)
    assert exported.native == logged.native
    report = await replay_run(other, info.id, [lookup])
    assert report.divergence is None
    other.close()
    log.close()


async def test_an_imported_run_continues_on_gemini_with_its_signatures(tmp_path: Path) -> None:
    """A finished run, exported and imported into another log, is continued there: its own
    signed turns go back as made and the strict stand-in accepts them."""
    with FakeGemini(tool_loop()) as fake:
        async with Agent(gemini.model_for(fake), tools=[lookup], store=tmp_path / "a.db") as agent:
            first = await agent.run("Which days are free?")
        assert first.run_id is not None
        source = RunStore(tmp_path / "a.db")
        target = RunStore(tmp_path / "b.db")
        target.from_jsonl(list(source.to_jsonl(first.run_id)))
        history = target.messages(first.run_id)
        fake.queue(gemini.reply(gemini.text("All three.")))
        async with Agent(gemini.model_for(fake), tools=[lookup], store=target) as agent:
            result = await agent.run("Sure?", history=history)
        source.close()
        target.close()
    assert fake.rejections == []
    assert result.output == "All three."
    assert fake.requests[-1].body["contents"][:5] == fake.requests[2].body["contents"]


# -- the command line ----------------------------------------------------------------------


def test_the_cli_runs_gemini_through_the_sdks_base_url_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.cli import run_cli

    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path))
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with FakeGemini([gemini.reply(gemini.text("Hello from Gemini."))]) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", fake.api_key)
        code, out, err = run_cli(
            capsys, "run", "--model", "google:gemini-3-flash-preview",
            "--set", 'thinking_config={"thinking_level": "low"}', "Say hello",
        )  # fmt: skip
    assert code == 0, err
    assert "Hello from Gemini." in out
    (request,) = fake.requests
    assert request.body["generationConfig"]["thinkingConfig"] == {"thinking_level": "LOW"}

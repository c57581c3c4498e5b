"""S13: `steadyloop run --model PROVIDER:MODEL PROMPT`, from spawning it to its answer, beside a
minimal script making the same request with the provider's own SDK.

Both talk to a loopback stand-in of the provider's API: the test suite's fake servers
(`tests/provider_*/`), running in this process's threads, one scripted text reply per request.
Each side is a fresh interpreter (`sys.executable`), so its imports, its client's set-up and the
one HTTP round trip all count; the CLI runs with `--no-log` (the script keeps no log either).
Wall time from spawning to exit, and the CPU time the child used (user + system, from
`resource.getrusage(RUSAGE_CHILDREN)`). The two alternate, provider by provider, after one
warm-up start of each (it compiles the bytecode and fills the file cache).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common

TESTS = Path(__file__).resolve().parents[2] / "tests"
PROMPT = "Say done."
ANSWER = "done"

# The minimal script each SDK's documentation would suggest: one client, one request.
SDK_SCRIPTS = {
    "openai": """
import os, openai
client = openai.OpenAI()
reply = client.chat.completions.create(
    model=os.environ["MODEL"], messages=[{"role": "user", "content": os.environ["PROMPT"]}]
)
print(reply.choices[0].message.content)
""",
    "anthropic": """
import os, anthropic
client = anthropic.Anthropic()
reply = client.messages.create(
    model=os.environ["MODEL"], max_tokens=1024,
    messages=[{"role": "user", "content": os.environ["PROMPT"]}],
)
print(reply.content[0].text)
""",
    "google": """
import os
from google import genai
client = genai.Client(http_options={"base_url": os.environ["GOOGLE_GEMINI_BASE_URL"]})
reply = client.models.generate_content(model=os.environ["MODEL"], contents=os.environ["PROMPT"])
print(reply.text)
""",
}


@contextmanager
def stand_in(provider: str) -> Iterator[tuple[dict[str, str], Callable[[], None]]]:
    """The provider's fake server, started: the environment pointing both sides at it, and a
    function queueing the next reply."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    if provider == "openai":
        from provider_openai.openai_fake_server import FakeOpenAI, Reply

        with FakeOpenAI() as openai_fake:
            env = {"OPENAI_BASE_URL": openai_fake.base_url, "OPENAI_API_KEY": openai_fake.api_key}
            yield env | {"MODEL": "gpt-4.1-mini"}, lambda: openai_fake.queue(Reply(text=ANSWER))
    elif provider == "anthropic":
        from provider_anthropic.anthropic_fake_server import FakeAnthropic, message, text

        with FakeAnthropic() as anthropic_fake:
            env = {"ANTHROPIC_BASE_URL": anthropic_fake.url, "ANTHROPIC_API_KEY": "test-key"}
            yield (
                env | {"MODEL": "claude-sonnet-4-5"},
                lambda: anthropic_fake.replies.append(message(text(ANSWER))),
            )
    else:
        from provider_google.gemini_fake_server import FakeGemini, reply
        from provider_google.gemini_fake_server import text as part

        with FakeGemini() as gemini_fake:
            env = {"GOOGLE_GEMINI_BASE_URL": gemini_fake.url, "GEMINI_API_KEY": gemini_fake.api_key}
            yield (
                env | {"MODEL": "gemini-2.5-flash"},
                lambda: gemini_fake.queue(reply(part(ANSWER))),
            )


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process, which must print the answer."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    process = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0 or process.stdout.strip() != ANSWER:
        raise AssertionError(
            f"S13: {command[1:4]} did not answer (exit {process.returncode}): "
            + (process.stderr or process.stdout)[-2000:]
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def s13(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """The CLI's start to the answer against the provider's SDK, for OpenAI, Anthropic and
    Google, in alternating fresh interpreters."""
    rounds = 1 if settings.quick else 7
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        for provider in SDK_SCRIPTS:
            with stand_in(provider) as (server_env, queue):
                env = {**os.environ, **server_env, "PROMPT": PROMPT, "STEADYLOOP_HOME": home}
                model = f"{provider}:{server_env['MODEL']}"
                cli = [sys.executable, "-m", "steadyloop", "run", "--no-log", "--model", model]
                cli.append(PROMPT)
                sdk = [sys.executable, "-c", SDK_SCRIPTS[provider]]
                samples: dict[str, list[float]] = {k: [] for k in ("cli", "sdk")}
                cpu: dict[str, list[float]] = {k: [] for k in ("cli", "sdk")}
                for number in range(rounds + 1):
                    for side, command in (("sdk", sdk), ("cli", cli)):
                        queue()
                        wall, used = _timed(command, env)
                        if number > 0:  # the first round warms up
                            samples[side].append(wall)
                            cpu[side].append(used)
            figures[f"{provider}_cli_s"] = common.spread(samples["cli"])
            figures[f"{provider}_sdk_s"] = common.spread(samples["sdk"])
            figures[f"{provider}_wall_ratio"] = common.spread(
                [a / b for a, b in zip(samples["cli"], samples["sdk"], strict=True)]
            )
            figures[f"{provider}_cli_cpu_s"] = common.spread(cpu["cli"])
            figures[f"{provider}_sdk_cpu_s"] = common.spread(cpu["sdk"])
            figures[f"{provider}_cpu_ratio"] = common.spread(
                [a / b for a, b in zip(cpu["cli"], cpu["sdk"], strict=True)]
            )
    return figures

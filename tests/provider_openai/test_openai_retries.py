"""Retries are quiet: the loop's retries of a model call and a tool log nothing where the
application configured no logging. (One retry layer itself is held for every adapter in
`providers/test_conformance.py`.)"""

from __future__ import annotations

import textwrap
from pathlib import Path

from support.processes import run_script

UNAVAILABLE = {"error": {"message": "Service Unavailable", "type": "server_error"}}


def test_retries_print_nothing_when_the_application_configured_no_logging(
    tmp_path: Path,
) -> None:
    """A model call retried twice and a tool retried once, in a fresh interpreter whose
    logging is not configured: stderr stays empty (no library's retry log line)."""
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from provider_openai.openai_fake_server import Fail, FakeOpenAI, Reply
            from steadyloop import Agent, tool
            from steadyloop.models.openai_chat import OpenAIChatModel
            from steadyloop.retry import Backoff

            failures = [ConnectionError("flaky")]

            @tool(retries=1)
            def flaky() -> str:
                \"\"\"Fails once.\"\"\"
                if failures:
                    raise failures.pop()
                return "fine"

            unavailable = Fail(503, {UNAVAILABLE!r})
            with FakeOpenAI() as server:
                server.queue(Reply(calls=[("call_1", "flaky", "{{}}")]), unavailable, unavailable)
                server.queue(Reply(text="done"))
                model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="sk-test")
                agent = Agent(model, tools=[flaky], backoff=Backoff.none())
                print(agent.run_sync("go").output)
            """
        )
    )
    done = run_script(script, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr == ""

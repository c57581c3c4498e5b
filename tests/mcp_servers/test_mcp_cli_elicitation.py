"""`steadyloop run --mcp` with a server that asks the person's name: on a terminal (a pty) the
question is asked on stderr and a typed line answers it; without a terminal it is declined."""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_servers.mcp_fixtures import HERE
from steadyloop.cli.elicit import terminal_elicitor
from steadyloop.cli.live import PlainView
from steadyloop.mcp import Accept, Decline, Elicitation
from support.cli import cli_process

ASKER = shlex.join([sys.executable, str(HERE / "asker.py")])


def test_without_a_terminal_the_request_is_declined(tmp_path: Path) -> None:
    done = cli_process(
        "run", "--mcp", ASKER, "--model", "test", "greet me", env={"STEADYLOOP_HOME": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr
    assert "no name: the request was declined" in done.stdout
    assert "What is your name?" not in done.stderr


def test_on_a_terminal_the_question_is_asked_and_answered(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--mcp", ASKER, "--model", "test", "greet me"],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "STEADYLOOP_HOME": str(tmp_path)},
    ) as proc:  # fmt: skip
        os.close(follower)
        assert proc.stderr is not None
        shown = b""
        try:
            while b"Name *" not in shown:
                ready, _, _ = select.select([proc.stderr], [], [], 60)
                assert ready, f"no question: {shown!r}"
                chunk = os.read(proc.stderr.fileno(), 4096)
                assert chunk, f"the process ended before asking: {shown!r}"
                shown += chunk
            os.write(leader, b"Ada\n")
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            os.close(leader)
    assert proc.returncode == 0, err
    assert b"What is your name?" in shown
    assert b"hello Ada" in out


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer"},
        "admin": {"type": "boolean", "default": False},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "note": {"type": "string"},
    },
    "required": ["name", "age", "color"],
}


async def answers(lines: list[str], request: Elicitation) -> tuple[object, str]:
    """What the terminal handler makes of typed `lines`, and what it wrote."""
    typed = iter(lines)
    written: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            written.append(text)

        def flush(self) -> None:
            pass

    async def read() -> str:
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    handler = terminal_elicitor(PlainView(sys.stderr), read, Out())  # type: ignore[arg-type]
    return await handler(request), "".join(written)


async def test_each_field_is_asked_until_its_answer_fits() -> None:
    request = Elicitation("srv", "Who are you?", SCHEMA, "form")
    reply, written = await answers(["", "Ada", "old", "36", "", "green", "blue", ""], request)
    assert reply == Accept({"name": "Ada", "age": 36, "admin": False, "color": "blue"})
    assert "srv asks: Who are you?" in written
    assert "Name *: " in written
    assert "[red/blue]" in written
    assert "(default: False)" in written
    assert "this field is required" in written
    assert "answer a whole number" in written


@pytest.mark.parametrize(
    ("lines", "expected"),
    [([], Decline()), (["Ada"], Decline())],  # end of input, at once or midway, declines
)
async def test_end_of_input_declines(lines: list[str], expected: object) -> None:
    reply, _ = await answers(lines, Elicitation("srv", "Who?", SCHEMA, "form"))
    assert reply == expected


async def test_url_mode_takes_enter_as_accept() -> None:
    request = Elicitation("srv", "Connect", {}, "url", "https://example.com/x")
    reply, written = await answers([""], request)
    assert reply == Accept()
    assert "https://example.com/x" in written

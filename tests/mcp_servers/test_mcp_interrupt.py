"""Ctrl-C while a server starts or while a call waits on it leaves no server process behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mcp_servers.mcp_fixtures import TINY_SERVER, processes_with

SCRIPT = """
import sys
from steadyloop import Agent, AssistantMessage, ToolCall
from steadyloop.mcp import MCPServer
from steadyloop.testing import FunctionModel

def reply(messages, tools):
    print("calling hang", flush=True)
    return AssistantMessage(tool_calls=(ToolCall("c0", "hang", "{}"),))

server = MCPServer.stdio(sys.executable, sys.argv[1], sys.argv[2], sys.argv[3])
print("starting", flush=True)
Agent(FunctionModel(reply), tools=[server]).run_sync("go")
"""


@pytest.mark.parametrize(
    ("mode", "wait_for"),
    [("stubborn", "calling hang"), ("garbage", "starting")],
    ids=["during-a-call", "during-start-up"],
)
def test_ctrl_c_stops_the_server(tmp_path: Path, mode: str, wait_for: str) -> None:
    # `stubborn` outlives its closed stdin and `garbage` never reads it: only the client's
    # terminate/kill of the server's process group can stop them.
    marker = f"marker-{uuid.uuid4().hex}"
    script = tmp_path / "agent_script.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), str(TINY_SERVER), mode, marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        while (line := process.stdout.readline()) and line.strip() != wait_for:
            pass
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the server never started"
        time.sleep(0.3)  # let the request reach the server
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
        process.wait()
    assert "KeyboardInterrupt" in stderr
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []

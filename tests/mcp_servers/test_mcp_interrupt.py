"""Ctrl-C during a run that waits on an MCP call leaves no server process behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from mcp_fixtures import TINY_SERVER, processes_with

SCRIPT = """
import sys
from steadyloop import Agent, AssistantMessage, ToolCall
from steadyloop.mcp import MCPServer
from steadyloop.testing import FunctionModel

def reply(messages, tools):
    print("calling hang", flush=True)
    return AssistantMessage(tool_calls=(ToolCall("c0", "hang", "{}"),))

server = MCPServer.stdio(sys.executable, sys.argv[1], "stubborn", sys.argv[2])
Agent(FunctionModel(reply), tools=[server]).run_sync("go")
"""


def test_ctrl_c_while_a_call_hangs_stops_the_server(tmp_path: Path) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    script = tmp_path / "agent_script.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), str(TINY_SERVER), marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "calling hang"
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the server never started"
        time.sleep(0.3)  # let the call reach the server
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
        process.wait()
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []

"""The MCP example runs offline against the cached server-everything and leaves nothing running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_servers.mcp_fixtures import package_main

EXAMPLE = Path(__file__).parents[2] / "examples" / "mcp_everything.py"


def test_the_example_answers_with_every_offered_tool(npm_servers: None) -> None:
    server = f"node {package_main('@modelcontextprotocol/server-everything')} stdio"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--model", "test", "--server", server],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("(test model) Ran 4 tool call(s)")
    assert "- echo [ok]: Echo: example" in lines
    assert "- get-sum [ok]: The sum of 1 and 1 is 2." in lines
    assert any(line.startswith("[image 1: image/png") for line in lines)

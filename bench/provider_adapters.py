"""What a provider adapter costs the loop: S1 through the real adapters and SDKs, each answered
in process with a reply of its provider's recorded shape, the Gemini adapter against the OpenAI
Chat Completions one.

    uv run python bench/provider_adapters.py [--quick]

S1's async configuration (20 turns x 3 adds). Each adapter's SDK client gets an in-process HTTP
transport (`httpx.MockTransport`) that answers every request at once from S1's script with the
JSON the provider sends: a `chat.completion` with three tool calls for OpenAI; for Gemini a
Gemini 3 `GenerateContentResponse` with three function calls, a thought signature on the
first (so the reply is kept and sent back each turn, as it must be), usage with thinking
tokens. So the figure holds the adapter's work both ways and its SDK's HTTP path, and no
network. Blocks of ten runs alternate adapter by adapter, the first round a warm-up. Prints a
JSON object: µs per turn for each adapter and the ratio Gemini / OpenAI (median, min, max).
The same configurations run in bench S14 (`bench/drivers/features.py`, which holds them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

import common
import features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds, for a smoke test")
    settings = common.Settings(parser.parse_args().quick)
    settings.reps = 3 if settings.quick else 30
    google, openai = asyncio.run(features.adapter_rounds(settings))
    figures: dict[str, Any] = {
        "openai": common.spread(openai),
        "google": common.spread(google),
        "ratio_google_to_openai": features.ratio(google, openai),
    }
    for values in figures.values():
        values.pop("values")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

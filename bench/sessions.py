"""What each run of a long session costs as the session grows: 100 runs, one after the other.

    uv run python bench/sessions.py [--runs 100] [--sessions 20] [--no-compaction] [--store URL]

Each session is `--runs` runs of `agent.run(prompt, session=NAME)` on one SQLite log (or
`--store`), each continuing the one before from the log. The agent has 1,200 tokens of
instructions (a support agent's prompt) and a fake model that answers at once with 400
characters, reporting the tokens of the request it read (steadyloop's own estimate). With
compaction on (`max_context_tokens=2500`, `Compaction(keep_recent=4)`, a summariser that writes
a fixed 600-character summary without a model call) the conversation is summarised as it fills.

Per run position, the median over `--sessions` sessions of: the wall time of the run, steadyloop's
own part of it (the wall time less the time inside the fake model, which measures what it read:
what the library does around the model, reading the session from the log, building the context,
logging the run), the messages the run was given as history and the input tokens it sent. Prints
a JSON object with those per position and the ratios: run N over run 1, and the mean of the
last ten runs over the mean of runs 11-20 (once the context has filled: flat means it no longer
grows with the session's length). `target` holds the figure judged, the last ten runs / runs
11-20 <= 1.2 with compaction on (a run's cost flat in the session's length), for steadyloop's own
time and for the tokens, each with whether it is met. Run N / run 1 is printed too, not judged:
run 1 has no history at all, so it measures what a run pays for its context (the tokens it
sends; the history it reads from the log and the copy of it logged with the run), not what grows
with the session's length. Bench S14 runs the same (`bench/drivers/session_growth.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

from session_growth import session_growth

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--no-compaction", action="store_true")
    parser.add_argument("--store", default=None, help="a run log URL (default: a fresh file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        where = args.store or str(Path(folder) / "runs.db")
        compaction = not args.no_compaction
        report = asyncio.run(session_growth(args.runs, args.sessions, compaction, where))
    print(json.dumps(report, indent=1))

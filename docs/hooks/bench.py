"""MkDocs hook: the benchmarks page shows `bench/`'s latest results and plot as they are in
the repository, so the site cannot drift from them.

- `bench/per_turn_cost.png` is served as `images/per_turn_cost.png`.
- `<!-- bench:results -->` in a page is replaced by the part of `bench/README.md` between
  its `<!-- results:start -->` and `<!-- results:end -->` markers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PLACEHOLDER = "<!-- bench:results -->"


def on_files(files: Files, config: Any) -> Files:
    files.append(
        File.generated(
            config, "images/per_turn_cost.png", abs_src_path=str(BENCH / "per_turn_cost.png")
        )
    )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if PLACEHOLDER not in markdown:
        return markdown
    return markdown.replace(PLACEHOLDER, latest_results())


def latest_results() -> str:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    if start not in text or end not in text:
        raise ValueError(f"bench/README.md has lost its {start} ... {end} markers")
    return text.split(start, 1)[1].split(end, 1)[0].strip()

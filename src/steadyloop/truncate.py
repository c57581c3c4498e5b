"""Cut long text to a character budget, keeping both ends.

The head usually holds the structure (column names, the command that ran), the tail the newest
rows and the error at the bottom of a log: keeping only one end loses the half with the answer.
"""

from __future__ import annotations

__all__ = ["truncate", "truncation_marker"]


def truncation_marker(omitted: int) -> str:
    """The note put where `omitted` characters were cut out."""
    return f"\n\n... [{omitted} characters omitted] ...\n\n"


def truncate(text: str, limit: int) -> str:
    """Returns `text` cut to `limit` characters of content plus a marker naming how many went.

    `text[:h] + marker + text[-t:]` with `h + t == limit` (the head gets the odd character);
    text of length <= limit comes back unchanged; a negative limit is a ValueError.
    """
    if limit < 0:
        raise ValueError(f"truncate limit must be >= 0, got {limit}")
    if len(text) <= limit:
        return text
    tail = limit // 2
    head = limit - tail
    tail_text = text[len(text) - tail :] if tail else ""
    return text[:head] + truncation_marker(len(text) - limit) + tail_text

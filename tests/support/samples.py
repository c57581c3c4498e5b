"""Small files the tests attach to prompts: a valid 1x1 PNG and a one-page PDF."""

from __future__ import annotations

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63646060f80f0000020101009e4c1b340000000049454e44ae426082"
)
"""A 1x1 RGBA PNG."""

PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
"""The smallest file that starts and ends as a PDF does."""

"""Images and documents: parts of a prompt, and images a tool returns.

Frozen values that round-trip through JSON like messages. Bytes are kept base64-encoded (how
every provider takes them); an image may instead be a URL the provider fetches. Each counts in
the context estimate as a fixed number of tokens, not as the length of its base64 text.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from steadyloop.errors import ConfigError

__all__ = [
    "IMAGE_TOKENS",
    "IMAGE_TYPES",
    "PAGE_TOKENS",
    "Document",
    "Image",
    "Part",
    "attachment_text",
    "part_from_dict",
    "part_to_dict",
    "parts_tokens",
]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
# What a large image costs on the providers (about 1,600 tokens at 1.15 megapixels on Anthropic,
# 765-1,105 on OpenAI at high detail): a safe upper estimate for the context check.
IMAGE_TOKENS = 1_600
# A PDF page is sent as its text and an image of the page: about 1,500-3,000 tokens.
PAGE_TOKENS = 2_000
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_PDF_PAGE = re.compile(rb"/Type\s*/Page\b")


@dataclass(frozen=True, slots=True)
class Image:
    """An image: base64 `data` of type `media_type`, or a `url` the provider fetches.

    Make one with `Image.from_path`, `Image.from_bytes` or `Image.from_url`.
    """

    media_type: str
    data: str = ""
    url: str | None = None

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Image:
        """The image in a PNG, JPEG, GIF or WebP file; `ConfigError` when it is not one."""
        data = _read(path, "image")
        kind = _sniff(data)
        if kind is None:
            raise ConfigError(
                f"{path} is not a PNG, JPEG, GIF or WebP image: convert it to one of those"
            )
        return cls(kind, base64.b64encode(data).decode("ascii"))

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None) -> Image:
        """An image from its bytes; `media_type` (such as "image/png") is read from the bytes
        when not given."""
        if not isinstance(data, bytes | bytearray):
            raise ConfigError(
                f"Image.from_bytes needs the image's bytes, got {type(data).__name__}: pass "
                "bytes, or use Image.from_path(path) or Image.from_url(url)"
            )
        kind = media_type or _sniff(data)
        if kind is None:
            raise ConfigError(
                "cannot tell the image type from its bytes: pass media_type='image/png' (or "
                "image/jpeg, image/gif, image/webp)"
            )
        if not kind.startswith("image/"):
            raise ConfigError(f"{kind!r} is not an image type: use a type like 'image/png'")
        return cls(kind, base64.b64encode(data).decode("ascii"))

    @classmethod
    def from_url(cls, url: str, media_type: str | None = None) -> Image:
        """An image the provider fetches from an http(s) URL."""
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"not an http(s) URL: {url!r}; for a file use Image.from_path(...)")
        import mimetypes  # only for a URL or file without a stated type: it loads a table

        guessed = mimetypes.guess_type(url.split("?", 1)[0])[0]
        return cls(media_type or guessed or "image/*", url=url)

    @property
    def data_url(self) -> str:
        """The URL, or the bytes as a `data:` URL."""
        return self.url or f"data:{self.media_type};base64,{self.data}"

    def to_dict(self) -> dict[str, str]:
        out = {"media_type": self.media_type}
        if self.url is not None:
            out["url"] = self.url
        else:
            out["data"] = self.data
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Image:
        return cls(media_type=data["media_type"], data=data.get("data", ""), url=data.get("url"))

    def __repr__(self) -> str:  # never the whole base64 text
        where = self.url or f"{len(self.data) * 3 // 4:,} bytes"
        return f"Image({self.media_type}, {where})"


@dataclass(frozen=True, slots=True)
class Document:
    """A PDF (`application/pdf`) or a text file (`text/...`), base64 `data`, and its `name`."""

    media_type: str
    data: str
    name: str = ""

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Document:
        """A PDF or a UTF-8 text file; `ConfigError` for anything else."""
        raw = _read(path, "document")
        name = os.path.basename(os.fspath(path))
        if raw.startswith(b"%PDF-"):
            return cls("application/pdf", base64.b64encode(raw).decode("ascii"), name)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(
                f"{path} is neither a PDF nor UTF-8 text: pass a .pdf or a text file "
                "(for images use Image.from_path)"
            ) from None
        import mimetypes

        kind = mimetypes.guess_type(name)[0] or "text/plain"
        kind = kind if kind.startswith("text/") else "text/plain"
        return cls(kind, base64.b64encode(raw).decode("ascii"), name)

    @property
    def is_pdf(self) -> bool:
        return self.media_type == "application/pdf"

    @property
    def text(self) -> str:
        """The text of a text document ("" for a PDF)."""
        return "" if self.is_pdf else base64.b64decode(self.data).decode("utf-8")

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    def tokens(self) -> int:
        """The estimate: a fixed cost per PDF page, or the text's length."""
        raw = base64.b64decode(self.data)
        if self.is_pdf:
            return PAGE_TOKENS * max(1, len(_PDF_PAGE.findall(raw)))
        return len(raw) // 3

    def to_dict(self) -> dict[str, str]:
        return {"media_type": self.media_type, "data": self.data, "name": self.name}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Document:
        return cls(data["media_type"], data["data"], data.get("name", ""))

    def __repr__(self) -> str:
        return f"Document({self.name or 'unnamed'}, {self.media_type})"


Part: TypeAlias = str | Image | Document


def part_to_dict(part: Part) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = "image" if isinstance(part, Image) else "document"
    return {"type": kind, **part.to_dict()}


def part_from_dict(data: Mapping[str, Any]) -> Part:
    kind = data.get("type")
    if kind == "text":
        return str(data["text"])
    if kind == "image":
        return Image.from_dict(data)
    if kind == "document":
        return Document.from_dict(data)
    raise ValueError(f"not a prompt part: unknown type {kind!r}")


def parts_tokens(parts: tuple[Part, ...]) -> int:
    """What the images and documents among `parts` add to the context, in tokens."""
    total = 0
    for part in parts:
        if isinstance(part, Image):
            total += IMAGE_TOKENS
        elif isinstance(part, Document):
            total += part.tokens()
    return total


def _read(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path} (check the path)") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory: pass the {what} file itself") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _sniff(data: bytes) -> str | None:
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def attachment_text(part: Image | Document) -> str:
    """What an image or document sent with a prompt was, in a few words (never its bytes):
    "image: image/png, 12 KB"."""
    kind = "image" if isinstance(part, Image) else "document"
    what = [part.name] if isinstance(part, Document) and part.name else []
    if isinstance(part, Image) and part.url is not None:
        what.append(part.url)
    what.append(part.media_type)
    if part.data:
        what.append(_size(len(part.data) * 3 // 4 - part.data[-2:].count("=")))
    return f"{kind}: {', '.join(what)}"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.0f} KB"
    return f"{count / (1024 * 1024):.1f} MB"

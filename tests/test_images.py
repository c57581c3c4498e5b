"""Images and documents in the prompt: made from files, bytes or URLs, kept in `UserMessage.parts`
(JSON and the run log round-trip them), counted as a fixed estimate, stored once."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    Document,
    Image,
    ToolCall,
    UserMessage,
    tool,
)
from steadyloop.events import Event, ModelRequestStarted
from steadyloop.limits import estimate_tokens
from steadyloop.media import IMAGE_TOKENS, PAGE_TOKENS
from steadyloop.messages import message_from_dict
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel, TestModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n"
    b"3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
    b"4 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "receipt.png").write_bytes(PNG)
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 20)
    (tmp_path / "anim.gif").write_bytes(b"GIF89a" + b"\0" * 20)
    (tmp_path / "pic.webp").write_bytes(b"RIFF\0\0\0\0WEBPVP8 " + b"\0" * 20)
    (tmp_path / "notes.txt").write_bytes(b"\x00\x01 not an image")
    (tmp_path / "terms.pdf").write_bytes(PDF)
    (tmp_path / "policy.md").write_text("# Refunds\nWithin 30 days.")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00\x81")
    return tmp_path


def test_images_from_files_bytes_and_urls(files: Path) -> None:
    png = Image.from_path(files / "receipt.png")
    assert png.media_type == "image/png"
    assert base64.b64decode(png.data) == PNG
    assert png.data_url.startswith("data:image/png;base64,iVBOR")
    kinds = [Image.from_path(files / n).media_type for n in ("photo.jpg", "anim.gif", "pic.webp")]
    assert kinds == ["image/jpeg", "image/gif", "image/webp"]
    assert Image.from_bytes(PNG) == png
    assert Image.from_bytes(b"raw", media_type="image/bmp").media_type == "image/bmp"
    remote = Image.from_url("https://example.com/cat.jpeg?size=2")
    assert (remote.media_type, remote.url, remote.data) == ("image/jpeg", remote.url, "")
    assert remote.data_url == "https://example.com/cat.jpeg?size=2"
    assert "iVBOR" not in repr(png)  # a repr never dumps the bytes


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: Image.from_path(d / "missing.png"), "image not found: "),
        (lambda d: Image.from_path(d), "is a directory: pass the image file itself"),
        (lambda d: Image.from_path(d / "notes.txt"), "is not a PNG, JPEG, GIF or WebP image"),
        (lambda d: Image.from_bytes(b"????"), "pass media_type='image/png'"),
        (lambda d: Image.from_bytes(PNG, media_type="text/plain"), "is not an image type"),
        (lambda d: Image.from_url("file:///etc/passwd"), "not an http(s) URL"),
        (lambda d: Document.from_path(d / "blob.bin"), "is neither a PDF nor UTF-8 text"),
        (lambda d: Document.from_path(d / "none.pdf"), "document not found: "),
    ],
)
def test_unreadable_images_and_documents_are_one_line_config_errors(
    files: Path, make: object, message: str
) -> None:
    assert callable(make)
    with pytest.raises(ConfigError) as error:
        make(files)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_documents_from_pdf_and_text_files(files: Path) -> None:
    pdf = Document.from_path(files / "terms.pdf")
    assert (pdf.media_type, pdf.name, pdf.is_pdf) == ("application/pdf", "terms.pdf", True)
    assert base64.b64decode(pdf.data) == PDF
    text = Document.from_path(files / "policy.md")
    assert (text.media_type, text.text) == ("text/markdown", "# Refunds\nWithin 30 days.")


def test_a_prompt_with_parts_round_trips_through_json(files: Path) -> None:
    parts = (
        "What is wrong with this receipt?",
        Image.from_path(files / "receipt.png"),
        Image.from_url("https://example.com/a.png"),
        Document.from_path(files / "terms.pdf"),
        "Be brief.",
    )
    message = UserMessage("x", parts)
    again = message_from_dict(json.loads(json.dumps(message.to_dict())))
    assert again == message
    assert UserMessage("plain").to_dict() == {"type": "user", "text": "plain"}


async def test_the_model_sees_the_parts_in_order_and_the_text_joined(files: Path) -> None:
    model = TestModel()
    image = Image.from_path(files / "receipt.png")
    result = await Agent(model).run(["Look:", image, "Is it paid?"])
    (prompt,) = [m for m in model.requests[0].messages if isinstance(m, UserMessage)]
    assert prompt.parts == ("Look:", image, "Is it paid?")
    assert prompt.text == "Look:\nIs it paid?"
    assert result.output == "(test model) You said: Look:\nIs it paid?"
    text_only = await Agent(TestModel()).run(["a", "b"])
    assert text_only.messages[0] == UserMessage("a\nb")


def test_a_prompt_part_of_another_kind_is_a_config_error(files: Path) -> None:
    with pytest.raises(ConfigError, match="a prompt part must be a str, an Image or a Document"):
        Agent(ScriptedModel(["x"])).run_sync(["look", files / "receipt.png"])  # type: ignore[list-item]


def test_an_image_counts_as_a_fixed_estimate_not_its_base64(files: Path) -> None:
    big = Image.from_bytes(PNG + b"\0" * 400_000, media_type="image/png")
    small = Image.from_path(files / "receipt.png")
    with_big = estimate_tokens(UserMessage("hi", ("hi", big)))
    assert with_big == estimate_tokens(UserMessage("hi", ("hi", small)))
    assert with_big == estimate_tokens(UserMessage("hi")) + IMAGE_TOKENS
    pdf = Document.from_path(files / "terms.pdf")
    assert estimate_tokens(UserMessage("", (pdf,))) - estimate_tokens(UserMessage("")) == (
        2 * PAGE_TOKENS
    )


async def test_an_image_is_stored_once_in_the_run_log_over_many_turns(
    files: Path, tmp_path: Path
) -> None:
    looks: list[int] = []

    @tool
    def inspect_receipt() -> str:
        """Looks at the receipt again."""
        looks.append(1)
        return f"paid (look {len(looks)})"

    calls = [
        AssistantMessage(tool_calls=(ToolCall(f"c{i}", "inspect_receipt", "{}"),)) for i in range(4)
    ]
    store = RunStore(tmp_path / "runs.db")
    events: list[Event] = []
    image = Image.from_bytes(PNG + b"unique-image-bytes" * 50, media_type="image/png")
    agent = Agent(ScriptedModel([*calls, "done"]), tools=[inspect_receipt], store=store)
    result = await agent.run(["Check this", image], on_event=events.append)
    assert result.run_id is not None
    assert store.messages(result.run_id) == result.messages
    assert store.run(result.run_id).prompt == "Check this"
    turns = [e for e in events if isinstance(e, ModelRequestStarted)]
    assert len(turns) == 5
    assert turns[0].context_tokens < IMAGE_TOKENS + 100  # not the ~1,600 characters of base64
    store.close()
    logged = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("runs"))  # noqa: ASYNC240
    assert logged.count(image.data[40:120].encode()) == 1

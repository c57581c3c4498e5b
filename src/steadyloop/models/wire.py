"""Shared rules every adapter applies before translating: the history a provider will accept.

Providers reject histories that our canonical transcript may legally hold: call ids in another
provider's format, too long, empty or repeated; tool names with dots or spaces; a tool result
whose call is not right before it; a call with no result. `prepare_history` rewrites a copy of
the model's view so that none of these reach the wire, deterministically (the same input always
gives the same ids) and consistently (a call and its result get the same new id). The canonical
transcript keeps the originals; an id the target endpoint and model made itself is never
rewritten (empty or repeated ones excepted), since some servers encode state in them.
`valid_tool_names` is the one rule that makes tool names valid,
for Python tools here and for MCP tools when a server lists them; `ToolNames` maps both ways.
`MediaRules` says which images and documents a provider takes in a prompt, so one it cannot take
is a `ConfigError` before anything is sent.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.media import IMAGE_TYPES, Document, Image
from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage

__all__ = [
    "CHAT_IDS",
    "TOOL_SETTINGS",
    "IdRules",
    "MediaRules",
    "ToolNames",
    "document_text",
    "own_settings",
    "prepare_history",
    "request_settings",
    "valid_tool_names",
]

_NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]+")
_MAX_NAME = 64
_NAME_HASH = 8
MISSING_RESULT_TEXT = "not run: no result was recorded for this call"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@dataclass(frozen=True, slots=True)
class IdRules:
    """What a provider accepts as a tool-call id. `keeps_own_ids`: ids the endpoint made itself
    go back as they came even outside `pattern` and `max_length` (Chat Completions, where proxies
    encode signatures in long ids); the other APIs refuse any id outside their rules, their own
    included."""

    pattern: re.Pattern[str] = re.compile(r"^[a-zA-Z0-9_-]+$")
    max_length: int = 40
    prefix: str = "call_"
    keeps_own_ids: bool = False

    def accepts(self, call_id: str) -> bool:
        return 0 < len(call_id) <= self.max_length and bool(self.pattern.match(call_id))

    def make(self, seed: str) -> str:
        """A valid id derived from `seed` (deterministic)."""
        room = max(8, min(24, self.max_length - len(self.prefix)))
        return self.prefix + _digest(seed, room)


# Chat Completions: 9 letters and digits, Mistral's rule and the strictest of the servers
# speaking the API; OpenAI, Gemini, vLLM and llama.cpp accept it too.
CHAT_IDS = IdRules(
    pattern=re.compile(r"^[a-zA-Z0-9]{9}$"), max_length=9, prefix="", keeps_own_ids=True
)


@dataclass(frozen=True, slots=True)
class MediaRules:
    """What a provider (named `provider` in errors) takes in a prompt besides text: every one
    takes PNG, JPEG, GIF and WebP images; some cannot fetch an image URL or read a PDF."""

    provider: str
    image_urls: bool = True
    pdfs: bool = True

    def check(self, part: Image | Document) -> None:
        """`ConfigError` saying what to do when the provider cannot take `part`."""
        if isinstance(part, Image):
            if part.url is not None and not self.image_urls:
                raise ConfigError(
                    f"{self.provider} cannot fetch images from URLs: send the image itself "
                    "with Image.from_path(...) or Image.from_bytes(...)"
                )
            if part.url is None and part.media_type not in IMAGE_TYPES:
                raise ConfigError(
                    f"{self.provider} takes PNG, JPEG, GIF and WebP images, not "
                    f"{part.media_type}: convert the image to one of those"
                )
        elif part.is_pdf and not self.pdfs:
            raise ConfigError(
                f"{self.provider} cannot read PDF documents: send their text instead "
                "(Document.from_path of a text file), or use a model that reads PDFs"
            )


def document_text(document: Document) -> str:
    """A text document as prompt text, under its name."""
    return f"[document: {document.name}]\n{document.text}" if document.name else document.text


def valid_tool_names(names: Iterable[str]) -> dict[str, str]:
    """Maps each tool name to one every provider accepts (`^[a-zA-Z0-9_-]{1,64}$`).

    Valid names are kept. In others each run of other characters becomes `_`; a name that is
    then too long, or equal to another one, is cut and given a short hash of the original, so
    `a.b` and `a_b` stay apart. The result depends only on the set of names, not their order.
    """
    valid: dict[str, str] = {}
    cleaned: dict[str, str] = {}
    for name in names:
        if _NAME_OK.match(name):
            valid[name] = name
        else:
            cleaned[name] = _clean(name)
    if cleaned:
        taken = Counter([*valid, *cleaned.values()])
        for name, clean in cleaned.items():
            unique = len(clean) <= _MAX_NAME and taken[clean] == 1
            valid[name] = clean if unique else _hashed(name)
    return valid


def _clean(name: str) -> str:
    return _NAME_BAD_CHARS.sub("_", name).strip("_") or "tool"


def _hashed(name: str) -> str:
    return f"{_clean(name)[: _MAX_NAME - _NAME_HASH - 1]}_{_digest(name, _NAME_HASH)}"


class ToolNames:
    """Maps the request's tool names to valid ones (`valid_tool_names`) and back.

    A name outside the request (a call in the history to a tool no longer offered) is kept if
    valid, else cleaned and hashed so it cannot pass for a current tool. Names the model sends
    that we never mapped come back unchanged, so the loop can answer them as unknown tools.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._to_wire = valid_tool_names(names)
        self._from_wire = {wire: name for name, wire in self._to_wire.items()}

    def to_wire(self, name: str) -> str:
        wire = self._to_wire.get(name)
        if wire is None:
            return name if _NAME_OK.match(name) else _hashed(name)
        return wire

    def from_wire(self, wire: str) -> str:
        return self._from_wire.get(wire, wire)


def prepare_history(
    messages: Sequence[Message],
    rules: IdRules,
    own: Callable[[AssistantMessage], bool] | None = None,
) -> tuple[Message, ...]:
    """A copy of `messages` a strict provider accepts, pairing calls and results.

    - every call id valid under `rules` and unique in the request, rewritten the same way in the
      call and in its result; the ids of a reply `own` says the target made are kept as they
      are unless empty or repeated. A new id depends only on the original (and, for an empty
      or repeated one, its place), so it is the same in every request of a run;
    - every call answered right after its reply (a missing result becomes an error result);
    - a result with no call just before it is kept as user text after the answered results,
      not sent as an orphan.
    Replies keep their other fields (native content, reasoning) unchanged.
    """
    out: list[Message] = []
    used: set[str] = set()
    open_calls: dict[str, list[str]] = {}  # original id -> wire ids of the latest reply's calls
    pending: list[ToolCall] = []  # calls of the latest reply not yet answered, wire ids
    orphans: list[Message] = []  # results with no call, sent as text once the results are in
    for position, message in enumerate(messages):
        if isinstance(message, ToolResult):
            waiting = open_calls.get(message.call_id)
            if not waiting:
                orphans.append(_orphan_as_text(message))
                continue
            wire_id = waiting.pop(0)
            pending = [c for c in pending if c.id != wire_id]
            out.append(
                ToolResult(wire_id, message.name, message.content, message.is_error, message.images)
            )
            continue
        out.extend(_missing_results(pending))
        out.extend(orphans)
        pending, open_calls, orphans = [], {}, []
        if isinstance(message, AssistantMessage) and message.tool_calls:
            kept = own is not None and own(message)
            calls: list[ToolCall] = []
            for index, call in enumerate(message.tool_calls):
                wire_id = _wire_id(call.id, kept, rules, used, call.id in open_calls) or (
                    rules.make(f"{position}:{index}:{call.id}")
                )
                used.add(wire_id)
                open_calls.setdefault(call.id, []).append(wire_id)
                # the call itself when its id stands: it remembers its arguments were read
                calls.append(
                    call if wire_id == call.id else ToolCall(wire_id, call.name, call.arguments)
                )
            pending = list(calls)
            if any(new is not old for new, old in zip(calls, message.tool_calls, strict=True)):
                message = replace(message, tool_calls=tuple(calls))
        out.append(message)
    out.extend(_missing_results(pending))
    out.extend(orphans)
    return tuple(out)


def _wire_id(
    call_id: str, kept: bool, rules: IdRules, used: set[str], repeated: bool
) -> str | None:
    """The id a call goes with, None when only its place can make it unique (empty or
    repeated): its own id when kept (and the rules keep own ids) or already valid, else one
    derived from it."""
    if not call_id or repeated or call_id in used:
        return None
    if (kept and rules.keeps_own_ids) or rules.accepts(call_id):
        return call_id
    made = rules.make(call_id)
    return None if made in used else made


def _missing_results(pending: Sequence[ToolCall]) -> list[ToolResult]:
    return [ToolResult(c.id, c.name, MISSING_RESULT_TEXT, is_error=True) for c in pending]


def _orphan_as_text(result: ToolResult) -> UserMessage:
    label = "error" if result.is_error else "result"
    return UserMessage(f"[tool {label} from {result.name} ({result.call_id})]\n{result.content}")


# Settings that only mean something beside a list of tools: a request without tools (a
# compaction summary, an agent without tools) that carried them would be refused (400).
TOOL_SETTINGS = frozenset({"tool_choice", "parallel_tool_calls", "disable_parallel_tool_use"})


def own_settings(
    settings: Mapping[str, Any] | None, owned: Iterable[str], advice: str
) -> dict[str, Any]:
    """A copy of a model's `settings`; a `ConfigError` when one names a field the adapter
    fills in itself (`owned`: the model, the messages, streaming, the tools...). Sent anyway,
    it would replace that field: another model than the one the cost is priced as, no
    messages, a plain reply where a stream is read. `advice` says where the value belongs."""
    given = dict(settings or {})
    clash = sorted(set(owned).intersection(given))
    if clash:
        raise ConfigError(
            f"settings may not set {', '.join(clash)}: the model and the agent set them ({advice})"
        )
    return given


def request_settings(settings: Mapping[str, Any], *, has_tools: bool) -> dict[str, Any]:
    """The extra request fields to send: all of `settings`, less the tool-only ones when the
    request has no tools."""
    if has_tools:
        return dict(settings)
    return {key: value for key, value in settings.items() if key not in TOOL_SETTINGS}

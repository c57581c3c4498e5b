"""The checks `steadyloop.lint` puts a tool through (its module docstring lists them with their
severity and points): word heuristics over the tool's name, description and JSON schema, each
failure a `Finding` that says what is wrong and how to fix it."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from steadyloop.tools import NO_DESCRIPTION, FunctionTool, Tool

__all__ = ["CHECKS", "Finding", "Severity", "check_tool"]

Severity = Literal["error", "warning"]

CHECKS: Mapping[str, tuple[Severity, int]] = {
    "missing-description": ("error", 40),
    "restates-name": ("error", 30),
    "no-when": ("warning", 15),
    "no-returns": ("warning", 15),
    "no-size": ("warning", 10),
    "no-matching": ("warning", 10),
    "undescribed-param": ("error", 20),
    "mode-param": ("error", 25),
    "generic-name": ("error", 20),
    "short-name": ("warning", 10),
    "no-verb": ("warning", 10),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: which check, on which tool (and parameter), and how to fix it."""

    check: str
    tool: str
    message: str
    suggestion: str
    parameter: str | None = None

    @property
    def severity(self) -> Severity:
        return CHECKS[self.check][0]


# --- word lists ---------------------------------------------------------------------------------


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_GENERIC = _wordset(
    "run do tool tools helper helpers process handle handler execute exec call invoke perform "
    "action act manage util utils misc func function main go api task thing stuff dispatch op "
    "request data input it"
)
# Verbs that say what a tool does (none of the generic ones above).
_VERBS = _wordset(
    "get list search find fetch read write create delete remove update add set send count "
    "query lookup look check compute calculate convert translate summarize summarise "
    "download upload parse validate generate make build edit move copy rename post put patch "
    "insert save load store show describe explain book cancel schedule start stop restart "
    "evaluate render format resolve scan sort filter grep glob extract analyze analyse "
    "compare merge apply install deploy publish notify email reply approve reject assign "
    "close reopen archive restore track log record measure estimate predict classify tag "
    "label lint test plan fix replace append clear reset refresh sync import export print "
    "display view browse navigate click scroll take capture fill submit select choose pick "
    "rank score review transcribe draw plot lock unlock enable disable toggle wait ping "
    "crawl scrape visit retrieve sum aggregate join split encode decode encrypt decrypt hash "
    "sign verify login logout register invite share mark flag pin watch follow transfer pay "
    "charge refund order buy sell resize crop rotate compress diff commit push pull checkout "
    "clone revert inspect ask answer open ship"
)
_MODE_WORDS = _wordset("mode action operation op command cmd subcommand verb")
_MODE_NAMES = _wordset("type kind method task what function")
_LIST_WORDS = _wordset("search list find query grep glob scan browse read lookup history")
_SEARCH_WORDS = _wordset("search find query lookup grep match filter locate seek")
_STOP_WORDS = _wordset(
    "a an the of to in on for and or with by from this that it its is are be as at given some any"
)

_WHEN = re.compile(
    r"\b(use|useful)\b|\bwhen\b|\bif you\b|\binstead\b|\bcall (it|this)\b"
    r"|\b(meant|intended|good|best) for\b"
    r"|\bfor (\w+ )?(questions|requests|tasks|lookups)\b"
    r"|\bfor (finding|looking|checking|answering|getting)\b",
    re.IGNORECASE,
)
_RETURNS = re.compile(
    r"\breturns?\b|\bgives? back\b|\byields?\b|\bresponds? with\b|\boutputs?\b|\bproduces\b"
    r"|\bresults?\b|\byou get\b",
    re.IGNORECASE,
)
_SIZE = re.compile(
    r"\bup to\b|\bat (most|least)\b|\blimit|\bmax(imum)?\b|\b(first|last|top) \w+|\d"
    r"|\b(all|every|whole|entire)\b|\bpage|\btruncat|\bcharacters\b|\bbytes\b|\bno more than\b",
    re.IGNORECASE,
)
_MATCHING = re.compile(
    r"\bmatching\b|\bmatch(es|ed)? (on|by|against|whole|exact|any|all|only|case|words?)\b"
    r"|\bcase[- ]?(in)?sensitive\b|\b(ignores|ignoring) case\b|\bexact\b|\bsubstring|\bprefix"
    r"|\bfuzzy\b|\bregex|\bregular expression|\bglob\b|\bwildcard|\bwhole words?\b|\bsemantic"
    r"|\bsimilarity\b|\bkeywords?\b|\bstemm|\bcontains?\b|\bpartial\b|\bsyntax\b",
    re.IGNORECASE,
)
_QUOTED_OPTION = re.compile(r"""['"`]([\w.:-]+)['"`]""")
_ONE_OF = re.compile(r"\bone of:?\s+([\w.:-]+(?:\s*(?:,|\||/|\bor\b)\s*[\w.:-]+)+)", re.IGNORECASE)
_EXAMPLES = re.compile(r"\b(e\.g\.|eg|like|for example|such as)", re.IGNORECASE)
_PLACEHOLDER = NO_DESCRIPTION
_LIST_TYPES = (list, tuple, set, frozenset)


# --- checks -------------------------------------------------------------------------------------


def check_tool(tool: Tool) -> Iterator[Finding]:
    """What is wrong with `tool`'s description, parameters and name, as findings."""
    yield from _check_description(tool)
    yield from _check_parameters(tool)
    name_finding = _check_name(tool.name)
    if name_finding is not None:
        yield name_finding


def _check_description(tool: Tool) -> Iterator[Finding]:
    name, text = tool.name, tool.description.strip()
    name_words = _name_words(name)
    if not text or text.endswith(_PLACEHOLDER):
        yield Finding(
            "missing-description",
            name,
            "the tool has no description, so the model sees only its name",
            "write a docstring: what it does, when to use it (and when to use another tool), "
            "what it returns and how much",
        )
    elif _restates(text, name_words):
        yield Finding(
            "restates-name",
            name,
            f"the description {_quote(text)} only restates the name",
            "say what it works on, when to use it, what comes back and how much: "
            "'Full-text search over support tickets; use it to find tickets by topic. "
            "Returns up to 20 matches, newest first.'",
        )
    if not _WHEN.search(text):
        yield Finding(
            "no-when",
            name,
            "the description does not say when to use the tool",
            "add a sentence like 'Use it to ... ; use `other_tool` instead when ...'",
        )
    if not _RETURNS.search(text):
        yield Finding(
            "no-returns",
            name,
            "the description does not say what comes back",
            "add 'Returns ...': the fields of each result, their order, and what an empty "
            "result means",
        )
    elif _returns_many(tool, name_words) and not _SIZE.search(text):
        yield Finding(
            "no-size",
            name,
            "the tool returns several items but does not say how many",
            "say how much comes back: 'Returns up to 20 ..., newest first' or 'the first "
            "200 lines'",
        )
    if name_words & _SEARCH_WORDS and not _MATCHING.search(text):
        yield Finding(
            "no-matching",
            name,
            "a search-like tool that does not say how matching works",
            "say how the query is matched: whole words or substrings, case-sensitive or not, "
            "any or all words, regex or plain text; e.g. \"matches whole words: 'refund' "
            "does not match 'refunded'\"",
        )


def _check_parameters(tool: Tool) -> Iterator[Finding]:
    schema = tool.parameters
    properties = schema.get("properties", {})
    for param, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        description = str(prop.get("description") or "").strip()
        if not description:
            yield Finding(
                "undescribed-param",
                tool.name,
                f"parameter `{param}` has no description",
                f"document it under Args: in the docstring ('{param}: what it is, its format, "
                "an example value')",
                parameter=param,
            )
        options = _schema_options(prop, schema) or _listed_options(description)
        if _is_mode_param(param, options):
            yield Finding(
                "mode-param",
                tool.name,
                f"`{param}` picks one of {len(options)} jobs ({', '.join(options[:6])}): one "
                "tool doing the work of several",
                f"split `{tool.name}` into one tool per value, each with only the parameters it "
                f"needs and its own description: {_split_names(tool.name, options)}; models "
                "choose between well-named tools far more reliably than between string values",
                parameter=param,
            )


def _check_name(name: str) -> Finding | None:
    words = _name_words(name)
    if words and words <= _GENERIC:
        return Finding(
            "generic-name",
            name,
            f"the name `{name}` does not say what the tool does",
            "name it verb_object for what it does and to what, like `search_tickets`, "
            "`get_weather` or `run_sql_query`",
        )
    if len(name) < 4:
        return Finding(
            "short-name",
            name,
            f"the name `{name}` is too short for the model to guess its job",
            "spell it out as verb_object, like `list_files` rather than `ls`",
        )
    if not any(_is_verb(w) for w in words):
        topic = _topic(name) or name
        vague = [w for w in _ordered_words(name) if w in _GENERIC]
        what = f"`{vague[0]}` could mean anything" if vague else "it has no verb"
        return Finding(
            "no-verb",
            name,
            f"the name `{name}` says what the tool works on, not what it does: {what}",
            f"start it with the exact action, like `get_{topic}` or `list_{topic}`",
        )
    return None


# --- helpers ------------------------------------------------------------------------------------


def _name_words(name: str) -> frozenset[str]:
    return frozenset(_ordered_words(name))


def _ordered_words(name: str) -> list[str]:
    """`getWeather` and `get_weather` both give ['get', 'weather']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z0-9]*", text.lower())


def _same_word(a: str, b: str) -> bool:
    """Equal, or one is the other plus a short ending ('searches'/'search', 'files'/'file')."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 3 and long.startswith(short) and len(long) - len(short) <= 3


def _restates(text: str, name_words: frozenset[str]) -> bool:
    """A single short sentence adding at most one word to the name's own."""
    sentences = [s for s in re.split(r"[.!?;]\s+|\n+", text.strip()) if s.strip()]
    words = _words(text)
    if len(sentences) > 1 or len(words) > 12:
        return False
    new = {w for w in words if w not in _STOP_WORDS}
    new = {w for w in new if not any(_same_word(w, n) for n in name_words)}
    return len(new) <= 1


def _is_verb(word: str) -> bool:
    return word in _VERBS or word.endswith(("ize", "ise", "ify"))


def _returns_many(tool: Tool, name_words: frozenset[str]) -> bool:
    if name_words & _LIST_WORDS:
        return True
    if not isinstance(tool, FunctionTool):
        return False
    try:
        returned = typing.get_type_hints(tool.fn).get("return")
    except Exception:
        return False
    origin = typing.get_origin(returned) or returned
    return isinstance(origin, type) and (
        issubclass(origin, _LIST_TYPES)
        or (origin.__module__ == "collections.abc" and issubclass(origin, Iterable))
    )


def _schema_options(prop: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The allowed values of a parameter: enum/const, through $ref and anyOf/oneOf."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return _schema_options(target, schema) if isinstance(target, Mapping) else []
    if "enum" in prop:
        return [str(v) for v in prop["enum"] if v is not None]
    if "const" in prop:
        return [str(prop["const"])]
    options: list[str] = []
    for branch in [*prop.get("anyOf", []), *prop.get("oneOf", [])]:
        if isinstance(branch, Mapping):
            options += _schema_options(branch, schema)
    return options


def _listed_options(description: str) -> list[str]:
    """The closed set of values a description offers.

    "'open', 'pending' or 'closed'" or "one of: summary, full, raw"; examples ("like 'ls' or
    'pwd'") are not a closed set.
    """
    if _EXAMPLES.search(description):
        return []
    found = _QUOTED_OPTION.findall(description)
    one_of = _ONE_OF.search(description)
    if len(found) < 2 and one_of:
        parts = re.split(r"\s*(?:,|\||/|\bor\b)\s*", one_of[1])
        found = [w.strip(".:") for w in parts if w.strip(".:")]
    return list(dict.fromkeys(found)) if len(found) >= 2 else []


def _is_mode_param(param: str, options: list[str]) -> bool:
    if len(options) < 2:
        return False
    words = _name_words(param)
    if words & _MODE_WORDS or param.lower() in _MODE_NAMES:
        return True
    verbs = sum(_is_verb(_first_word(option)) for option in options)
    return verbs >= 2 and verbs * 2 >= len(options)


def _first_word(option: str) -> str:
    words = _ordered_words(option)
    return words[0] if words else ""


def _split_names(tool_name: str, options: list[str]) -> str:
    """Tool names to split into: `create_files` for action 'create' of `manage_files`."""
    topic = _topic(tool_name)
    names = []
    for option in options[:6]:
        value = re.sub(r"\W+", "_", option).strip("_").lower()
        if _is_verb(_first_word(option)) and topic:
            names.append(f"`{value}_{topic}`")
        else:
            names.append(f"`{tool_name}_{value}`")
    return ", ".join(names)


def _topic(name: str) -> str:
    """What a tool name is about, without its verbs: 'files' for `manage_files`."""
    return "_".join(w for w in _ordered_words(name) if w not in _GENERIC and not _is_verb(w))


def _quote(text: str) -> str:
    return f'"{text}"' if len(text) <= 60 else f'"{text[:57]}..."'

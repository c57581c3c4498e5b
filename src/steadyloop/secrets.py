"""Credentials kept out of everything steadyloop shows or logs.

An API key or a password in a URL must never reach an error message, and so never the run log,
an export, the viewer, a span or the command line's output, which all show error texts.

- `clean_key`: a key as it was given, less the whitespace and line ending a `.env` file or
  `open(path).read()` leaves around it; one an HTTP header cannot carry is a `ConfigError`
  naming where it came from (never quoting it).
- `Redactor`: masks known keys, `Authorization: Bearer` and `api-key` header values, and the
  password of every URL in a text (with `shown_location`, the one masking of a URL, which the
  run log uses for its own location too); `secrets_kept` applies it to the steadyloop errors
  raised in a block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import unquote_plus

from steadyloop.errors import ConfigError, SteadyloopError

__all__ = ["Redactor", "clean_key", "secrets_kept", "shown_location"]

_MASK = "***"
# Connection parameters whose value is a secret (libpq's names).
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
_LOCATION = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<netloc>[^/?#]*)(?P<rest>.*)", re.S)


def shown_location(url: str) -> str:
    """`url` as it may be shown in messages, pages and logs: each password in it (after the user
    name, or as a `password` or `sslpassword` parameter) replaced by `***`."""
    match = _LOCATION.fullmatch(url)
    if match is None:
        return url
    user, at, hosts = match["netloc"].rpartition("@")
    netloc = f"{user.partition(':')[0]}:***@{hosts}" if at and ":" in user else match["netloc"]
    path, question, query = match["rest"].partition("?")
    query, hash_, fragment = query.partition("#")
    parameters = "&".join(_shown_parameter(item) for item in query.split("&"))
    return f"{match['head']}{netloc}{path}{question}{parameters}{hash_}{fragment}"


def _shown_parameter(item: str) -> str:
    name, equals, _ = item.partition("=")
    if equals and unquote_plus(name).strip().lower() in _SECRET_PARAMETERS:
        return f"{name}=***"
    return item


_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]+")
_HEADER_VALUES = (
    re.compile(r"(?P<head>\bBearer\s+)[^\s'\",;]+", re.IGNORECASE),
    re.compile(r"(?P<head>\b(?:x-)?api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+", re.IGNORECASE),
)
# A shorter "key" (a local server's placeholder such as "none") is no secret, and masking
# every occurrence of a short word would garble the messages it appears in.
_SHORTEST_KEY = 8


def clean_key(value: str, source: str) -> str:
    """`value` without surrounding whitespace; `source` (an environment variable or argument
    name) is named in the `ConfigError` for a key an HTTP header cannot carry."""
    key = value.strip()
    if not key.isascii() or not key.isprintable():
        raise ConfigError(
            f"{source} holds a character an HTTP header cannot carry (a non-ASCII letter, "
            "a control character or a line break inside it): set it to the key alone"
        )
    return key


class Redactor:
    """Masks `keys` (the credentials an adapter sends), header credentials and URL passwords
    in a text."""

    def __init__(self, keys: Iterable[str | None] = ()) -> None:
        found = {key.strip() for key in keys if key}
        # longest first: a key that holds another is masked whole
        self.keys = sorted((k for k in found if len(k) >= _SHORTEST_KEY), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for key in self.keys:
            text = text.replace(key, _MASK)
        for pattern in _HEADER_VALUES:
            text = pattern.sub(rf"\g<head>{_MASK}", text)
        return _URL.sub(lambda url: shown_location(url[0]), text)


@contextmanager
def secrets_kept(redact: Redactor) -> Iterator[None]:
    """Masks secrets in the message of a `SteadyloopError` raised in the block. When one of
    its causes quotes a secret (an HTTP library quoting a header it refused), the causes are
    dropped, since a traceback would print them."""
    try:
        yield
    except SteadyloopError as exc:
        exc.args = (redact(str(exc)),)
        if any(redact(str(cause)) != str(cause) for cause in _causes(exc)):
            raise exc from None
        raise


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The exceptions a traceback of `error` would print after it."""
    seen: set[int] = {id(error)}
    cause = error.__cause__ or error.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__

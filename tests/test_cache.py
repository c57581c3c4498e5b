"""`Cache` and `Agent(cache=...)`: what the APIs would refuse is a `ConfigError` when made, and
the derived `prompt_cache_key` is the same for agents built alike and differs otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from steadyloop import Agent, Cache, ConfigError
from steadyloop.cache import cache_key
from steadyloop.tools import ToolSpec

REFUSED: list[dict[str, Any]] = [
    {"messages": 4},  # five breakpoints with the prefix
    {"prefix": "1h", "messages": 4},
    {"prefix": "5m", "ttl": "1h"},  # a 1h mark after a 5m one
    {"ttl": "10m"},
    {"prefix": "2h"},
    {"messages": -1},
    {"key": ""},
    {"key": "k" * 65},
]


@pytest.mark.parametrize("options", REFUSED)
def test_settings_the_apis_refuse_are_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Cache(**options)


def test_settings_the_apis_take_are_fine() -> None:
    assert Cache(prefix=False, messages=4).prefix_ttl is None
    assert Cache(prefix="1h", ttl="5m").prefix_ttl == "1h"
    assert Cache(ttl="1h").prefix_ttl == "1h"
    assert Cache(prefix="5m", messages=0, ttl="1h").prefix_ttl == "5m"


def test_agent_takes_true_false_or_a_cache() -> None:
    assert Agent("test").cache == Cache()
    assert Agent("test", cache=False).cache is None
    assert Agent("test", cache=Cache(messages=2)).cache == Cache(messages=2)
    with pytest.raises(ConfigError, match=r"cache= is True, False or a steadyloop\.Cache"):
        Agent("test", cache="yes")  # type: ignore[arg-type]


def make_instructions() -> str:
    return "changes per run"


SPECS = (ToolSpec("get_weather", "The weather.", {"type": "object"}),)


def test_the_derived_key_follows_model_instructions_and_tools() -> None:
    key = cache_key(Cache(), "openai:gpt-5", "Be brief.", SPECS)
    assert key is not None
    assert 0 < len(key) <= 64
    assert cache_key(Cache(), "openai:gpt-5", "Be brief.", SPECS) == key
    rebuilt = (ToolSpec("get_weather", "The weather.", {"type": "object"}),)
    assert cache_key(Cache(), "openai:gpt-5", "Be brief.", rebuilt) == key
    others = {
        cache_key(Cache(), "openai:gpt-5-mini", "Be brief.", SPECS),
        cache_key(Cache(), "openai:gpt-5", "Be verbose.", SPECS),
        cache_key(Cache(), "openai:gpt-5", "Be brief.", ()),
        cache_key(Cache(), "openai:gpt-5", "Be brief.", (ToolSpec("get_weather", "", {}),)),
    }
    assert key not in others
    assert len(others) == 4
    by_name = cache_key(Cache(), "openai:gpt-5", make_instructions, SPECS)
    assert by_name == cache_key(Cache(), "openai:gpt-5", make_instructions, SPECS)
    assert by_name != key
    assert cache_key(Cache(key="mine"), "openai:gpt-5", None, ()) == "mine"
    assert cache_key(Cache(key=None), "openai:gpt-5", None, ()) is None
    assert cache_key(None, "openai:gpt-5", None, ()) is None

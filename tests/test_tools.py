"""Tools: schemas from hints and docstrings, validation the model can read, rendering results."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import functools
import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from steadyloop import Agent, ConfigError, Tool, tool
from steadyloop.testing import TestModel
from steadyloop.tools import NO_OUTPUT_TEXT, ArgumentsError, FunctionTool, as_tool, render_value


def google(city: str, days: int = 3) -> str:
    """Weather forecast for a city.

    Uses the national service.

    Args:
        city: the city name, e.g. 'Paris'.
        days: how many days ahead (1-7).
    """
    return f"{city}:{days}"


def numpy_style(city: str, days: int = 3) -> str:
    """Weather forecast for a city.

    Parameters
    ----------
    city : str
        the city name, e.g. 'Paris'.
    days : int
        how many days ahead (1-7).
    """
    return f"{city}:{days}"


def rest_style(city: str, days: int = 3) -> str:
    """Weather forecast for a city.

    :param city: the city name, e.g. 'Paris'.
    :param days: how many days ahead (1-7).
    """
    return f"{city}:{days}"


@pytest.mark.parametrize("fn", [google, numpy_style, rest_style])
def test_parameter_descriptions_come_from_any_docstring_style(fn: Any) -> None:
    spec = as_tool(fn).spec
    assert spec.name == fn.__name__
    assert spec.description.startswith("Weather forecast for a city.")
    assert "city :" not in spec.description
    assert ":param" not in spec.description
    assert "Args:" not in spec.description
    props = spec.parameters["properties"]
    assert props["city"] == {"type": "string", "description": "the city name, e.g. 'Paris'."}
    assert props["days"] == {
        "type": "integer",
        "default": 3,
        "description": "how many days ahead (1-7).",
    }
    assert spec.parameters["required"] == ["city"]
    assert spec.parameters["type"] == "object"
    assert spec.parameters["additionalProperties"] is False


def test_long_description_is_kept_and_the_args_section_is_not() -> None:
    description = as_tool(google).description
    assert "Uses the national service." in description
    assert "(1-7)" not in description


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Filter(BaseModel):
    field: str
    value: int


class Point(BaseModel):
    x: int
    y: int = 0


def test_schema_follows_type_hints() -> None:
    def search(
        query: Annotated[str, Field(min_length=1)],
        tags: list[str],
        mode: Literal["fast", "exact"] = "fast",
        colour: Colour = Colour.RED,
        since: datetime.date | None = None,
        where: Filter | None = None,
    ) -> list[str]:
        """Search."""
        return []

    params = as_tool(search).parameters
    props = params["properties"]
    assert params["required"] == ["query", "tags"]
    assert props["query"]["minLength"] == 1
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert {"format": "date", "type": "string"} in props["since"]["anyOf"]
    assert set(params["$defs"]) == {"Colour", "Filter"}
    assert params["$defs"]["Colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert set(params["$defs"]["Filter"]["properties"]) == {"field", "value"}
    assert "title" not in params
    assert all("title" not in p for p in props.values())


def test_no_parameters_gives_an_empty_object_schema() -> None:
    def now() -> str:
        """The time."""
        return "noon"

    params = as_tool(now).parameters
    assert params["properties"] == {}
    assert "required" not in params


def test_decorator_options_and_overrides() -> None:
    @tool(name="lookup", description="Find one ticket.", timeout=3, retries=2, max_output=100)
    def get_ticket(ticket_id: int) -> str:
        """Ignored docstring."""
        return str(ticket_id)

    assert isinstance(get_ticket, Tool)
    assert get_ticket.name == "lookup"
    assert get_ticket.description == "Find one ticket."
    assert (get_ticket.timeout, get_ticket.retries, get_ticket.max_output) == (3, 2, 100)
    assert get_ticket(7) == "7"  # still callable as the function it was


def test_bare_decorator_and_plain_function_get_the_defaults() -> None:
    @tool
    def ping() -> str:
        return "pong"

    plain = as_tool(google)
    for t in (ping, plain):
        assert t.timeout is None
        assert t.retries == 0
        assert t.retry_on == (TimeoutError, ConnectionError)
        assert t.max_output is None
        assert t.sequential is False
    assert ping.description == "ping (no description given)"
    assert as_tool(ping) is ping


def test_tools_given_as_a_generator_are_all_offered() -> None:
    def ping() -> str:
        return "pong"

    def pong() -> str:
        return "ping"

    agent = Agent(TestModel(), tools=(f for f in (ping, pong)))
    assert [t.name for t in agent.tools] == ["ping", "pong"]
    assert agent.run_sync("go").output is not None


def test_async_and_sync_functions_are_told_apart() -> None:
    async def fetch(url: str) -> str:
        """Fetch."""
        return url

    assert as_tool(fetch).bind({"url": "x"}).is_async is True
    assert as_tool(google).bind({"city": "x"}).is_async is False


def test_bind_validates_and_fills_defaults() -> None:
    bound = as_tool(google).bind({"city": "Oslo"})
    assert dict(bound.kwargs) == {"city": "Oslo", "days": 3}
    assert bound.fn(**bound.kwargs) == "Oslo:3"
    # lax mode: a numeric string the model sent is accepted as the int it means
    assert dict(as_tool(google).bind({"city": "Oslo", "days": "5"}).kwargs)["days"] == 5


def test_bind_builds_pydantic_models_for_nested_parameters() -> None:
    def move(to: Point) -> str:
        return f"{to.x},{to.y}"

    bound = as_tool(move).bind({"to": {"x": 1, "y": 2}})
    assert bound.fn(**bound.kwargs) == "1,2"


def test_validation_error_names_each_field_expected_and_given() -> None:
    def move(to: Point, speed: int, label: str = "") -> None: ...

    with pytest.raises(ArgumentsError) as info:
        as_tool(move).bind({"to": {"x": "left"}, "label": 5, "colour": "red"})
    text = str(info.value)
    assert text.splitlines()[0] == "invalid arguments for move:"
    assert "- to.x: Input should be a valid integer" in text
    assert "(given: 'left')" in text
    assert "- speed: required, but not given" in text
    assert "- label: Input should be a valid string" in text
    assert "(given: 5)" in text
    assert "- colour: not a parameter of move" in text


def test_long_given_values_are_shortened_in_the_error() -> None:
    with pytest.raises(ArgumentsError) as info:
        as_tool(google).bind({"city": "x", "days": "y" * 500})
    assert len(str(info.value)) < 300
    assert "..." in str(info.value)


def test_parameters_named_like_pydantic_internals_still_work() -> None:
    def odd(schema: str, model_config: int, model_fields: bool = False) -> str:
        return f"{schema}{model_config}{model_fields}"

    t = as_tool(odd)
    assert set(t.parameters["properties"]) == {"schema", "model_config", "model_fields"}
    bound = t.bind({"schema": "s", "model_config": 1})
    assert bound.fn(**bound.kwargs) == "s1False"


def test_a_parameter_named_title_keeps_its_name_and_internal_names_are_refused() -> None:
    def create_ticket(title: str, body: str = "") -> str:
        return title

    t = as_tool(create_ticket)
    assert set(t.parameters["properties"]) == {"title", "body"}
    assert dict(t.bind({"title": "broken"}).kwargs) == {"title": "broken", "body": ""}
    with pytest.raises(ArgumentsError, match="p0: not a parameter"):
        t.bind({"p0": "x", "title": "y"})


class _Row(BaseModel):
    id: int
    title: str


@dataclasses.dataclass
class _Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ("", ""),
        (None, NO_OUTPUT_TEXT),
        ({"a": 1, "b": [1, 2]}, '{"a":1,"b":[1,2]}'),
        ([1, "two", None], '[1,"two",null]'),
        (3, "3"),
        (True, "true"),
        (_Row(id=1, title="refund"), '{"id":1,"title":"refund"}'),
        ([_Row(id=2, title="x")], '[{"id":2,"title":"x"}]'),
        (_Point(1, 2), '{"x":1,"y":2}'),
        (datetime.date(2026, 11, 30), '"2026-11-30"'),
    ],
)
def test_return_values_are_rendered_for_the_model(value: object, text: str) -> None:
    assert render_value(value) == text
    assert as_tool(google).render(value).text == text


def test_none_is_an_explicit_short_text() -> None:
    assert NO_OUTPUT_TEXT
    assert "no output" in NO_OUTPUT_TEXT


def test_binary_bytes_are_rendered_not_a_failure() -> None:
    text = render_value({"name": "logo.png", "data": b"\x89PNG\xff\x00"})
    assert json.loads(text)["name"] == "logo.png"
    assert base64.urlsafe_b64decode(json.loads(text)["data"]) == b"\x89PNG\xff\x00"
    assert render_value(b"plain text") == '"plain text"'


def test_unserialisable_values_fall_back_to_repr() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<Thing 1>"

    assert render_value({"t": Thing()}) == '{"t":"<Thing 1>"}'


def _star_args(*items: str) -> None: ...


def _star_kwargs(**options: str) -> None: ...


def _positional_only(a: int, /) -> None: ...


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (_star_args, "*items"),
        (_star_kwargs, "**options"),
        (_positional_only, "positional-only"),
    ],
)
def test_signatures_a_model_cannot_call_are_config_errors(fn: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("*", r"\*")):
        as_tool(fn)


class Handle:
    pass


def test_a_parameter_type_with_no_json_schema_is_a_config_error() -> None:
    def use(handle: Handle) -> None: ...

    with pytest.raises(ConfigError, match="use"):
        as_tool(use)


def test_config_errors_are_value_errors_too() -> None:
    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=0)(google)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"timeout": -1}, "timeout"),
        ({"retries": -1}, "retries"),
        ({"max_output": -1}, "max_output"),
    ],
)
def test_bad_tool_options_are_config_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        FunctionTool(google, **options)


class Doubler:
    """Doubles numbers."""

    def __call__(self, x: int) -> int:
        """Doubles a number.

        Args:
            x: the number.
        """
        return 2 * x


def test_callable_objects_and_partials_are_tools_once_named() -> None:
    with pytest.raises(ConfigError, match="name="):
        as_tool(Doubler())
    doubler = FunctionTool(Doubler(), name="double")
    assert doubler.parameters["properties"]["x"]["type"] == "integer"
    assert dict(doubler.bind({"x": "2"}).kwargs) == {"x": 2}

    forecast = FunctionTool(functools.partial(google, days=5), name="forecast")
    assert forecast.parameters["required"] == ["city"]
    assert forecast.parameters["properties"]["days"]["default"] == 5
    bound = forecast.bind({"city": "Rome"})
    assert bound.fn(**bound.kwargs) == "Rome:5"


def test_not_a_tool_at_all_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a tool"):
        as_tool(42)  # type: ignore[arg-type]


def test_two_tools_with_one_name_are_a_config_error() -> None:
    @tool(name="google")
    def other(city: str) -> str:
        return city

    with pytest.raises(ConfigError, match="two tools are named 'google'"):
        Agent(TestModel(), tools=[google, other])


def test_annotated_field_description_is_kept_when_the_docstring_has_none() -> None:
    @tool
    def greet(name: Annotated[str, Field(description="who to greet")]) -> str:
        """Greets someone."""
        return f"hi {name}"

    assert greet.parameters["properties"]["name"]["description"] == "who to greet"

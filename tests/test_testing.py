"""The shipped fakes: TestModel's generated arguments pass the tools' own validation."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from steadyloop import Agent, ToolResult
from steadyloop.testing import TestModel


def constrained(
    pair: tuple[int, str],
    triple: tuple[bool, float, Annotated[str, Field(min_length=2)]],
    many: Annotated[tuple[int, ...], Field(min_length=2)],
    code: Annotated[str, Field(pattern=r"^[A-Z]{3}-\d{4}$")],
    slug: Annotated[str, Field(pattern=r"^(draft|live)/[a-z0-9_]+(\.md)?$")],
    other: Annotated[str, Field(pattern=r"[^a-z ]{2}x?")],
    quantity: Annotated[int, Field(multiple_of=5, ge=7)],
    dozen: Annotated[int, Field(multiple_of=12, lt=0)],
    price: Annotated[float, Field(multiple_of=0.25, gt=1.1, lt=1.4)],
    step: Annotated[float, Field(multiple_of=0.1)],
) -> str:
    """Takes tuples, patterned strings and multiples."""
    return "valid"


async def test_generated_arguments_satisfy_tuples_patterns_and_multiples() -> None:
    result = await Agent(TestModel(), tools=[constrained]).run("try")
    (answer,) = [m for m in result.messages if isinstance(m, ToolResult)]
    assert answer.content == "valid"
    assert not answer.is_error

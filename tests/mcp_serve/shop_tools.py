"""The tools `steadyloop mcp serve --tools` serves in the tests."""

from steadyloop import tool


@tool
def add(a: int, b: int) -> int:
    """Adds two whole numbers and returns the sum."""
    return a + b


@tool
def price(item: str) -> str:
    """The price of one item in the shop, in euros."""
    return f"{item}: 4.20 EUR"

"""Tools described the way they usually are at first: correct, and hard for a model to use.

Every tool here has something `steadyloop lint` flags; compare with `support_tickets.py`.

    steadyloop lint examples/bad_tools.py
"""

from __future__ import annotations

from typing import Literal

from steadyloop import tool

FILES: dict[str, str] = {"notes.txt": "call the bank"}
CUSTOMERS = ["Ada Lovelace", "Alan Turing", "Grace Hopper"]


@tool
def search(query: str) -> list[str]:
    """Search the database."""
    return [name for name in CUSTOMERS if query.lower() in name.lower()]


@tool
def manage_files(action: Literal["create", "read", "delete"], path: str, content: str = "") -> str:
    """Works with the files in the workspace; use it for anything involving files.

    Returns the file's text for 'read', otherwise a confirmation.

    Args:
        action: what to do with the file.
        path: the file's name, like 'notes.txt'.
    """
    if action == "create":
        FILES[path] = content
        return f"created {path}"
    if action == "read":
        return FILES[path]
    del FILES[path]
    return f"deleted {path}"


@tool
def convert_units(value: float, mode: str) -> float:
    """Converts a temperature or a distance; use it when the user gives a value in other units.

    Returns the converted value, unrounded.

    Args:
        value: the number to convert.
        mode: one of 'c_to_f', 'f_to_c' or 'km_to_mi'.
    """
    if mode == "c_to_f":
        return value * 9 / 5 + 32
    if mode == "f_to_c":
        return (value - 32) * 5 / 9
    return value / 1.609344


@tool
def find_customers(name: str) -> list[str]:
    """Finds customers by name; use it when you need a customer's full name.

    Returns up to 10 full names, in alphabetical order.

    Args:
        name: part of the customer's name.
    """
    return sorted(c for c in CUSTOMERS if name.lower() in c.lower())[:10]


@tool
def weather(city: str) -> str:
    """The current weather in a city; use it when the user asks what the weather is like now.

    Returns the temperature in °C and a one-line summary, like '14 °C, light rain'.

    Args:
        city: the city's name in English, like 'Lisbon'.
    """
    return f"14 °C, light rain in {city}"


@tool
def run(x: str) -> str:
    return x.upper()

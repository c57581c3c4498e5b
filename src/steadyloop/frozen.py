"""Fast construction of the frozen value types made on every call or reply.

A frozen slotted dataclass's generated `__init__` sets each field with `object.__setattr__`.
The few types made once per call or reply (`Usage`, `RunContext`, `ToolInvocation`,
`PendingCall`) write their own `__init__` (`init=False`) that sets each slot through its
descriptor instead, at about half the cost; everything else about them (equality, hash, repr,
pickling, `dataclasses.replace`) is the dataclass's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

__all__ = ["slot_setters"]


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of frozen slotted dataclass `cls`'s fields, in field order."""
    return tuple(cls.__dict__[f.name].__set__ for f in fields(cls))

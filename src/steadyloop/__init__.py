"""steadyloop: LLM agent loops that hold up with real inputs.

Call the model, run the tools it asks for in parallel, send fixable errors back as text, raise
the rest, stop at hard turn and context limits, cut huge tool output keeping both ends, and never
edit the conversation behind the model's back.

Beside these names, the public modules are `steadyloop.models` (the adapters), `.testing` (fake
models), `.store` (the run log), `.mcp`, `.tracing`, `.batch`, `.engines.dbos`, `.cli`, and the
single modules `events`, `effects`, `errors`, `messages`, `tools`, `retry`, `lint` and `replay`;
the other modules are internal and may move.

The names below are imported on first use, so `import steadyloop` costs next to nothing and a
command that needs only part of the library loads only that part.
"""

# Imported now: the module `steadyloop.truncate` would otherwise hide the function of that name.
from steadyloop.truncate import truncate

# `typing.TYPE_CHECKING` without importing typing; type checkers read this block as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.approvals import Approve, Defer, Deny, Edit, PendingCall
    from steadyloop.cache import Cache
    from steadyloop.compaction import Compaction
    from steadyloop.context import RunContext
    from steadyloop.errors import (
        ConfigError,
        ContextLimitExceeded,
        ContextWindowExceeded,
        CostLimitExceeded,
        FatalToolError,
        LimitExceeded,
        ModelError,
        RepeatLimitExceeded,
        RunLogError,
        SteadyloopError,
        ToolCallLimitExceeded,
        ToolError,
        TurnLimitExceeded,
    )
    from steadyloop.fallback import Fallback
    from steadyloop.limits import Limits
    from steadyloop.media import Document, Image
    from steadyloop.messages import (
        AssistantMessage,
        Message,
        Summary,
        ToolCall,
        ToolResult,
        Usage,
        UserMessage,
    )
    from steadyloop.result import RunResult
    from steadyloop.retry import Backoff
    from steadyloop.tools import Tool, Toolset, tool
    from steadyloop.tracing import instrument, uninstrument

# Each public name and the module that defines it (the imports above, for type checkers).
_HOMES = {
    "Agent": "agent",
    **dict.fromkeys(("Approve", "Defer", "Deny", "Edit", "PendingCall"), "approvals"),
    "Cache": "cache",
    "Compaction": "compaction",
    "RunContext": "context",
    **dict.fromkeys(
        (
            "ConfigError",
            "ContextLimitExceeded",
            "ContextWindowExceeded",
            "CostLimitExceeded",
            "FatalToolError",
            "LimitExceeded",
            "ModelError",
            "RepeatLimitExceeded",
            "RunLogError",
            "SteadyloopError",
            "ToolCallLimitExceeded",
            "ToolError",
            "TurnLimitExceeded",
        ),
        "errors",
    ),
    "Fallback": "fallback",
    "Limits": "limits",
    **dict.fromkeys(("Document", "Image"), "media"),
    **dict.fromkeys(
        (
            "AssistantMessage",
            "Message",
            "Summary",
            "ToolCall",
            "ToolResult",
            "Usage",
            "UserMessage",
        ),
        "messages",
    ),
    "RunResult": "result",
    "Backoff": "retry",
    **dict.fromkeys(("Tool", "Toolset", "tool"), "tools"),
    **dict.fromkeys(("instrument", "uninstrument"), "tracing"),
}

__all__ = [
    "Agent",
    "Approve",
    "AssistantMessage",
    "Backoff",
    "Cache",
    "Compaction",
    "ConfigError",
    "ContextLimitExceeded",
    "ContextWindowExceeded",
    "CostLimitExceeded",
    "Defer",
    "Deny",
    "Document",
    "Edit",
    "Fallback",
    "FatalToolError",
    "Image",
    "LimitExceeded",
    "Limits",
    "Message",
    "ModelError",
    "PendingCall",
    "RepeatLimitExceeded",
    "RunContext",
    "RunLogError",
    "RunResult",
    "SteadyloopError",
    "Summary",
    "Tool",
    "ToolCall",
    "ToolCallLimitExceeded",
    "ToolError",
    "ToolResult",
    "Toolset",
    "TurnLimitExceeded",
    "Usage",
    "UserMessage",
    "instrument",
    "tool",
    "truncate",
    "uninstrument",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use and kept here after that."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""steadyloop: LLM agent loops that hold up with real inputs.

Call the model, run the tools it asks for in parallel, send fixable errors back as text, raise
the rest, stop at hard turn and context limits, cut huge tool output keeping both ends, and never
edit the conversation behind the model's back.

Beside these names, the public modules are `steadyloop.models` (the adapters), `.testing` (fake
models), `.store` (the run log), `.mcp`, `.tracing`, `.batch`, `.engines.dbos`, `.cli`, and the
single modules `events`, `effects`, `errors`, `messages`, `tools`, `retry`, `lint` and `replay`;
the other modules are internal and may move.
"""

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
from steadyloop.truncate import truncate

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

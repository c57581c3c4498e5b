"""`RunConfig`: what a run takes from its agent, and the config logged with the run.

An `Agent` stays mutable (an engine adds its effects, a batch worker its log and durability);
each run takes a frozen snapshot of it as it starts, so the loop never reads the agent and a
change made mid-run reaches only later runs. The snapshot is logged with the run (`to_dict`,
the run log's `config` column) and read back by `replay` and the command line's `resume`
(`from_dict`): one schema, one set of defaults. Logs written before `RunConfig` existed hold the
same JSON, so they read back alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from steadyloop.compaction import Compaction, Summariser
from steadyloop.context import check_instructions
from steadyloop.errors import ConfigError
from steadyloop.limits import Limits, TokenEstimator, estimate_tokens
from steadyloop.retry import Backoff

if TYPE_CHECKING:
    from steadyloop.approvals import Approver
    from steadyloop.cache import Cache
    from steadyloop.context import Instructions
    from steadyloop.effects import Effects
    from steadyloop.models.base import Model
    from steadyloop.output import OutputCheck

__all__ = ["Durability", "RunConfig", "check_settings"]

Durability = Literal["turn", "batch"]
MAX_TOOL_OUTPUT = 8_000
TOOL_TIMEOUT = 120.0

# The keys `to_dict` writes from the fields; any other logged key is metadata.
_LOGGED = ("model", "instructions", "limits", "max_tool_output", "tool_timeout", "tools",
           "compaction")  # fmt: skip


@dataclass(frozen=True, kw_only=True, slots=True)
class RunConfig:
    """The settings of one run, as its agent had them when the run started (see `Agent` for
    each one's meaning). `durability` and `metadata` are for the run log: how often it commits,
    and the extra facts logged with the run; the model, tool and approval settings are the
    loop's and the dispatcher's. `cache` is not logged (a replay sends nothing to cache)."""

    model: Model
    instructions: Instructions | None = None
    limits: Limits = field(default_factory=Limits)
    max_tool_output: int = MAX_TOOL_OUTPUT
    tool_timeout: float = TOOL_TIMEOUT
    compaction: Compaction | None = None
    backoff: Backoff = field(default_factory=Backoff)
    model_retries: int = 2
    estimate_tokens: TokenEstimator = estimate_tokens
    effects: Effects | None = None
    approver: Approver | None = None
    output_check: OutputCheck | None = None
    cache: Cache | None = None
    durability: Durability = "turn"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self, tools: Sequence[str]) -> dict[str, Any]:
        """The config logged with the run (JSON), given the names of the tools it may call.

        Callable instructions log None: the text each run made is logged with it instead.
        """
        limits, compaction = self.limits, self.compaction
        return {
            "model": self.model.name,
            "instructions": None if callable(self.instructions) else self.instructions,
            "limits": {
                "max_turns": limits.max_turns,
                "max_context_tokens": limits.max_context_tokens,
                "max_repeats": limits.max_repeats,
                "max_cost_usd": limits.max_cost_usd,
                "max_same_results": limits.max_same_results,
                "max_tool_calls": limits.max_tool_calls,
            },
            "max_tool_output": self.max_tool_output,
            "tool_timeout": self.tool_timeout,
            "tools": list(tools),
            "compaction": (
                {"keep_recent": compaction.keep_recent, "trigger": compaction.trigger}
                if compaction is not None
                else None
            ),
            **self.metadata,
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, model: Model, summarise: Summariser | None = None
    ) -> RunConfig:
        """The config a logged run was made with, around `model` (the log has only its name).

        What the log cannot hold is left at its default (backoff, effects, approver, output
        check, cache); `summarise` writes the summaries of a run that compacted. Keys the log lacks
        (a log written by an older version) take their defaults; keys it has beyond the
        config's own are the run's `metadata`.
        """
        logged = data.get("compaction")
        return cls(
            model=model,
            instructions=data.get("instructions"),
            limits=Limits(**data.get("limits", {})),
            max_tool_output=data.get("max_tool_output", MAX_TOOL_OUTPUT),
            tool_timeout=data.get("tool_timeout", TOOL_TIMEOUT),
            compaction=(
                Compaction(logged["keep_recent"], logged["trigger"], summarise) if logged else None
            ),
            metadata={key: value for key, value in data.items() if key not in _LOGGED},
        )


def check_settings(
    max_tool_output: int,
    tool_timeout: float,
    model_retries: int,
    durability: object,
    instructions: object,
) -> None:
    """A `ConfigError` for a setting no run can take, raised as the agent is made."""
    if max_tool_output < 0:
        raise ConfigError(f"max_tool_output must be >= 0, got {max_tool_output}")
    if tool_timeout <= 0:
        raise ConfigError(f"tool_timeout must be > 0 seconds, got {tool_timeout}")
    if model_retries < 0:
        raise ConfigError(f"model_retries must be >= 0, got {model_retries}")
    if durability not in ("turn", "batch"):
        raise ConfigError(f'durability must be "turn" or "batch", got {durability!r}')
    check_instructions(instructions)

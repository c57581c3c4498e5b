"""Tools: plain Python functions described to the model by their type hints and docstrings.

`@tool` turns a function (sync or async) into a `Tool`: a JSON schema built with pydantic from
the signature, parameter descriptions taken from Google, NumPy or reST docstrings, and arguments
validated before the function runs, so a bad call becomes an error the model can read and fix.
Other kinds of tools (MCP) subclass `Tool` and override `bind` and `render`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, overload

from steadyloop import texts
from steadyloop.errors import ConfigError
from steadyloop.messages import ArgumentsError, Image, Usage

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "ArgumentsError",
    "BoundCall",
    "FunctionTool",
    "Tool",
    "ToolOutput",
    "ToolSpec",
    "Toolset",
    "as_tool",
    "check_unique_names",
    "render_value",
    "tool",
]

NO_OUTPUT_TEXT = texts.NO_OUTPUT
NO_DESCRIPTION = texts.NO_DESCRIPTION
DEFAULT_RETRY_ON: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)

# `approve=`: True gates every call; a function gates the calls whose arguments it returns True for.
Gate = bool | Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(slots=True)  # not frozen: one for every call, and a frozen one is slower to make
class ToolOutput:
    """A tool's return value rendered for the model, before truncation. `usage`: what the call
    spent on models (a sub-agent's run), added to the calling run's usage."""

    text: str
    images: tuple[Image, ...] = ()
    is_error: bool = False
    usage: Usage | None = None


@dataclass(slots=True)  # not frozen: one for every call, and a frozen one is slower to make
class BoundCall:
    """A validated call, ready to run: `fn(**kwargs)`, awaited when `is_async`."""

    fn: Callable[..., Any]
    kwargs: Mapping[str, Any]
    is_async: bool


class Tool:
    """Something the model can call. Subclasses provide `bind`; `render` has a sensible default.

    The options mean: `timeout` seconds per attempt, counted from when the tool's code starts
    (None: the agent's `tool_timeout`);
    `retries` extra attempts for exceptions in `retry_on`; `max_output` characters the model
    reads (None: the agent's `max_tool_output`); `sequential` calls never overlap each other;
    `idempotent` calls may be run again when a resumed run finds them unfinished; `approve`
    gates calls on a decision (`Agent(approver=...)`, or a paused run resumed with one):
    True for every call, or `fn(arguments) -> bool` for some. `max_calls`: how many calls of
    the tool one run may make (None: no limit); the calls after it are answered "not run".
    `context_types` maps each parameter the dispatcher fills in with the call's `RunContext`
    (after `bind`, which leaves them out) to the deps type it expects.
    """

    starts_runs: ClassVar[bool] = False
    """True for a tool whose calls run another agent (`Agent.as_tool`): a run that offers one
    lets the child runs find it (`steadyloop.runs.CALLER`)."""

    def __init__(
        self,
        spec: ToolSpec,
        *,
        timeout: float | None = None,
        retries: int = 0,
        retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
        max_output: int | None = None,
        sequential: bool = False,
        idempotent: bool = False,
        approve: Gate = False,
        max_calls: int | None = None,
    ) -> None:
        if not spec.name:
            raise ConfigError("a tool needs a non-empty name")
        if max_calls is not None and (
            isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1
        ):
            raise ConfigError(
                f"tool {spec.name!r}: max_calls must be a positive int or None, got {max_calls!r}"
            )
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"tool {spec.name!r}: timeout must be > 0 seconds, got {timeout}")
        if retries < 0:
            raise ConfigError(f"tool {spec.name!r}: retries must be >= 0, got {retries}")
        if max_output is not None and max_output < 0:
            raise ConfigError(f"tool {spec.name!r}: max_output must be >= 0, got {max_output}")
        self.spec = spec
        self.timeout = timeout
        self.retries = retries
        self.retry_on = retry_on
        self.max_output = max_output
        self.sequential = sequential
        self.idempotent = idempotent
        self.approve = approve
        self.max_calls = max_calls
        self.context_types: Mapping[str, Any] = {}

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.spec.parameters

    def bind(self, arguments: Mapping[str, Any]) -> BoundCall:
        """Validates `arguments`; raises `ArgumentsError` with a message for the model.

        The call's `RunContext` parameters (`context_types`) are not among the arguments: the
        dispatcher adds them to the bound call.
        """
        raise NotImplementedError

    def render(self, value: Any) -> ToolOutput:
        """Turns what the call returned into text for the model."""
        return ToolOutput(render_value(value))

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with these (valid) arguments waits for a decision before it runs."""
        approve = self.approve
        return approve(arguments) if callable(approve) else approve

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class Toolset:
    """A source of tools that must be started first (an MCP server, say).

    The agent calls `tools()` once per run before the first model call, and `aclose()` when the
    caller closes the agent. Subclasses start lazily in `tools()`. A toolset whose tools may
    have changed calls `tools_changed()`: every run using it calls `tools()` again before its
    next model call, and offers the new list from then on.
    """

    revision = 0
    """How many times this toolset said its tools changed."""

    async def tools(self) -> Sequence[Tool]:
        """The tools this source offers; starts it if needed. Raises `ConfigError` on failure."""
        raise NotImplementedError

    def tools_changed(self) -> None:
        """Says the tools may have changed since `tools()` last returned them."""
        self.revision += 1

    async def aclose(self) -> None:
        """Stops whatever `tools()` started; safe to call more than once."""


def render_value(value: Any) -> str:
    """A str as is; None as a short explicit note; anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return NO_OUTPUT_TEXT
    import pydantic_core

    try:
        return pydantic_core.to_json(value, fallback=repr).decode()
    except pydantic_core.PydanticSerializationError:
        # bytes that are not UTF-8 (an image, a binary file): base64 rather than a failed call
        return pydantic_core.to_json(value, fallback=repr, bytes_mode="base64").decode()


class FunctionTool(Tool):
    """A Python function as a tool. Calling the object calls the function unchanged.

    Parameters annotated `RunContext[...]`, wherever they stand, are not shown to the model:
    the dispatcher fills them in with the context of the call being answered.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        retries: int = 0,
        retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
        max_output: int | None = None,
        sequential: bool = False,
        idempotent: bool = False,
        approve: Gate = False,
        max_calls: int | None = None,
    ) -> None:
        from steadyloop.schema import describe_function

        tool_name = name or str(getattr(fn, "__name__", ""))
        model, spec, context_types = describe_function(fn, tool_name, description)
        super().__init__(
            spec,
            timeout=timeout,
            retries=retries,
            retry_on=retry_on,
            max_output=max_output,
            sequential=sequential,
            idempotent=idempotent,
            approve=approve,
            max_calls=max_calls,
        )
        self.fn = fn
        self.context_types = context_types
        self._model: type[BaseModel] = model
        self._is_async = inspect.iscoroutinefunction(fn)
        from pydantic import ValidationError

        # Bound once: validation runs on every call, and lookups add up on the hot path.
        self._validate = model.__pydantic_validator__.validate_python
        self._validation_error = ValidationError
        self._renames = tuple((k, f.alias or k) for k, f in model.model_fields.items())
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def bind(self, arguments: Mapping[str, Any]) -> BoundCall:
        try:
            values = self._validate(arguments).__dict__
        except self._validation_error as exc:
            from steadyloop.schema import describe_validation_error

            raise ArgumentsError(describe_validation_error(self.name, exc)) from None
        kwargs = {param: values[field] for field, param in self._renames}
        return BoundCall(self.fn, kwargs, self._is_async)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    retries: int = 0,
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
    max_output: int | None = None,
    sequential: bool = False,
    idempotent: bool = False,
    approve: Gate = False,
    max_calls: int | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    retries: int = 0,
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
    max_output: int | None = None,
    sequential: bool = False,
    idempotent: bool = False,
    approve: Gate = False,
    max_calls: int | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Makes a function a tool: `@tool` or `@tool(timeout=30, retries=2, ...)`.

    Args:
        name: the name the model calls it by (default: the function's name).
        description: what the model is told (default: the docstring without its Args section).
        timeout: seconds per attempt, counted from when the tool's code starts, before the
            call is answered "timed out" (default: the agent's `tool_timeout`).
        retries: extra attempts when the tool raises one of `retry_on` (2 means up to 3 tries).
        retry_on: transient exception types worth retrying, with backoff.
        max_output: characters of output the model reads (default: the agent's
            `max_tool_output`); the rest is cut from the middle.
        sequential: calls to this tool never overlap; several in one turn run in call order.
        idempotent: safe to run again when a resumed run finds the call unfinished.
        approve: True to have every call approved before it runs, or `fn(arguments) -> bool`
            for the calls that need it (see `Agent(approver=...)` and `Agent.resume`).
        max_calls: how many times one run may call it (default: no limit); each call after
            that is answered "not run: NAME may be called at most N times in one run".
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            retries=retries,
            retry_on=retry_on,
            max_output=max_output,
            sequential=sequential,
            idempotent=idempotent,
            approve=approve,
            max_calls=max_calls,
        )

    return wrap(fn) if fn is not None else wrap


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """A `Tool` as is; a plain function wrapped with the default options."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return FunctionTool(obj)
    raise ConfigError(f"not a tool or a function: {obj!r}")


def check_unique_names(tools: Sequence[Tool]) -> None:
    """`ConfigError` when two tools share a name: the model could not tell them apart."""
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ConfigError(
                f"two tools are named {tool.name!r}: give one another name with "
                "@tool(name=...), or pass prefix='...' to one of the MCP servers"
            )
        seen.add(tool.name)

"""JSON schemas for Python functions and answer types, and validation errors worded for the model.

The schema comes from the signature's type hints through a pydantic model; descriptions come
from the docstring (Google, NumPy or reST), so the docstring a developer writes is the prompt the
model reads. A typed answer (`Agent(output=...)`) is described by the same code: an object type
(a pydantic model, dataclass or TypedDict) as its own fields, any other type as one field named
`value`; its errors read like any tool's. Imported lazily: pydantic is not loaded until a tool is
defined.
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from steadyloop.context import context_type
from steadyloop.errors import ConfigError
from steadyloop.tools import NO_DESCRIPTION

__all__ = ["describe_function", "describe_output", "describe_validation_error"]

_PREVIEW = 80


def describe_function(
    fn: Callable[..., Any], name: str, description: str | None
) -> tuple[type[BaseModel], Any, dict[str, Any]]:
    """Returns the validation model for `fn`'s parameters, the `ToolSpec` the model sees, and
    the parameters annotated `RunContext[X]` (left out of both) with their deps type `X`."""
    from steadyloop.tools import ToolSpec

    if not name:
        raise ConfigError(f"cannot name a tool for {fn!r}: pass name=...")
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    model, context = _arguments_model(fn, name, param_docs)
    schema = _parameters_schema(model.model_json_schema, f"tool {name!r}: its parameters")
    text = description if description is not None else _description_from(doc)
    if not text.strip():
        text = f"{name} {NO_DESCRIPTION}"
    return model, ToolSpec(name=name, description=text, parameters=schema), context


def describe_output(
    output_type: Any, name: str, description: str
) -> tuple[Callable[[Any], Any], Any]:
    """Returns a validator of the answer's arguments (giving the typed value) and the
    `ToolSpec` of the tool the model answers with.

    An object type is sent as its own fields; any other type (`int`, `list[str]`, a union) is
    wrapped as one field named `value`. The validator raises `ValidationError`.
    """
    from steadyloop.tools import ToolSpec

    what = f"output={_type_name(output_type)}"
    output_type = _portable(output_type)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"{what}: pydantic cannot build a schema for it ({reason}); use a pydantic model, "
            "a dataclass, a TypedDict, or a type such as int, list[str] or Literal[...]"
        ) from exc
    schema = _parameters_schema(adapter.json_schema, what)
    if schema.get("type") == "object" and schema.get("properties"):
        return adapter.validate_python, ToolSpec(name, description, schema)
    wrapped = _model(name, {"p0": (output_type, Field(..., alias="value"))})
    schema = _parameters_schema(wrapped.model_json_schema, what)
    validate = wrapped.__pydantic_validator__.validate_python

    def unwrap(arguments: Any) -> Any:
        return validate(arguments).p0

    return unwrap, ToolSpec(name, description, schema)


def _portable(hint: Any, making: frozenset[Any] = frozenset()) -> Any:
    """`hint` with each `typing.TypedDict` in it made again with `typing_extensions.TypedDict`,
    the only kind pydantic reads before Python 3.12 (the values are plain dicts either way)."""
    if sys.version_info >= (3, 12):
        return hint
    if typing.is_typeddict(hint) and type(hint).__module__ == "typing" and hint not in making:
        try:
            hints = typing.get_type_hints(hint, include_extras=True)
        except Exception as exc:
            raise ConfigError(
                f"the TypedDict {hint.__name__} has a field type that cannot be resolved "
                f"({exc}), so it cannot be read on Python < 3.12: define it with "
                "typing_extensions.TypedDict"
            ) from exc
        import typing_extensions

        fields = {key: _portable(value, making | {hint}) for key, value in hints.items()}
        made: Any = typing_extensions.TypedDict(hint.__name__, fields, total=hint.__total__)  # type: ignore[misc]
        made.__module__, made.__doc__ = hint.__module__, hint.__doc__
        return made
    args = typing.get_args(hint)
    portable = tuple(_portable(arg, making) for arg in args)
    if portable == args:
        return hint
    origin = typing.get_origin(hint)
    if origin is types.UnionType:
        return functools.reduce(operator.or_, portable)
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(origin, portable)
    if origin is typing.Annotated:
        return typing.Annotated[portable]
    return hint.copy_with(portable)


def _parameters_schema(make: Callable[[], dict[str, Any]], what: str) -> dict[str, Any]:
    """The JSON schema `make()` builds, without titles; `ConfigError` when it cannot."""
    try:
        schema = _drop_titles(make())
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"{what} cannot be described as JSON schema ({reason}); "
            "use types a model can send: str, int, float, bool, lists, dicts, pydantic models"
        ) from exc
    schema.setdefault("properties", {})  # some providers want it even for no parameters
    return schema


def _type_name(value: Any) -> str:
    return value.__name__ if isinstance(value, type) else repr(value)


def _description_from(doc: docstring_parser.Docstring) -> str:
    parts = [doc.short_description or "", doc.long_description or ""]
    if doc.returns is not None and doc.returns.description:
        parts.append(f"Returns: {doc.returns.description}")
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _arguments_model(
    fn: Callable[..., Any], name: str, param_docs: dict[str, str]
) -> tuple[type[BaseModel], dict[str, Any]]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"tool {name!r}: cannot read the signature of {fn!r}: {exc}") from exc
    try:
        hints = _type_hints(fn)
    except (TypeError, ValueError, NameError) as exc:
        raise ConfigError(
            f"tool {name!r}: cannot resolve its annotations ({exc}); define the types they "
            "name at module level, where the function's module can find them"
        ) from exc
    fields: dict[str, Any] = {}
    context: dict[str, Any] = {}
    for index, (param_name, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(
                f"tool {name!r}: *{param_name} / **{param_name} cannot be described to a model; "
                "give each argument its own named parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigError(
                f"tool {name!r}: parameter {param_name!r} is positional-only; tools are called "
                "with keyword arguments"
            )
        annotation = hints.get(param_name, Any)
        is_context, deps = context_type(annotation)
        if is_context:  # filled in when the tool runs; the model never sees it
            context[param_name] = deps
            continue
        default = ... if param.default is param.empty else param.default
        # Fields get neutral names with the parameter name as alias, so a parameter called
        # `schema` or `model_config` cannot clash with BaseModel's own attributes.
        doc = param_docs.get(param_name)
        # The docstring's description is set only when there is one, so that a description
        # given with Annotated[..., Field(description=...)] is not wiped out.
        info = (
            Field(default, alias=param_name, description=doc)
            if doc
            else Field(default, alias=param_name)
        )
        fields[f"p{index}"] = (annotation, info)
    return _model(name, fields), context


def _model(name: str, fields: dict[str, Any]) -> type[BaseModel]:
    """The validation model of a tool's arguments: unknown fields are errors the model reads."""
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=False)
    try:
        return create_model(f"{name}_arguments", __config__=config, **fields)
    except Exception as exc:
        raise ConfigError(
            f"tool {name!r}: cannot build a schema for its parameters: {exc}"
        ) from exc


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """`fn`'s type hints, looking through partials and into a callable object's `__call__`."""
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isroutine(target) or inspect.isclass(target)):
        target = type(target).__call__
    return typing.get_type_hints(target, include_extras=True)


def _drop_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """Drops pydantic's generated titles: noise in the prompt, and not part of the contract."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    for definition in schema.get("$defs", {}).values():
        if isinstance(definition, dict):
            _drop_titles(definition)
    return schema


def describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    """One line per bad field: where, what was expected, and what was given."""
    lines = [f"invalid arguments for {tool_name}:"]
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "missing":
            lines.append(f"- {where}: required, but not given")
        elif error["type"] == "extra_forbidden":
            lines.append(f"- {where}: not a parameter of {tool_name}")
        else:
            given = repr(error.get("input"))
            if len(given) > _PREVIEW:
                given = given[:_PREVIEW] + "..."
            lines.append(f"- {where}: {error['msg']} (given: {given})")
    return "\n".join(lines)

"""Tools from a Python file given by path, for `steadyloop run --tools FILE.py` and `lint FILE.py`
(and the answer type of `run --output FILE.py:NAME`).

The file is imported under a private module name (so its `if __name__ == "__main__":` block does
not run), able to import the modules next to it as a script can. Then every `Tool` object in its
namespace is collected (`@tool` functions), plus the items of a module-level `tools` list if
there is one (plain functions there are wrapped with the default options). Everything that can
go wrong, from a wrong path to a file that raises while importing, becomes one `ConfigError`
whose message names the file and says what to change.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.tools import FunctionTool, Tool, as_tool

__all__ = ["load_from_file", "load_tools_from_file"]


def load_tools_from_file(path: str | os.PathLike[str]) -> list[Tool]:
    """The tools defined in the Python file at `path`, in definition order.

    Raises `ConfigError` when the file is missing, unreadable or not a `.py` file, raises while
    importing, defines no tools, or defines two tools with the same name.
    """
    file = Path(path)
    _check_readable(file, "tools file")
    module = _import(file, "tools file")
    found = _collect(module, file)
    if not found:
        raise ConfigError(
            f"{file} defines no tools: decorate functions with @tool, or list them in a "
            "module-level `tools = [...]`"
        )
    _check_unique_names(found, file)
    return found


def load_from_file(spec: str) -> Any:
    """The type `NAME` defined in the Python file of `FILE.py:NAME` (for `run --output`).

    Raises `ConfigError` when the spec has no `:NAME`, the file cannot be imported, or it
    defines no such name, or the name is not a type (a function, say: its return value would
    not be the answer).
    """
    path, _, name = spec.rpartition(":")
    if not path or not name.isidentifier():
        raise ConfigError(f"expected FILE.py:NAME (such as models.py:Refund), got {spec!r}")
    file = Path(path)
    _check_readable(file, "file")
    module = _import(file, "file")
    if not hasattr(module, name):
        raise ConfigError(f"{file} defines no {name!r}: check the name after the colon")
    found = getattr(module, name)
    if not isinstance(found, type) and typing.get_origin(found) is None:
        raise ConfigError(
            f"{file}:{name} is a {type(found).__name__}, not a type: name the answer's class "
            "(a pydantic model, a dataclass or a TypedDict)"
        )
    return found


def _check_readable(file: Path, what: str) -> None:
    if file.suffix != ".py":
        raise ConfigError(f"{file} is not a Python file: {what}s must end in .py")
    try:
        with file.open("rb"):
            pass
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} not found: {file} (check the path)") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{file} is a directory: pass a Python file, like tools.py") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {file}: {exc.strerror or exc}") from exc


def _import(file: Path, what: str) -> ModuleType:
    """Runs the file as a fresh module; an exception while it runs becomes a `ConfigError`.

    Like a script, the file may import the modules next to it: its folder leads `sys.path` while
    the file runs, then stays at the end of it, so imports inside its tools still find those
    modules, but a file there cannot shadow an installed package imported later (`openai.py`).
    """
    path = file.resolve()
    digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:10]
    stem = re.sub(r"\W", "_", file.stem)
    name = f"_steadyloop_toolfile_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before running, as a normal import is: dataclasses and pickling look it up.
    sys.modules[name] = module
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        detail = f": {exc}" if str(exc) else ""
        raise ConfigError(f"{what} {file} raised {type(exc).__name__} on import{detail}") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    if folder not in sys.path:
        sys.path.append(folder)
    return module


def _collect(module: ModuleType, file: Path) -> list[Tool]:
    found: list[Tool] = []
    seen: set[int] = set()

    def add(item: Any, tool: Tool) -> None:
        if id(item) not in seen:
            seen.add(id(item))
            found.append(tool)

    namespace = vars(module)
    for value in namespace.values():
        if isinstance(value, Tool):
            add(value, value)
    listed = namespace.get("tools")
    if listed is None or isinstance(listed, ModuleType):
        return found
    if not isinstance(listed, list | tuple):
        raise ConfigError(
            f"{file}: `tools` must be a list of tools or functions, got {type(listed).__name__}"
        )
    for index, item in enumerate(listed):
        try:
            add(item, as_tool(item))
        except ConfigError as exc:
            raise ConfigError(f"{file}: tools[{index}]: {exc}") from exc
    return found


def _check_unique_names(found: list[Tool], file: Path) -> None:
    by_name: dict[str, Tool] = {}
    for tool in found:
        first = by_name.setdefault(tool.name, tool)
        if first is not tool:
            raise ConfigError(
                f"{file}: two tools are named {tool.name!r} ({_origin(first)} and "
                f"{_origin(tool)}): give one another name with @tool(name=...)"
            )


def _origin(tool: Tool) -> str:
    """Where a tool was defined, for error messages: the function and its line when known."""
    if isinstance(tool, FunctionTool):
        code = getattr(tool.fn, "__code__", None)
        where = f" at line {code.co_firstlineno}" if code is not None else ""
        return f"function {getattr(tool.fn, '__qualname__', tool.fn)!r}{where}"
    return repr(tool)

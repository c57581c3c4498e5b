"""What the model reads of a tool call that did not give its answer (the error contract).

The message of an error the model can fix (`ToolError`, `TypeError`, `ValueError`); only the
type of any other exception, which is logged with its traceback for the developer; the words of
a call our deadline cut short, of one that stopped the run, and of one cancelled with it. The
sentences themselves live in `texts`.
"""

from __future__ import annotations

import logging

from steadyloop import texts
from steadyloop.errors import ToolError
from steadyloop.events import ToolCallFinished
from steadyloop.messages import ToolCall, ToolResult

__all__ = [
    "Failure",
    "TimedOut",
    "cancelled",
    "failure",
    "failure_text",
    "stop_text",
    "stopped",
    "unexpected",
]

logger = logging.getLogger("steadyloop.dispatch")


class Failure(Exception):
    """A call failed in a way the model should read about; `text` is what it reads.

    `attempts` is how many times the tool ran (0 when it never did).
    """

    def __init__(self, text: str, attempts: int = 0) -> None:
        super().__init__(text)
        self.text = text
        self.attempts = attempts


class TimedOut(Failure, TimeoutError):
    """Our own deadline expired: retryable like any TimeoutError, worded for the model."""


def failure_text(tool_name: str, exc: BaseException) -> str:
    """What the model reads of an exception a tool raised: the message of errors it can fix,
    only the type of the others (which are logged with their traceback)."""
    return failure(tool_name, exc).text


def failure(tool_name: str, exc: BaseException) -> Failure:
    """What the model reads: the message of errors it can fix, only the type of the others."""
    if isinstance(exc, (ToolError, TypeError, ValueError)):
        return Failure(str(exc) or type(exc).__name__)
    return unexpected(tool_name, exc)


def unexpected(tool_name: str, exc: BaseException) -> Failure:
    """An exception the model cannot fix: logged with its traceback, only its type told."""
    logger.error("tool %s failed", tool_name, exc_info=exc)
    return Failure(texts.FAILED.format(tool=tool_name, exception_type=type(exc).__name__))


def stop_text(call: ToolCall, error: BaseException) -> str:
    """The answer of a call that stopped the run with `error`."""
    kind = type(error).__name__
    return texts.STOPPED.format(tool=call.name, exception_type=kind, error=error).rstrip(": ")


def stopped(call: ToolCall, error: BaseException) -> ToolCallFinished:
    """A call answered as having stopped the run (an effect around it raised `error`)."""
    text = stop_text(call, error)
    result = ToolResult(call.id, call.name, text, is_error=True)
    return ToolCallFinished(call, result, text, 0.0, 0)


def cancelled(call: ToolCall) -> ToolCallFinished:
    """A call the run stopped before it ended: its outcome is unknown."""
    result = ToolResult(call.id, call.name, texts.CANCELLED, is_error=True)
    return ToolCallFinished(call, result, texts.CANCELLED, 0.0, 0, cancelled=True)

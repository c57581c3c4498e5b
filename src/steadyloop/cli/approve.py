"""`steadyloop run --approve`: a person at the terminal decides each gated call, y/n/e.

The question goes to stderr and the answer comes from stdin, read on the event loop as it
arrives, so the other calls of the turn go on meanwhile and Ctrl-C stops the question at once
(no thread is left waiting for a line); the live view stands aside while it is asked. End of
input (Ctrl-D) leaves the call waiting: the run pauses and `steadyloop resume` decides it later.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import IO, Any

from steadyloop.approvals import Approve, Decision, Defer, Deny, Edit, PendingCall
from steadyloop.cli.live import View
from steadyloop.context import RunContext

__all__ = ["InputLines", "Terminal", "terminal_approver"]


def terminal_approver(
    view: View, read: Callable[[], str] | None = None, out: IO[str] | None = None
) -> Callable[[PendingCall, RunContext[Any]], Any]:
    """An approver that asks y (approve), n (deny, with an optional reason) or e (edit the
    arguments as JSON) for each call. `read` returns one line and raises EOFError at the end
    (it runs in a thread); by default the lines of stdin are read on the event loop."""
    read_line = None if read is None else lambda: asyncio.to_thread(read)
    terminal = Terminal(read_line, out)
    ask, write = terminal.ask, terminal.write

    async def approve(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        with view.paused():
            try:
                while True:
                    answer = await ask(f"run {call.name}({arguments}) [{call.call_id}]? y/n/e: ")
                    if answer.lower() in ("y", "yes"):
                        return Approve()
                    if answer.lower() in ("n", "no"):
                        return Deny(await ask("reason (optional, the model reads it): "))
                    if answer.lower() in ("e", "edit"):
                        edited = await _edited(ask, write)
                        if edited is not None:
                            return Edit(edited)
                    else:
                        write("answer y (run it), n (deny it) or e (edit its arguments)\n")
            except EOFError:
                write("\nno answer: the call waits for `steadyloop resume`\n")
                return Defer()

    return approve


async def _edited(ask: Callable[[str], Any], write: Callable[[str], None]) -> dict[str, Any] | None:
    text = await ask("arguments as a JSON object: ")
    try:
        value = json.loads(text)
    except ValueError as exc:
        write(f"not JSON ({exc}); try again\n")
        return None
    if not isinstance(value, dict):
        write('the arguments must be a JSON object, like {"amount": 10}; try again\n')
        return None
    return value


class Terminal:
    """Questions asked of the person at the terminal: `write` shows text on `out` (default:
    stderr), `ask` shows a prompt and returns the answer's line, stripped. `read` returns the
    next line and raises EOFError at the end (default: the lines of stdin, read on the event
    loop)."""

    def __init__(
        self, read: Callable[[], Awaitable[str]] | None = None, out: IO[str] | None = None
    ) -> None:
        self._read = read if read is not None else InputLines(sys.stdin.fileno()).next
        self._out = out

    def write(self, text: str) -> None:
        stream = self._out or sys.stderr
        stream.write(text)
        stream.flush()

    async def ask(self, prompt: str) -> str:
        self.write(prompt)
        return (await self._read()).strip()


class InputLines:
    """The lines of file descriptor `fd` (a terminal), read when the event loop sees input, so
    a question being asked is cancelled at once (by Ctrl-C, SIGTERM) and leaves no thread
    blocked in a read. Where the loop cannot watch the descriptor (Windows) a thread reads it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""

    async def next(self) -> str:
        """The next line, without its end; `EOFError` at the end of input."""
        while b"\n" not in self._buffer:
            chunk = await self._chunk()
            if not chunk:
                if not self._buffer:
                    raise EOFError
                chunk = b"\n"  # the last line had no end
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(sys.stdin.encoding or "utf-8", errors="replace")

    async def _chunk(self) -> bytes:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self._fd, wake)
        except NotImplementedError:
            return await asyncio.to_thread(os.read, self._fd, 4096)
        try:
            await ready
        finally:
            loop.remove_reader(self._fd)
        return os.read(self._fd, 4096)

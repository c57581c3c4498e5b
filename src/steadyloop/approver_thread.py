"""A sync approver's questions, asked in a worker thread a turn at a time.

A sync approver runs in a thread, so a person taking their time holds up nothing else. A hop to
a thread and back costs about as much as a whole turn of the loop, so the questions of one turn's
calls go in one visit: each call's hook queues its question (on the loop, with the call's
context), and the first one schedules the visit for after the others have queued theirs. The
thread asks them one at a time, in call order; a question whose call was cancelled before its
turn is never asked. The decisions go to their calls when the visit ends, in the one wake-up of
the loop that ends it, unless the visit is still going after `HURRY` (a person deciding): from
then on each goes to its call as soon as it is made, so a call decided early runs meanwhile.

A visit stops at the first answer that is not a decision (the approver raised, or returned an
awaitable or a mistake): that call takes it, and the next visit starts once it has; the
questions after it wait for that visit.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = ["HURRY", "ApproverThread"]

# How long a visit goes on before its decisions go to their calls one by one as they are made;
# an approver deciding in code is done before.
HURRY = 0.005


class ApproverThread:
    """The worker-thread visits of one run's sync approver. `decisions`: the types of a
    decision (any other answer ends a visit)."""

    def __init__(self, approver: Callable[..., Any], decisions: tuple[type, ...]) -> None:
        self._approver = approver
        self._decisions = decisions
        self._queue: list[_Question] = []  # for the thread's next visit
        self._visiting = False

    async def ask(self, *question: Any) -> Any:
        """The approver's answer to `question` (its arguments), from the turn's visit; an
        awaitable it returns is awaited here, on the loop."""
        loop = asyncio.get_running_loop()
        asked = _Question(question, contextvars.copy_context(), loop.create_future())
        self._queue.append(asked)
        if not self._visiting:  # the turn's other calls queue theirs before the visit starts
            self._visiting = True
            loop.call_soon(self._visit)
        try:
            answer = await asked.answer
            if inspect.isawaitable(answer):
                answer = await answer
        except asyncio.CancelledError:
            asked.withdrawn = True
            raise
        finally:
            if asked.ends_visit:  # once this call has taken it (or stopped the turn)
                loop.call_soon(self._visit)
        return answer

    def _visit(self) -> None:
        """Sends every question still waiting to a worker thread in one visit, or ends the
        visits when none is left."""
        questions = [question for question in self._queue if not question.answer.done()]
        self._queue.clear()
        if not questions:
            self._visiting = False
            return
        loop = asyncio.get_running_loop()
        visit = _Visit(self._approver, self._decisions, questions, loop)
        hurry = loop.call_later(HURRY, visit.hurry)
        ended = loop.run_in_executor(None, visit.run)
        ended.add_done_callback(lambda _: self._visited(visit, hurry))

    def _visited(self, visit: _Visit, hurry: asyncio.TimerHandle) -> None:
        """After a visit: its decisions go to their calls. If it stopped at a question, that
        question's call takes the answer (and starts the next visit once it has) and the
        questions after it go back to the front of the queue; else the next visit starts."""
        hurry.cancel()
        visit.hand_over()
        if visit.stopped is None:
            self._visit()
            return
        index, answer, error = visit.stopped
        question = visit.questions[index]
        self._queue[:0] = visit.questions[index + 1 :]
        if question.answer.done():  # its call was cancelled while the approver decided
            if inspect.iscoroutine(answer):
                answer.close()
            self._visit()
            return
        question.ends_visit = True
        if error is not None:
            question.answer.set_exception(error)
        else:
            question.answer.set_result(answer)


@dataclass(slots=True, eq=False)
class _Question:
    """One call's question, queued on the loop for the thread: `arguments` for the approver,
    `copied` the call's context (the approver runs in it, as `asyncio.to_thread` would run
    it); `answer` gets the answer. `withdrawn` is set on the loop once the call is cancelled:
    the thread then never asks it. `ends_visit`: the visit stopped at this question."""

    arguments: tuple[Any, ...]
    copied: contextvars.Context
    answer: asyncio.Future[Any]
    withdrawn: bool = False
    ends_visit: bool = False


# How a visit stopped: at which of its questions, and with what (the approver's exception, or
# an answer that is not a decision).
_Stopped: TypeAlias = tuple[int, Any, BaseException | None]


class _Visit:
    """One visit of a worker thread: asks `questions` one at a time, in call order, skipping
    those withdrawn; stops at the first answer that is not a decision (`stopped`).

    Its decisions go to their calls at its end (`hand_over`, by the loop), unless it is still
    going after `HURRY` (`hurry`): from then on each goes as soon as it is made."""

    __slots__ = (
        "_decisions",
        "_loop",
        "_made",
        "_prompt",
        "_woken",
        "approver",
        "questions",
        "stopped",
    )

    def __init__(
        self,
        approver: Callable[..., Any],
        decisions: tuple[type, ...],
        questions: list[_Question],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.approver = approver
        self.questions = questions
        self.stopped: _Stopped | None = None
        self._decisions = decisions
        self._loop = loop
        self._made: deque[tuple[_Question, Any]] = deque()
        self._prompt = False  # each decision is handed over as it is made
        self._woken = False  # `hand_over` is scheduled on the loop and has not started

    def run(self) -> None:
        """In the worker thread."""
        for index, question in enumerate(self.questions):
            if question.withdrawn:
                continue
            try:
                answer = question.copied.run(self.approver, *question.arguments)
            except BaseException as exc:  # the call's, as from `asyncio.to_thread`
                self.stopped = (index, None, exc)
                return
            if not isinstance(answer, self._decisions):
                self.stopped = (index, answer, None)
                return
            self._made.append((question, answer))
            # `hurry` sets `_prompt` before it hands over, and `hand_over` clears `_woken`
            # before it reads `_made`: a decision made meanwhile is never left behind.
            if self._prompt and not self._woken:
                self._woken = True
                self._loop.call_soon_threadsafe(self.hand_over)

    def hurry(self) -> None:
        """On the loop, once the visit has gone on for `HURRY`: hands over what is decided,
        and from now on each decision as it is made."""
        self._prompt = True
        self.hand_over()

    def hand_over(self) -> None:
        """On the loop: hands each decision made to its call (unless the call was cancelled
        meanwhile)."""
        self._woken = False
        while self._made:
            question, decision = self._made.popleft()
            if not question.answer.done():
                question.answer.set_result(decision)

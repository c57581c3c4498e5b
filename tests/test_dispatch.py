"""Dispatch of one turn: every row of the error contract (docs/patterns/errors-as-text.md),
answered in call order."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from steadyloop import FatalToolError, ToolCall, ToolError, tool
from steadyloop.dispatch import CANCELLED_TEXT, Dispatcher, TurnResults
from steadyloop.effects import Effects, Proceed, ToolInvocation
from steadyloop.events import Event, ToolCallFinished, ToolCallStarted
from steadyloop.retry import Backoff
from steadyloop.tools import Tool, as_tool
from steadyloop.truncate import truncation_marker


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so sync tools that block on it let their thread go."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(16)
    yield executor
    executor.shutdown(wait=True)


@pytest.fixture
def make(pool: ThreadPoolExecutor, release: threading.Event) -> Callable[..., Dispatcher]:
    def build(
        *tools: Tool | Callable[..., Any],
        timeout: float = 10.0,
        max_output: int = 8_000,
        backoff: Backoff | None = None,
    ) -> Dispatcher:
        wrapped = [as_tool(t) for t in tools]
        return Dispatcher(
            {t.name: t for t in wrapped},
            tool_timeout=timeout,
            max_output=max_output,
            backoff=backoff or Backoff.none(),
            executor=lambda: pool,
        )

    return build


def call(name: str, arguments: str | Mapping[str, Any] = "{}", id: str = "") -> ToolCall:
    return ToolCall(id or f"id_{name}", name, arguments)


def only(batch: TurnResults) -> ToolCallFinished:
    assert len(batch.outcomes) == 1
    return batch.outcomes[0]


def get_weather(city: str, days: int = 1) -> str:
    """Weather.

    Args:
        city: the city.
        days: how many days.
    """
    return f"sunny in {city} for {days}"


def now() -> str:
    """The time."""
    return "noon"


async def instant() -> str:
    """Answers in its first step: done before any thread or timer could interfere."""
    return "instant"


async def slow_ok(label: str = "x") -> str:
    await asyncio.sleep(0.05)
    return f"ok {label}"


async def test_a_tool_may_hold_a_cancel_scope_or_timeout_across_awaits(
    make: Callable[..., Dispatcher],
) -> None:
    """A tool runs as one task from its first line to its last, as the MCP SDK (anyio cancel
    scopes) and `asyncio.timeout` need: both check that they leave in the task they entered."""
    import anyio

    async def scoped(seconds: float) -> str:
        """Waits inside a cancel scope and a timeout."""
        first = asyncio.current_task()
        with anyio.CancelScope():
            async with asyncio.timeout(5):
                await asyncio.sleep(seconds)
        return "same task" if asyncio.current_task() is first else "moved"

    batch = await make(scoped).run(
        [call("scoped", '{"seconds": 0.01}', id=str(n)) for n in range(3)]
    )
    assert [o.result.content for o in batch.outcomes] == ["same task"] * 3


async def test_each_answer_carries_the_arguments_it_ran_with(
    make: Callable[..., Dispatcher],
) -> None:
    batch = await make(get_weather).run([call("get_weather", '{"city": "Oslo"}'), call("x", "{}")])
    known, unknown = batch.outcomes
    assert known.arguments == {"city": "Oslo"}
    assert unknown.arguments is None  # an unknown tool's arguments are not read


# -- unknown tools ------------------------------------------------------------------------------


async def test_unknown_tool_is_answered_with_the_real_list(make: Callable[..., Dispatcher]) -> None:
    d = make(get_weather, now)
    batch = await d.run([call("get_weather", '{"city": "Oslo"}'), call("made_up", "{}")])
    known, unknown = batch.outcomes
    assert known.result.content == "sunny in Oslo for 1"
    assert not known.result.is_error
    assert unknown.result.is_error
    assert unknown.result.call_id == "id_made_up"
    assert "'made_up'" in unknown.result.content
    assert unknown.result.content.endswith("get_weather, now")
    assert batch.stop is None


async def test_empty_tool_name_is_answered_too(make: Callable[..., Dispatcher]) -> None:
    outcome = only(await make(now).run([ToolCall("c1", "", "{}")]))
    assert outcome.result.is_error
    assert "no tool name" in outcome.result.content
    assert "now" in outcome.result.content


# -- arguments ----------------------------------------------------------------------------------


async def test_bad_json_gets_the_parser_message_and_the_valid_sibling_runs(
    make: Callable[..., Dispatcher],
) -> None:
    batch = await make(get_weather).run(
        [
            call("get_weather", '{"city": "San Fra', "a"),
            call("get_weather", '{"city": "Rome"}', "b"),
        ]
    )
    bad, good = batch.outcomes
    assert bad.result.is_error
    assert "not valid JSON" in bad.result.content
    assert "Unterminated string" in bad.result.content
    assert '{"city": "San Fra' in bad.result.content
    assert good.result.content == "sunny in Rome for 1"


async def test_a_long_bad_json_payload_is_previewed_not_echoed(
    make: Callable[..., Dispatcher],
) -> None:
    outcome = only(await make(get_weather).run([call("get_weather", "{" + "x" * 5000)]))
    assert outcome.result.is_error
    assert len(outcome.result.content) < 600


@pytest.mark.parametrize("raw", ["[1, 2]", '"x"', "3", "true"])
async def test_json_that_is_not_an_object_is_an_error_never_passed_on(
    make: Callable[..., Dispatcher], raw: str
) -> None:
    seen: list[object] = []

    def record(value: object = None) -> str:
        seen.append(value)
        return "ran"

    outcome = only(await make(record).run([call("record", raw)]))
    assert outcome.result.is_error
    assert "must be a JSON object" in outcome.result.content
    assert seen == []


@pytest.mark.parametrize("raw", ["", "null", "   ", " null\n", "{}", {}])
async def test_empty_or_null_arguments_mean_none_for_a_no_argument_tool(
    make: Callable[..., Dispatcher], raw: str | Mapping[str, Any]
) -> None:
    outcome = only(await make(now).run([call("now", raw)]))
    assert outcome.result.content == "noon"
    assert not outcome.result.is_error


@pytest.mark.parametrize("raw", ["", "null", "  "])
async def test_empty_arguments_for_a_tool_with_required_fields_name_the_field(
    make: Callable[..., Dispatcher], raw: str
) -> None:
    outcome = only(await make(get_weather).run([call("get_weather", raw)]))
    assert outcome.result.is_error
    assert "city: required, but not given" in outcome.result.content


async def test_arguments_given_as_a_mapping_are_used(make: Callable[..., Dispatcher]) -> None:
    outcome = only(await make(get_weather).run([call("get_weather", {"city": "Lima", "days": 2})]))
    assert outcome.result.content == "sunny in Lima for 2"


async def test_schema_errors_name_each_field_expected_and_given(
    make: Callable[..., Dispatcher],
) -> None:
    ran: list[str] = []

    def book(city: str, nights: int) -> str:
        ran.append(city)
        return "booked"

    outcome = only(
        await make(book).run([call("book", json.dumps({"nights": "many", "guests": 2}))])
    )
    text = outcome.result.content
    assert outcome.result.is_error
    assert "city: required, but not given" in text
    assert "nights: Input should be a valid integer" in text
    assert "'many'" in text
    assert "guests: not a parameter of book" in text
    assert ran == []


class Quantity(BaseModel):
    amount: int

    @field_validator("amount")
    @classmethod
    def positive(cls, value: int) -> int:
        if value < 0:
            raise TypeError("amount must be >= 0")
        return value


async def test_a_validator_raising_type_error_is_answered_and_loses_no_sibling(
    make: Callable[..., Dispatcher],
) -> None:
    def order(quantity: Quantity) -> str:
        return "ordered"

    batch = await make(order, slow_ok).run(
        [call("order", '{"quantity": {"amount": -1}}'), call("slow_ok")]
    )
    bad, ok = batch.outcomes
    assert bad.result.is_error
    assert bad.result.content == "amount must be >= 0"
    assert ok.result.content == "ok x"
    assert batch.stop is None


async def test_absurdly_nested_json_is_answered_and_loses_no_sibling(
    make: Callable[..., Dispatcher],
) -> None:
    batch = await make(get_weather, slow_ok).run(
        [call("get_weather", '{"city": ' + "[" * 100_000 + "}"), call("slow_ok")]
    )
    bad, ok = batch.outcomes
    assert bad.result.is_error
    assert "not valid JSON" in bad.result.content
    assert ok.result.content == "ok x"


# -- what tools raise ---------------------------------------------------------------------------


async def test_tool_error_reaches_the_model_verbatim(make: Callable[..., Dispatcher]) -> None:
    message = "ticket 42 is archived; search with archived=true  (exact text)"

    def get_ticket() -> str:
        raise ToolError(message)

    outcome = only(await make(get_ticket).run([call("get_ticket")]))
    assert outcome.result.content == message
    assert outcome.result.is_error


@pytest.mark.parametrize("kind", [TypeError, ValueError])
async def test_type_and_value_errors_give_their_message(
    make: Callable[..., Dispatcher], kind: type[Exception]
) -> None:
    async def parse(text: str = "") -> str:
        raise kind("dates look like 2026-11-30")

    outcome = only(await make(parse).run([call("parse")]))
    assert outcome.result.content == "dates look like 2026-11-30"
    assert outcome.result.is_error


async def test_other_exceptions_are_logged_and_reported_without_their_message(
    make: Callable[..., Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    def lookup(key: str) -> str:
        raise KeyError(f"secret internal detail {key}")

    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        outcome = only(await make(lookup).run([call("lookup", '{"key": "k1"}')]))
    assert outcome.result.content == "lookup failed: KeyError"
    assert outcome.result.is_error
    assert "secret" not in outcome.result.content
    records = [r for r in caplog.records if r.name.startswith("steadyloop")]
    assert len(records) == 1
    assert records[0].levelno == logging.ERROR
    assert records[0].exc_info is not None
    assert isinstance(records[0].exc_info[1], KeyError)
    assert "lookup" in records[0].getMessage()


async def test_a_result_that_cannot_be_rendered_is_an_unexpected_failure(
    make: Callable[..., Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Tool):
        def bind(self, arguments: Mapping[str, Any]) -> Any:
            return as_tool(now).bind({})

        def render(self, value: Any) -> Any:
            raise RuntimeError("render exploded")

    from steadyloop.tools import ToolSpec

    broken = Broken(ToolSpec("broken", "d", {"type": "object", "properties": {}}))
    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        outcome = only(await make(broken).run([call("broken")]))
    assert outcome.result.content == "broken failed: RuntimeError"


# -- timeouts -----------------------------------------------------------------------------------


async def test_a_timed_out_async_tool_is_answered_and_siblings_are_unaffected(
    make: Callable[..., Dispatcher],
) -> None:
    cancelled = asyncio.Event()

    @tool(timeout=0.05)
    async def hang() -> str:
        try:
            await asyncio.sleep(60)
        finally:
            cancelled.set()
        return "never"

    batch = await make(hang, slow_ok).run([call("hang"), call("slow_ok")])
    hung, ok = batch.outcomes
    assert hung.result.is_error
    assert hung.result.content == "hang timed out after 0.05s"
    assert ok.result.content == "ok x"
    assert cancelled.is_set()


async def test_a_timed_out_sync_tool_is_answered(
    make: Callable[..., Dispatcher], release: threading.Event
) -> None:
    @tool(timeout=0.05)
    def block() -> str:
        release.wait(30)
        return "late"

    outcome = only(await make(block).run([call("block")]))
    assert outcome.result.content == "block timed out after 0.05s"
    assert outcome.attempts == 1


async def test_tools_without_their_own_timeout_use_the_agent_default(
    make: Callable[..., Dispatcher],
) -> None:
    async def hang() -> str:
        await asyncio.sleep(60)
        return "never"

    outcome = only(await make(hang, timeout=0.05).run([call("hang")]))
    assert outcome.result.content == "hang timed out after 0.05s"


async def test_a_timeout_raised_by_the_tool_itself_is_not_called_our_deadline(
    make: Callable[..., Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    async def upstream() -> str:
        raise TimeoutError("upstream took too long")

    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        outcome = only(await make(upstream).run([call("upstream")]))
    assert outcome.result.content == "upstream failed: TimeoutError"


async def test_a_sync_call_waiting_for_a_thread_gets_its_whole_time_once_it_starts(
    release: threading.Event,
) -> None:
    ran: list[str] = []

    @tool(timeout=0.05)
    def hog() -> str:
        release.wait(30)
        return "late"

    @tool(timeout=0.2)
    def quick() -> str:
        ran.append("quick")
        return "ran"

    with ThreadPoolExecutor(1) as one_thread:
        d = Dispatcher(
            {"hog": hog, "quick": quick},
            tool_timeout=10.0,
            max_output=8_000,
            backoff=Backoff.none(),
            executor=lambda: one_thread,
        )
        # `quick` waits for `hog`'s thread past the time it would have had, had its deadline
        # counted from the hand-off rather than from its start.
        asyncio.get_running_loop().call_later(0.3, release.set)
        hogged, waited = (await d.run([call("hog"), call("quick")])).outcomes
    assert hogged.result.content == "hog timed out after 0.05s"
    assert waited.result.content == "ran"
    assert not waited.result.is_error
    assert ran == ["quick"]


async def test_a_timed_out_sync_call_is_answered_once_whatever_its_thread_does_later(
    make: Callable[..., Dispatcher],
    pool: ThreadPoolExecutor,
    release: threading.Event,
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool(timeout=0.05)
    def block() -> str:
        release.wait(30)
        raise RuntimeError("too late to matter")

    events: list[Event] = []
    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        batch = await make(block).run([call("block")], events.append)
        release.set()
        await asyncio.to_thread(pool.shutdown, wait=True)  # the thread has finished
        await asyncio.sleep(0)
    assert only(batch).result.content == "block timed out after 0.05s"
    assert [e.result.content for e in events if isinstance(e, ToolCallFinished)] == [
        "block timed out after 0.05s"
    ]
    assert not caplog.records


@pytest.mark.parametrize("ignoring", ["waits on", "returns"])
async def test_an_async_tool_ignoring_its_cancellation_is_timed_out_at_its_deadline(
    make: Callable[..., Dispatcher], ignoring: str
) -> None:
    let_go = asyncio.Event()
    done = asyncio.Event()

    @tool(timeout=0.05)
    async def stubborn() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            if ignoring == "waits on":
                await let_go.wait()
        finally:
            done.set()
        return "finished anyway"

    events: list[Event] = []
    async with asyncio.timeout(10):  # without a bounded wait the turn would hang on `let_go`
        batch = await make(stubborn, slow_ok).run(
            [call("stubborn"), call("slow_ok")], events.append
        )
    let_go.set()
    await done.wait()
    await asyncio.sleep(0)
    timed_out, ok = batch.outcomes
    assert timed_out.result.is_error
    assert timed_out.result.content == "stubborn timed out after 0.05s"
    assert ok.result.content == "ok x"
    finished = [e.call.name for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(finished) == ["slow_ok", "stubborn"]


async def test_cancelling_the_turn_does_not_wait_for_a_tool_that_ignores_it(
    make: Callable[..., Dispatcher],
) -> None:
    started = asyncio.Event()
    let_go = asyncio.Event()
    done = asyncio.Event()

    async def stubborn() -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await let_go.wait()
        done.set()
        return "finished anyway"

    task = asyncio.create_task(make(stubborn, instant).run([call("stubborn"), call("instant")]))
    await started.wait()
    task.cancel()
    async with asyncio.timeout(10):
        batch = await task
    let_go.set()
    await done.wait()
    assert isinstance(batch.stop, asyncio.CancelledError)
    assert [o.result.content for o in batch.outcomes] == [CANCELLED_TEXT, "instant"]


async def test_a_tool_cleans_up_in_its_own_task_within_the_grace_after_its_deadline(
    make: Callable[..., Dispatcher],
) -> None:
    cleaned: list[bool] = []

    @tool(timeout=0.05)
    async def tidy() -> str:
        first = asyncio.current_task()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # a cleanup that waits, well within the grace
            cleaned.append(asyncio.current_task() is first)
            raise
        return "never"

    outcome = only(await make(tidy).run([call("tidy")]))
    assert outcome.result.content == "tidy timed out after 0.05s"
    assert cleaned == [True]


async def test_a_cancelled_wait_the_tool_handles_itself_does_not_stop_the_turn(
    make: Callable[..., Dispatcher],
) -> None:
    async def resilient() -> str:
        """Waits on a future someone else cancels, and carries on."""
        waited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(waited.cancel)
        try:
            await waited
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            return "carried on"
        return "never"

    batch = await make(resilient, slow_ok).run([call("resilient"), call("slow_ok")])
    assert batch.stop is None
    assert [o.result.content for o in batch.outcomes] == ["carried on", "ok x"]


async def test_waiting_calls_each_time_out_at_their_own_deadline(
    make: Callable[..., Dispatcher],
) -> None:
    def hanging(seconds: float) -> Tool:
        async def hang() -> str:
            await asyncio.sleep(60)
            return "never"

        return tool(name=f"hang_{int(seconds * 100)}", timeout=seconds)(hang)

    tools = [hanging(0.15), hanging(0.05), hanging(0.1)]
    batch = await make(*tools, slow_ok).run([call(t.name) for t in tools] + [call("slow_ok")])
    assert [o.result.content for o in batch.outcomes] == [
        "hang_15 timed out after 0.15s",
        "hang_5 timed out after 0.05s",
        "hang_10 timed out after 0.1s",
        "ok x",
    ]


async def test_a_sequential_tool_ignoring_its_deadline_lets_the_next_call_run(
    make: Callable[..., Dispatcher],
) -> None:
    let_go = asyncio.Event()

    @tool(timeout=0.05, sequential=True)
    async def write(n: int) -> str:
        if n == 0:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await let_go.wait()
        return f"wrote {n}"

    async with asyncio.timeout(10):  # the lock held for good would hang the turn
        batch = await make(write).run([call("write", f'{{"n": {n}}}', f"w{n}") for n in (0, 1)])
    let_go.set()
    assert [o.result.content for o in batch.outcomes] == ["write timed out after 0.05s", "wrote 1"]


async def test_a_tool_ignoring_its_deadline_is_retried_with_a_deadline_of_its_own(
    make: Callable[..., Dispatcher],
) -> None:
    let_go = asyncio.Event()
    attempts: list[int] = []

    @tool(timeout=0.05, retries=1)
    async def stubborn_once() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await let_go.wait()
                return "the first attempt, too late"
        await asyncio.sleep(0.01)
        return "the second attempt"

    async with asyncio.timeout(10):
        outcome = only(await make(stubborn_once).run([call("stubborn_once")]))
    let_go.set()
    assert outcome.result.content == "the second attempt"
    assert outcome.attempts == 2


async def test_a_hook_around_a_tool_that_ignores_its_deadline_sees_it_timed_out(
    make: Callable[..., Dispatcher],
) -> None:
    let_go = asyncio.Event()
    seen: list[str] = []

    class Watch(Effects):
        async def tool_call(self, call: ToolInvocation, proceed: Proceed) -> ToolCallFinished:
            answered = await proceed()
            seen.append(answered.result.content)
            return answered

    @tool(timeout=0.05)
    async def stubborn() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await let_go.wait()
        return "finished anyway"

    async with asyncio.timeout(10):
        batch = await make(stubborn).around([Watch()]).run([call("stubborn")])
    let_go.set()
    assert only(batch).result.content == "stubborn timed out after 0.05s"
    assert seen == ["stubborn timed out after 0.05s"]


# -- retries ------------------------------------------------------------------------------------


async def test_transient_errors_are_retried_until_success(make: Callable[..., Dispatcher]) -> None:
    attempts: list[int] = []

    @tool(retries=2)
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("reset by peer")
        return "ok on try 3"

    outcome = only(await make(flaky).run([call("flaky")]))
    assert outcome.result.content == "ok on try 3"
    assert not outcome.result.is_error
    assert outcome.attempts == 3
    assert len(attempts) == 3


async def test_retries_run_out_into_an_error_result(
    make: Callable[..., Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[int] = []

    @tool(retries=2)
    async def down() -> str:
        attempts.append(1)
        raise ConnectionError("refused")

    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        outcome = only(await make(down).run([call("down")]))
    assert len(attempts) == 3
    assert outcome.result.is_error
    assert outcome.result.content == "down failed: ConnectionError (after 3 attempts)"
    assert outcome.attempts == 3


async def test_exceptions_not_in_retry_on_are_not_retried(
    make: Callable[..., Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[int] = []

    @tool(retries=3)
    def broken() -> str:
        attempts.append(1)
        raise RuntimeError("bug")

    with caplog.at_level(logging.ERROR, logger="steadyloop"):
        outcome = only(await make(broken).run([call("broken")]))
    assert attempts == [1]
    assert outcome.result.content == "broken failed: RuntimeError"


async def test_a_timeout_is_retried_as_a_transient_error(make: Callable[..., Dispatcher]) -> None:
    attempts: list[int] = []

    @tool(timeout=0.05, retries=1)
    async def sometimes_slow() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            await asyncio.sleep(60)
        return "fast the second time"

    outcome = only(await make(sometimes_slow).run([call("sometimes_slow")]))
    assert outcome.result.content == "fast the second time"
    assert len(attempts) == 2


async def test_retry_on_may_list_value_errors(make: Callable[..., Dispatcher]) -> None:
    attempts: list[int] = []

    @tool(retries=2, retry_on=(ValueError,))
    def parse_feed() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ValueError("truncated feed")
        return "parsed"

    outcome = only(await make(parse_feed).run([call("parse_feed")]))
    assert outcome.result.content == "parsed"
    assert len(attempts) == 3


async def test_retried_value_errors_still_give_their_message(
    make: Callable[..., Dispatcher],
) -> None:
    @tool(retries=1, retry_on=(ValueError,))
    def parse_feed() -> str:
        raise ValueError("truncated feed")

    outcome = only(await make(parse_feed).run([call("parse_feed")]))
    assert outcome.result.content == "truncated feed (after 2 attempts)"


async def test_retries_wait_with_backoff_between_attempts(make: Callable[..., Dispatcher]) -> None:
    stamps: list[float] = []

    @tool(retries=2)
    def flaky() -> str:
        stamps.append(time.monotonic())
        raise ConnectionError("x")

    d = make(flaky, backoff=Backoff(initial=0.05, maximum=0.05, jitter=0.0))
    outcome = only(await d.run([call("flaky")]))
    assert outcome.result.is_error
    assert len(stamps) == 3
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert all(gap >= 0.04 for gap in gaps), gaps


# -- stopping the turn --------------------------------------------------------------------------


async def _hang_forever() -> str:
    await asyncio.sleep(60)
    return "never"


@pytest.mark.parametrize("error", [FatalToolError("disk is gone"), KeyboardInterrupt()])
async def test_fatal_errors_stop_the_turn_with_every_call_answered(
    make: Callable[..., Dispatcher], error: BaseException
) -> None:
    async def fatal() -> str:
        await asyncio.sleep(0.01)
        raise error

    d = make(fatal, tool(name="hang_forever")(_hang_forever), instant)
    batch = await d.run(
        [call("hang_forever", id="a"), call("fatal", id="b"), call("instant", id="c")]
    )
    assert batch.stop is error
    assert [o.result.call_id for o in batch.outcomes] == ["a", "b", "c"]
    hung, stopped, quick = batch.outcomes
    assert hung.result.is_error
    assert hung.result.content == CANCELLED_TEXT
    assert stopped.result.is_error
    assert "fatal stopped the run" in stopped.result.content
    assert type(error).__name__ in stopped.result.content
    assert quick.result.content == "instant"


async def test_keyboard_interrupt_from_a_sync_tool_stops_the_turn(
    make: Callable[..., Dispatcher],
) -> None:
    def interrupted() -> str:
        raise KeyboardInterrupt

    batch = await make(interrupted, tool(name="hang_forever")(_hang_forever)).run(
        [call("interrupted"), call("hang_forever")]
    )
    assert isinstance(batch.stop, KeyboardInterrupt)
    assert batch.outcomes[1].result.content == CANCELLED_TEXT


async def test_a_tool_raising_cancelled_error_stops_the_turn(
    make: Callable[..., Dispatcher],
) -> None:
    async def gives_up() -> str:
        raise asyncio.CancelledError

    batch = await make(gives_up, slow_ok).run([call("gives_up"), call("slow_ok")])
    assert isinstance(batch.stop, asyncio.CancelledError)
    first, second = batch.outcomes
    assert first.result.is_error
    assert "gives_up stopped the run" in first.result.content
    assert second.result.is_error


async def test_cancelling_the_turn_cancels_the_tools_and_answers_every_call(
    make: Callable[..., Dispatcher],
) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    async def wait_here(label: str) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(label)
            raise
        return "never"

    d = make(wait_here, instant)
    task = asyncio.create_task(
        d.run(
            [
                call("wait_here", '{"label": "a"}', "1"),
                call("instant", id="2"),
                call("wait_here", '{"label": "b"}', "3"),
            ]
        )
    )
    await started.wait()
    await asyncio.sleep(0.01)
    task.cancel()
    batch = await task
    assert isinstance(batch.stop, asyncio.CancelledError)
    assert sorted(cancelled) == ["a", "b"]
    assert [o.result.call_id for o in batch.outcomes] == ["1", "2", "3"]
    assert batch.outcomes[0].result.content == CANCELLED_TEXT
    assert batch.outcomes[1].result.content == "instant"
    assert batch.outcomes[2].result.content == CANCELLED_TEXT


# -- ordering, sequential tools, ids ------------------------------------------------------------


async def test_results_keep_call_order_whatever_order_calls_finish_in(
    make: Callable[..., Dispatcher],
) -> None:
    async def wait(ms: int) -> str:
        await asyncio.sleep(ms / 1000)
        return str(ms)

    calls = [call("wait", json.dumps({"ms": ms}), f"c{ms}") for ms in (60, 1, 30, 0)]
    batch = await make(wait).run(calls)
    assert [o.result.content for o in batch.outcomes] == ["60", "1", "30", "0"]
    assert [o.result.call_id for o in batch.outcomes] == ["c60", "c1", "c30", "c0"]


async def test_sequential_tools_never_overlap_and_run_in_call_order(
    make: Callable[..., Dispatcher],
) -> None:
    running = 0
    overlap = 0
    order: list[int] = []

    @tool(sequential=True)
    async def write(n: int) -> str:
        nonlocal running, overlap
        running += 1
        overlap = max(overlap, running)
        order.append(n)
        await asyncio.sleep(0.01)
        running -= 1
        return f"wrote {n}"

    other_started = asyncio.Event()

    async def read() -> str:
        other_started.set()
        return "read"

    batch = await make(write, read).run(
        [call("write", f'{{"n": {n}}}', f"w{n}") for n in range(4)] + [call("read")]
    )
    assert overlap == 1
    assert order == [0, 1, 2, 3]
    assert [o.result.content for o in batch.outcomes] == [
        "wrote 0",
        "wrote 1",
        "wrote 2",
        "wrote 3",
        "read",
    ]


@pytest.mark.parametrize("ids", [("same", "same"), ("", ""), ("x", "")])
async def test_duplicate_or_empty_ids_never_collapse_two_calls(
    make: Callable[..., Dispatcher], ids: tuple[str, str]
) -> None:
    ran: list[str] = []

    async def fetch(url: str) -> str:
        ran.append(url)
        return f"got {url}"

    calls = [ToolCall(ids[0], "fetch", '{"url": "a"}'), ToolCall(ids[1], "fetch", '{"url": "b"}')]
    batch = await make(fetch).run(calls)
    assert sorted(ran) == ["a", "b"]
    assert [o.result.content for o in batch.outcomes] == ["got a", "got b"]
    assert [o.result.call_id for o in batch.outcomes] == list(ids)


async def test_an_empty_turn_is_an_empty_batch(make: Callable[..., Dispatcher]) -> None:
    assert await make(now).run([]) == TurnResults(())


async def test_every_call_is_announced_before_it_is_answered(
    make: Callable[..., Dispatcher],
) -> None:
    events: list[Event] = []
    await make(now, get_weather).run(
        [call("now", id="1"), call("get_weather", "{", id="2"), call("nope", id="3")],
        events.append,
    )
    started = [e.call.id for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(started) == ["1", "2", "3"]
    assert sorted(e.call.id for e in finished) == ["1", "2", "3"]
    for done in finished:
        start_index = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, ToolCallStarted) and e.call is done.call
        )
        assert start_index < events.index(done)
    assert {e.call.id: e.is_error for e in finished} == {"1": False, "2": True, "3": True}
    assert all(e.duration >= 0 for e in finished)


# -- truncation ---------------------------------------------------------------------------------


async def test_long_output_is_cut_to_the_limit_and_kept_whole_in_the_event(
    make: Callable[..., Dispatcher],
) -> None:
    big = "H" * 500 + "x" * 400_000 + "T" * 500

    def dump() -> str:
        return big

    outcome = only(await make(dump, max_output=1_000).run([call("dump")]))
    content = outcome.result.content
    assert content == "H" * 500 + truncation_marker(len(big) - 1_000) + "T" * 500
    assert outcome.output == big
    assert outcome.truncated
    assert not outcome.result.is_error


async def test_a_tool_max_output_overrides_the_default(make: Callable[..., Dispatcher]) -> None:
    @tool(max_output=10)
    def chatty() -> str:
        return "0123456789" * 10

    outcome = only(await make(chatty, max_output=1_000).run([call("chatty")]))
    assert outcome.result.content == "01234" + truncation_marker(90) + "56789"


async def test_error_texts_are_truncated_too(make: Callable[..., Dispatcher]) -> None:
    def shout() -> str:
        raise ToolError("E" * 10_000)

    outcome = only(await make(shout, max_output=100).run([call("shout")]))
    assert outcome.result.is_error
    assert truncation_marker(9_900) in outcome.result.content
    assert len(outcome.result.content) == 100 + len(truncation_marker(9_900))


async def test_unknown_tool_lists_are_truncated_too(make: Callable[..., Dispatcher]) -> None:
    tools = [tool(name=f"tool_{i:03d}")(now) for i in range(300)]
    outcome = only(await make(*tools, max_output=200).run([call("nope")]))
    assert outcome.result.is_error
    assert "characters omitted" in outcome.result.content
    assert outcome.result.content.startswith("unknown tool 'nope'")

"""The floors of S6 and S7: the least the run log and tracing could cost, built by hand.

Each floor is the bare loop (`bare_driver.bare_loop`'s twenty lines) doing the same work as
steadyloop's feature by talking to the library underneath directly:

- S6: a plain `sqlite3` connection with the run log's pragmas (WAL, `synchronous=NORMAL`, no
  automatic checkpoint; a passive checkpoint once 400 commits or 5,000 rows went in) commits, on
  the loop's own thread, the very rows steadyloop's log committed for the same run, in the same
  transactions, at the same points: the run's start, each reply before its calls start, each
  turn's results before the model reads them (the last reply's transaction also finishes the
  run). The rows are recorded once from a logged steadyloop run (`record_log_transactions`) and
  replayed with a fresh run id. The rows' JSON columns (an event's data, a run's config and
  usage) are kept as the values they encode and written as JSON text at each commit with the
  `json` module's encoder (the log's for what it does not write as text directly), as any
  program logging what happened must; turning steadyloop's own objects into those
  values (`to_dict`) is left out of the floor: that is part of what it judges.
  For `durability="batch"` (`SqliteBatchFloor`): the same rows, all in one transaction once the
  run is over, the event rows many to a statement as the log writes them: the least a log that
  may keep a run's rows until it ends could do.
- S7: the OpenTelemetry SDK makes the same spans with the same attributes (recorded once from a
  traced steadyloop run): `invoke_agent` around the run, a `chat` span around each model call
  and an `execute_tool` span around each tool call, each made current while it is open, as
  steadyloop does. The attributes known before the call are given at the start, those only the
  call's outcome tells (usage, the response's model and finish reasons, a tool call's attempts,
  the run's stop reason and totals: `known_at_end`) in one call before the span ends, as any
  program making these spans has to. A mapping that holds what one call or outcome alone tells
  (a tool call's id, the reply's finish reason, the run's totals) is made for each span, as any
  program must; the starting attributes of the run and of a model call, the same for every run
  of the plan, are given as one mapping each time.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bare_driver
import common

# How the run log writes event rows: many to a statement.
from steadyloop.store.sqlite import EVENTS_PER_INSERT, INSERT_EVENT

Transaction = list[tuple[str, list[Sequence[Any]]]]
Replayed = list[tuple[str, tuple[int, ...], list[Sequence[Any]]]]
Message = dict[str, Any]

# As the run log's background thread does: a passive checkpoint once this many commits or rows
# went in since the last.
CHECKPOINT_COMMITS = 400
CHECKPOINT_ROWS = 5000

# The run log's general JSON encoder (`steadyloop.store.recording`): `json.dumps` without its
# check for reference cycles.
_dumps = json.JSONEncoder(check_circular=False).encode


async def floor_loop(
    tools: dict[str, Callable[..., Any]],
    max_turns: int,
    at_reply: Callable[[], object],
    at_results: Callable[[], object],
    around_model: Callable[[], Any],
    around_tool: Callable[[Message], Any],
) -> str:
    """`bare_driver.bare_loop` with the hooks a floor needs: `at_reply()` once a reply is in
    (before its calls start), `at_results()` once a turn's results are in (before the model
    reads them), `around_model()` / `around_tool(call)` context managers around each call."""
    messages: list[Message] = [{"role": "user", "content": common.PROMPT}]
    for _ in range(max_turns):
        with around_model():
            reply = await bare_driver.fake_model(messages)
        messages.append(reply)
        at_reply()
        if not reply["tool_calls"]:
            return str(reply["content"])
        calls = reply["tool_calls"]
        results = await asyncio.gather(
            *(_traced_call(tools, c, around_tool) for c in calls), return_exceptions=True
        )
        for call, result in zip(calls, results, strict=True):
            text = f"error: {result!r}" if isinstance(result, BaseException) else str(result)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
        at_results()
    raise RuntimeError(f"turn limit reached: {max_turns} model calls")


async def _traced_call(
    tools: dict[str, Callable[..., Any]], call: Message, around_tool: Callable[[Message], Any]
) -> Any:
    with around_tool(call):
        return await bare_driver.call_tool(tools, call)


@contextmanager
def _nothing(*_: object) -> Iterator[None]:
    yield


def _pass() -> None:
    pass


# -- S6: plain sqlite3 --------------------------------------------------------------------------


class _Recorder:
    """Stands in for the log's connection and notes each transaction's statements."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.transactions: list[Transaction] = []
        self._open: Transaction = []

    def execute(self, sql: str, *parameters: Any) -> Any:
        if sql == "COMMIT":
            self.transactions.append(self._open)
            self._open = []
        elif not sql.startswith(("BEGIN", "PRAGMA", "ROLLBACK")):
            self._open.append((sql, [parameters[0] if parameters else ()]))
        return self.db.execute(sql, *parameters)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        self._open.append((sql, rows))
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def record_log_transactions(store: Any, run: Callable[[], object]) -> tuple[str, list[Transaction]]:
    """The transactions `store` (a steadyloop `SQLiteStore`) commits for one run made by
    `run()` (which flushes the log when done), and that run's id. Reaches into the store's
    connection: on a checkpoint whose log is built otherwise, it raises AttributeError."""
    backend = store._writer._backend
    recorder = _Recorder(backend._db)
    backend._db = recorder
    try:
        run()
    finally:
        backend._db = recorder.db
    run_ids = {sql_rows[1][0][0] for sql_rows in recorder.transactions[0] if "runs" in sql_rows[0]}
    if len(run_ids) != 1:
        raise AssertionError("S6 floor: the recorded run did not start with its run row")
    return run_ids.pop(), recorder.transactions


class SqliteFloor:
    """The bare loop committing the recorded transactions through plain `sqlite3`."""

    def __init__(
        self, plan: common.Plan, path: Path, run_id: str, transactions: list[Transaction]
    ) -> None:
        self.plan = plan
        self.tools = {plan.tool: plan.function}
        self.run_id = run_id
        self.transactions = [[_decoded(sql, rows) for sql, rows in tx] for tx in transactions]
        if len(transactions) != 2 * plan.turns:
            raise AssertionError(
                f"S6 floor: the log committed {len(transactions)} times in a run, "
                f"not twice a turn ({2 * plan.turns})"
            )
        # the same pragmas as steadyloop's SQLiteStore (the file already has its schema)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointed = 0
        self._commits = 0
        self._next = 0
        self._replay: list[Replayed] = []

    def _commit(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        for sql, json_columns, rows in self._replay[self._next]:
            if json_columns:
                rows = [_encoded(row, json_columns) for row in rows]
            self.db.executemany(sql, rows)
        self._committed()

    def _committed(self) -> None:
        """Commits the open transaction, counts it done and checkpoints when the log would."""
        self.db.execute("COMMIT")
        self._next += 1
        self._commits += 1
        rows = self.db.total_changes - self._checkpointed
        if rows >= CHECKPOINT_ROWS or self._commits >= CHECKPOINT_COMMITS:
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._checkpointed = self.db.total_changes
            self._commits = 0

    def _fresh_replay(self) -> None:
        """The recorded transactions again, under a new run id."""
        fresh = uuid.uuid4().hex
        self._replay = [
            [(sql, json_columns, [_swap(row, self.run_id, fresh) for row in rows])
             for sql, json_columns, rows in tx]
            for tx in self.transactions
        ]  # fmt: skip
        self._next = 0

    async def run(self) -> str:
        self._fresh_replay()
        self._commit()  # the run row and the prompt, before the first model call
        output = await floor_loop(
            self.tools, self.plan.turns + 1, self._commit, self._commit, _nothing, _nothing
        )
        if self._next != len(self._replay):
            raise AssertionError("S6 floor: a run did not commit every recorded transaction")
        return output

    def close(self) -> None:
        self.db.close()


class SqliteBatchFloor(SqliteFloor):
    """The bare loop committing the recorded rows as a log with `durability="batch"` at
    least must: all of them once the run is over."""

    async def run(self) -> str:
        self._fresh_replay()
        output = await floor_loop(self.tools, self.plan.turns + 1, _pass, _pass, _nothing, _nothing)
        self._commit_all()
        return output

    def _commit_all(self) -> None:
        """Every recorded transaction as one: the runs' rows as recorded, the event rows in
        statements of up to `EVENTS_PER_INSERT` rows (the log's way)."""
        self.db.execute("BEGIN IMMEDIATE")
        events: list[Sequence[Any]] = []
        for transaction in self._replay:
            for sql, json_columns, rows in transaction:
                if json_columns:
                    rows = [_encoded(row, json_columns) for row in rows]
                if sql.startswith(INSERT_EVENT):
                    events += [row[i : i + 5] for row in rows for i in range(0, len(row), 5)]
                else:
                    self.db.executemany(sql, rows)
        for start in range(0, len(events), EVENTS_PER_INSERT):
            chunk = events[start : start + EVENTS_PER_INSERT]
            sql = INSERT_EVENT + ", (?, ?, ?, ?, ?)" * (len(chunk) - 1)
            self.db.execute(sql, [value for row in chunk for value in row])
        self._committed()


def _swap(row: Sequence[Any], old: str, new: str) -> tuple[Any, ...]:
    return tuple(new if value == old else value for value in row)


def _decoded(sql: str, rows: list[Sequence[Any]]) -> tuple[str, tuple[int, ...], list[Any]]:
    """A recorded statement with its JSON columns (those whose text every row holds exactly as
    the encoder writes it) decoded, and which columns they are."""
    columns = tuple(
        index
        for index in range(len(rows[0]) if rows else 0)
        if all(_is_json(row[index]) for row in rows)
    )
    decoded = [
        tuple(json.loads(value) if index in columns else value for index, value in enumerate(row))
        for row in rows
    ]
    return sql, columns, decoded


def _is_json(value: object) -> bool:
    if not isinstance(value, str) or value[:1] not in ("{", "["):
        return False
    try:
        return bool(_dumps(json.loads(value)) == value)
    except ValueError:
        return False


def _encoded(row: Sequence[Any], json_columns: tuple[int, ...]) -> list[Any]:
    """The row as written: its JSON columns encoded."""
    values = list(row)
    for index in json_columns:
        values[index] = _dumps(values[index])
    return values


# -- S7: the OpenTelemetry SDK ------------------------------------------------------------------


def known_at_end(attribute: str) -> bool:
    """Whether a span's attribute is known only once its call is over (the outcome's)."""
    return attribute.startswith(
        ("gen_ai.usage.", "gen_ai.response.", "gen_ai.output.", "gen_ai.tool.call.result")
    ) or (attribute.startswith("steadyloop.") and attribute != "steadyloop.run_id")


def recorded_spans(exporter: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    """One traced run's spans as the floor replays them: the run span's, the model calls' (in
    order) and the tool calls' (in order): name, kind, the attributes given at the start and
    those given at the end."""
    spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time)
    run = [s for s in spans if s.name == "invoke_agent"]
    models = [s for s in spans if s.name.startswith("chat")]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    if len(run) != 1 or len(run) + len(models) + len(tools) != len(spans):
        raise AssertionError("S7 floor: the recorded run made spans the floor does not know")
    return _replayed(run[0]), [_replayed(s) for s in models], [_replayed(s) for s in tools]


def _replayed(span: Any) -> dict[str, Any]:
    attributes = dict(span.attributes)
    return {
        "name": span.name,
        "kind": span.kind,
        "attributes": {k: v for k, v in attributes.items() if not known_at_end(k)},
        "ended": {k: v for k, v in attributes.items() if known_at_end(k)},
    }


class OtelFloor:
    """The bare loop making the recorded spans with the SDK's tracer directly."""

    def __init__(self, plan: common.Plan, provider: Any, recorded: Any) -> None:
        from opentelemetry import context, trace

        self.plan = plan
        self.tools = {plan.tool: plan.function}
        self.tracer = provider.get_tracer("bench.floor")
        self.run_span, self.model_spans, self.tool_spans = recorded
        self._context, self._trace = context, trace

    @contextmanager
    def _span(self, recorded: dict[str, Any], per_call: bool) -> Iterator[None]:
        """The recorded span around what the block does; `per_call`: its starting attributes
        name the call (its id), so each span is given a mapping of its own."""
        attributes = recorded["attributes"]
        span = self.tracer.start_span(
            recorded["name"],
            kind=recorded["kind"],
            attributes=dict(attributes) if per_call else attributes,
        )
        token = self._context.attach(self._trace.set_span_in_context(span))
        try:
            yield
        finally:
            self._context.detach(token)
            span.set_attributes(dict(recorded["ended"]))  # the outcome's: each span its own
            span.end()

    async def run(self) -> str:
        models, tools = iter(self.model_spans), iter(self.tool_spans)  # this run's own
        with self._span(self.run_span, False):
            return await floor_loop(
                self.tools,
                self.plan.turns + 1,
                _pass,
                _pass,
                lambda: self._span(next(models), False),
                lambda call: self._span(next(tools), True),
            )

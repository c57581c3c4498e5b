"""Every sentence the loop writes for the model, in one place a reviewer can read in one screen.

Errors as text (the error contract) are what a model reads instead of a crash, so their wording
is part of the contract: each says what went wrong and what to do instead. Templates take their
values by name (`UNKNOWN_TOOL.format(name=..., available=...)`). The table in
`docs/patterns/errors-as-text.md` quotes these texts, and a test checks it against this module.
"""

from __future__ import annotations

__all__ = [
    "ACCEPTED",
    "AFTER_ATTEMPTS",
    "ALONE",
    "ALREADY_HAVE",
    "CALL_LIMIT",
    "CANCELLED",
    "CHILD_LAST_REPLY",
    "CHILD_PAUSED",
    "CHILD_STOPPED",
    "CUT_OFF",
    "DENIED",
    "EDITED",
    "EMPTY_REPLY",
    "FAILED",
    "INTERRUPTED",
    "NOT_AN_OBJECT",
    "NOT_JSON",
    "NO_BUDGET",
    "NO_DESCRIPTION",
    "NO_NAME",
    "NO_OUTPUT",
    "NUDGE",
    "REFUSED",
    "STOPPED",
    "TIMED_OUT",
    "TOOL_CALL_LIMIT",
    "UNANSWERED",
    "UNKNOWN_TOOL",
    "WAITING",
]

# -- a call that cannot run, or failed (dispatch) ------------------------------------------------
NO_NAME = "the tool call has no tool name; the tools available are: {available}"
UNKNOWN_TOOL = "unknown tool {name!r}; the tools available are: {available}"
NOT_JSON = "arguments are not valid JSON ({error}); received: {received}"
NOT_AN_OBJECT = (
    "arguments must be a JSON object of parameter names to values, got {type}: {received}"
)
TIMED_OUT = "{tool} timed out after {seconds}s"
FAILED = "{tool} failed: {exception_type}"
AFTER_ATTEMPTS = "{text} (after {attempts} attempts)"
STOPPED = "{tool} stopped the run: {exception_type}: {error}"
CANCELLED = "cancelled: the run stopped before this call finished"
EDITED = "the reviewer changed the arguments of this call to {arguments}; with them:\n"

# -- approvals ------------------------------------------------------------------------------------
DENIED = "denied by the reviewer"
WAITING = "not run: it was waiting for approval when the run stopped"

# -- the loop -------------------------------------------------------------------------------------
CUT_OFF = (
    "your call to {name} was cut off by the output token limit before its arguments were "
    "complete, so it was not run; send it again with shorter arguments"
)
UNANSWERED = "not run: the conversation went on before this call was answered"
INTERRUPTED = (
    "interrupted: the run stopped while this call was running, so its outcome is unknown; it was "
    "not run again because {name} is not marked idempotent. Check its effect before calling it "
    "again"
)

# -- answers (typed answers, empty replies, output checks) ----------------------------------------
ACCEPTED = "final answer accepted"
ALONE = (
    "final_answer was not read: call it alone, once you have the other results (the other "
    "calls of this reply are being run)"
)
NUDGE = (
    "Your reply was not taken as the answer: answer by calling the final_answer tool (alone), "
    "with the answer as its arguments."
)
REFUSED = "Your answer was not accepted: {reason}"
EMPTY_REPLY = (
    "Your reply was empty (no text and no tool calls), so it was not taken as an answer: "
    "answer in text, or call a tool."
)

# -- the repeat guard -----------------------------------------------------------------------------
ALREADY_HAVE = (
    "you already have this result: {name} was called with these same arguments {count} turns "
    "in a row and returned the same thing each time (see the earlier results). Use it to go on, "
    "or call with other arguments; calling it the same way again stops the run."
)

# -- call limits (the loop's tool step) ----------------------------------------------------------
CALL_LIMIT = (
    "not run: {tool} may be called at most {times} in one run, and it was; use the results you have"
)
TOOL_CALL_LIMIT = "not run: the run reached its limit of {limit} tool calls"

# -- sub-agents (`Agent.as_tool`) -----------------------------------------------------------------
CHILD_STOPPED = "{tool} stopped before answering: {message}"
CHILD_LAST_REPLY = "\n\nIts last reply:\n{text}"
CHILD_PAUSED = (
    "not finished: {tool} waits for approval of {calls} in its run {run_id}, which is resumed on "
    "its own; go on without its answer"
)
NO_BUDGET = (
    "not run: the run has spent its cost budget (${cost} of max_cost_usd={limit}), so "
    "{tool} was not started"
)

# -- tools ----------------------------------------------------------------------------------------
NO_OUTPUT = "(the tool returned no output)"
NO_DESCRIPTION = "(no description given)"

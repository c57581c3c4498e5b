"""The spans of gated calls: a call left waiting for a decision is not a failed call."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from steadyloop import Agent, Approve, AssistantMessage, Deny, ToolCall, tool
from steadyloop.testing import ScriptedModel
from tracing.span_checks import attributes, named


@tool(approve=True)
def issue_refund(order_id: str) -> str:
    """Refunds an order."""
    return f"refunded {order_id}"


def refunds(*order_ids: str) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(f"r-{o}", "issue_refund", f'{{"order_id": "{o}"}}') for o in order_ids
        )
    )


async def test_a_deferred_call_s_span_waits_for_approval_without_an_error(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(
        ScriptedModel([refunds("A1", "B2"), "Done."]), tools=[issue_refund],
        tracer_provider=provider,
    )  # fmt: skip
    paused = await agent.run("Refund A1 and B2")
    assert paused.stop_reason == "approval"
    waiting = named(exporter.get_finished_spans(), "execute_tool issue_refund")
    assert len(waiting) == 2
    for span in waiting:
        assert attributes(span)["steadyloop.tool.awaiting_approval"] is True
        assert "error.type" not in attributes(span)
        assert span.status.status_code is StatusCode.UNSET
    exporter.clear()

    # Once decided, the approved call's span is an ordinary one and the denied call's an error.
    await agent.resume(paused, decisions={"r-A1": Approve(), "r-B2": Deny("no receipt")})
    spans = [
        attributes(s) for s in named(exporter.get_finished_spans(), "execute_tool issue_refund")
    ]
    by_call = {span["gen_ai.tool.call.id"]: span for span in spans}
    assert "error.type" not in by_call["r-A1"]
    assert "steadyloop.tool.awaiting_approval" not in by_call["r-A1"]
    assert by_call["r-B2"]["error.type"] == "tool_error"

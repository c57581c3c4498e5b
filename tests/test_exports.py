import subprocess
import sys

import steadyloop
import steadyloop.testing

EXPECTED = {
    "Agent",
    "Approve",
    "AssistantMessage",
    "Backoff",
    "Cache",
    "Compaction",
    "ConfigError",
    "ContextLimitExceeded",
    "ContextWindowExceeded",
    "CostLimitExceeded",
    "Defer",
    "Deny",
    "Document",
    "Edit",
    "Fallback",
    "FatalToolError",
    "Image",
    "LimitExceeded",
    "Limits",
    "Message",
    "ModelError",
    "PendingCall",
    "RepeatLimitExceeded",
    "RunContext",
    "RunLogError",
    "RunResult",
    "SteadyloopError",
    "Summary",
    "Tool",
    "ToolCall",
    "ToolCallLimitExceeded",
    "ToolError",
    "ToolResult",
    "Toolset",
    "TurnLimitExceeded",
    "Usage",
    "UserMessage",
    "instrument",
    "tool",
    "truncate",
    "uninstrument",
}


def test_public_exports_are_exactly_the_documented_ones() -> None:
    assert set(steadyloop.__all__) == EXPECTED
    assert steadyloop.__all__ == sorted(steadyloop.__all__)
    for name in EXPECTED:
        assert getattr(steadyloop, name) is not None


def test_public_names_in_module_namespace_are_all_exported() -> None:
    public = {
        name
        for name, value in vars(steadyloop).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("steadyloop")
    }
    assert public <= set(steadyloop.__all__)


def test_testing_exports() -> None:
    assert set(steadyloop.testing.__all__) == {"FunctionModel", "ScriptedModel", "TestModel"}


def test_every_error_is_a_steadyloop_error() -> None:
    for name in EXPECTED:
        value = getattr(steadyloop, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, steadyloop.SteadyloopError)
    assert issubclass(steadyloop.ConfigError, ValueError)
    assert issubclass(steadyloop.ContextWindowExceeded, steadyloop.ModelError)
    for limit in ("TurnLimitExceeded", "ContextLimitExceeded", "RepeatLimitExceeded"):
        assert issubclass(getattr(steadyloop, limit), steadyloop.LimitExceeded)


def test_import_loads_each_name_on_first_use() -> None:
    probe = (
        "import sys, steadyloop\n"
        "before = sorted(m for m in sys.modules if m.startswith('steadyloop'))\n"
        "from steadyloop import Agent\n"
        "print(before, Agent.__module__, 'steadyloop.agent' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["['steadyloop',", "'steadyloop.truncate']", "steadyloop.agent", "True"]
    assert set(dir(steadyloop)) >= EXPECTED
    assert steadyloop.truncate("x" * 10, 100) == "x" * 10  # the function, not the module

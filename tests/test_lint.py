"""The description linter and the tools-file loader it (and `steadyloop run`) reads tools with."""

from __future__ import annotations

import enum
import os
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from steadyloop import ConfigError, Tool, tool
from steadyloop.lint import CHECKS, lint_tools
from steadyloop.toolfile import load_tools_from_file
from steadyloop.tools import Toolset, ToolSpec

EXAMPLES = Path(__file__).parent.parent / "examples"

GOOD_DESCRIPTION = (
    "Looks up a customer's open orders; use it when the customer asks where an order is. "
    "Returns up to 20 orders, newest first, each with its id, date and status."
)


class SchemaTool(Tool):
    """A tool known only by its spec, as tools from an MCP server are."""

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any]) -> None:
        super().__init__(ToolSpec(name, description, parameters))


def schema_tool(
    name: str = "get_open_orders",
    description: str = GOOD_DESCRIPTION,
    properties: Mapping[str, Any] | None = None,
    defs: Mapping[str, Any] | None = None,
) -> SchemaTool:
    if properties is None:
        properties = {"customer_id": {"type": "string", "description": "like 'C-1'"}}
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if defs:
        schema["$defs"] = dict(defs)
    return SchemaTool(name, description, schema)


def checks_of(*tools: Tool) -> set[tuple[str, str | None]]:
    return {(f.check, f.parameter) for f in lint_tools(tools).findings}


# --- whole files ----------------------------------------------------------------------------


def test_well_described_example_scores_high_without_errors() -> None:
    report = lint_tools(load_tools_from_file(EXAMPLES / "support_tickets.py"))

    assert [t.tool for t in report.tools] == [
        "search_tickets",
        "get_ticket",
        "count_tickets_by_status",
    ]
    assert not report.has_errors
    assert report.score >= 90
    assert all(t.score >= 90 for t in report.tools)


def test_poor_example_gets_the_specific_findings() -> None:
    report = lint_tools(load_tools_from_file(EXAMPLES / "bad_tools.py"))
    found = {(f.tool, f.check, f.parameter) for f in report.findings}

    assert {
        ("search", "restates-name", None),
        ("search", "no-when", None),
        ("search", "no-returns", None),
        ("search", "no-matching", None),
        ("search", "undescribed-param", "query"),
        ("manage_files", "mode-param", "action"),
        ("manage_files", "undescribed-param", "content"),
        ("manage_files", "no-verb", None),
        ("convert_units", "mode-param", "mode"),
        ("find_customers", "no-matching", None),
        ("weather", "no-verb", None),
        ("run", "missing-description", None),
        ("run", "undescribed-param", "x"),
        ("run", "generic-name", None),
    } <= found
    assert report.has_errors
    assert report.score < 60
    by_tool = {t.tool: t for t in report.tools}
    assert by_tool["run"].score < by_tool["weather"].score < 100
    # Only the flaws the file was written with: its described parts are not flagged.
    assert ("manage_files", "undescribed-param", "path") not in found
    assert ("weather", "no-when", None) not in found


def test_the_article_rewrite_fixes_every_finding() -> None:
    before = schema_tool("search", "Search the database.", {"query": {"type": "string"}})
    after = schema_tool(
        "search",
        "Full-text search over customer support tickets. Returns up to 20 matches, newest "
        "first, with ticket ID, title and a 200-character excerpt. Use this to find tickets by "
        "topic. Use `get_ticket` when you already have an ID. It matches whole words, not parts "
        "of words: 'refund' will not match 'refunded'.",
        {"query": {"type": "string", "description": "whole words to look for"}},
    )

    report = lint_tools([before, after])

    assert report.tools[0].score <= 20
    assert report.tools[1].findings == ()
    assert report.tools[1].score == 100


# --- one check at a time ----------------------------------------------------------------------


def test_a_well_described_tool_has_no_findings() -> None:
    assert checks_of(schema_tool()) == set()


def test_missing_description_is_an_error() -> None:
    def get_open_orders(customer_id: str) -> list[str]:
        return [customer_id]

    undocumented = tool(get_open_orders)

    assert ("missing-description", None) in checks_of(undocumented)
    assert ("missing-description", None) in checks_of(schema_tool(description="  "))
    assert ("missing-description", None) not in checks_of(schema_tool())


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("search", "Search the database."),
        ("get_weather", "Gets the weather."),
        ("listFiles", "Lists files"),
    ],
)
def test_one_liner_restating_the_name_is_an_error(name: str, description: str) -> None:
    assert ("restates-name", None) in checks_of(schema_tool(name, description))


def test_short_description_that_adds_information_does_not_restate_the_name() -> None:
    tool_ = schema_tool("get_weather", "Current temperature and rain forecast for a city.")

    assert ("restates-name", None) not in checks_of(tool_)


def test_description_without_when_to_use_it() -> None:
    silent = schema_tool(description="Looks up open orders. Returns up to 20 orders.")
    told = schema_tool(description="Looks up open orders for support questions about delivery.")

    assert ("no-when", None) in checks_of(silent)
    assert ("no-when", None) not in checks_of(told)
    assert lint_tools([silent]).findings[0].severity == "warning"


def test_description_without_what_comes_back() -> None:
    silent = schema_tool(description="Looks up open orders; use it when asked about delivery.")

    assert ("no-returns", None) in checks_of(silent)


def test_listing_tool_must_say_how_much_comes_back() -> None:
    unbounded = schema_tool(
        "list_orders", "Lists a customer's orders; use it for order questions. Returns orders."
    )
    bounded = schema_tool(
        "list_orders",
        "Lists a customer's orders; use it for order questions. Returns the 50 newest orders.",
    )

    assert ("no-size", None) in checks_of(unbounded)
    assert ("no-size", None) not in checks_of(bounded)


def test_function_returning_a_list_must_say_how_much_comes_back() -> None:
    @tool
    def get_orders(customer_id: str) -> list[str]:
        """Gets a customer's orders; use it for order questions. Returns their ids.

        Args:
            customer_id: the customer's id, like 'C-1'.
        """
        return [customer_id]

    @tool
    def get_order(order_id: str) -> dict[str, str]:
        """Gets one order; use it for order questions. Returns its id and status.

        Args:
            order_id: the order's id, like 'O-1'.
        """
        return {"id": order_id}

    assert ("no-size", None) in checks_of(get_orders)
    assert ("no-size", None) not in checks_of(get_order)


def test_search_tool_must_say_how_matching_works() -> None:
    vague = schema_tool(
        "search_orders",
        "Searches orders; use it to find an order by product. Returns up to 10 orders.",
    )
    precise = schema_tool(
        "search_orders",
        "Searches orders; use it to find an order by product. Returns up to 10 orders. "
        "Matching is case-insensitive on any part of the product name.",
    )

    assert ("no-matching", None) in checks_of(vague)
    assert ("no-matching", None) not in checks_of(precise)
    # A tool that does not search is not asked how it matches.
    assert ("no-matching", None) not in checks_of(schema_tool())


def test_each_undescribed_parameter_is_an_error_naming_it() -> None:
    report = lint_tools(
        [
            schema_tool(
                properties={
                    "customer_id": {"type": "string", "description": "like 'C-1'"},
                    "since": {"type": "string"},
                    "limit": {"type": "integer", "description": ""},
                }
            )
        ]
    )

    undescribed = [f for f in report.findings if f.check == "undescribed-param"]
    assert [f.parameter for f in undescribed] == ["since", "limit"]
    assert all(f.severity == "error" and f.tool == "get_open_orders" for f in undescribed)
    assert "Args:" in undescribed[0].suggestion


def test_literal_action_parameter_should_be_several_tools() -> None:
    @tool
    def manage_orders(action: Literal["create", "cancel", "refund"], order_id: str) -> str:
        """Works on orders; use it for order changes. Returns a confirmation.

        Args:
            action: what to do.
            order_id: the order's id.
        """
        return order_id

    (finding,) = [f for f in lint_tools([manage_orders]).findings if f.check == "mode-param"]

    assert finding.parameter == "action"
    assert finding.severity == "error"
    assert "`create_orders`, `cancel_orders`, `refund_orders`" in finding.suggestion


class Operation(enum.Enum):
    OPEN = "open"
    SHIP = "ship"
    CANCEL = "cancel"


def test_enum_parameter_of_verbs_should_be_several_tools_whatever_its_name() -> None:
    @tool
    def change_order(order_id: str, change: Operation | None = None) -> str:
        """Changes an order; use it for order changes. Returns a confirmation.

        Args:
            order_id: the order's id.
            change: the change to make.
        """
        return order_id

    verbs = schema_tool(
        properties={
            "step": {"type": "string", "enum": ["create", "delete", "update"], "description": "x"}
        }
    )

    assert ("mode-param", "change") in checks_of(change_order)
    assert ("mode-param", "step") in checks_of(verbs)


def test_mode_parameter_with_options_listed_in_its_description() -> None:
    listed = schema_tool(
        properties={"mode": {"type": "string", "description": "one of 'summary', 'full' or 'raw'"}}
    )

    unquoted = schema_tool(
        properties={"action": {"type": "string", "description": "One of: start, stop or pause."}}
    )

    assert ("mode-param", "mode") in checks_of(listed)
    assert ("mode-param", "action") in checks_of(unquoted)


def test_filters_and_free_text_commands_are_not_mode_parameters() -> None:
    status_filter = schema_tool(
        properties={
            "status": {"type": "string", "description": "only 'open', 'pending' or 'closed'"},
            "file_type": {"type": "string", "enum": ["csv", "json"], "description": "format"},
        }
    )
    shell = schema_tool(
        "run_shell_command",
        properties={"command": {"type": "string", "description": "like 'ls', 'pwd' or 'df'"}},
    )

    assert not {c for c, _ in checks_of(status_filter, shell)} & {"mode-param"}


@pytest.mark.parametrize("name", ["run", "do", "tool", "helper", "process", "handle", "do_task"])
def test_generic_names_are_errors(name: str) -> None:
    report = lint_tools([schema_tool(name)])

    assert [(f.check, f.severity) for f in report.findings] == [("generic-name", "error")]


def test_short_and_verbless_names_are_warnings() -> None:
    report = lint_tools([schema_tool("ls"), schema_tool("weather"), schema_tool("getWeather")])

    assert [[(f.check, f.severity) for f in t.findings] for t in report.tools] == [
        [("short-name", "warning")],
        [("no-verb", "warning")],
        [],
    ]
    assert "`get_weather`" in report.tools[1].findings[0].suggestion


# --- scoring and rendering ----------------------------------------------------------------------


def test_score_loses_each_failed_checks_points_once() -> None:
    one = schema_tool(properties={"a": {"type": "string"}})
    three = schema_tool(properties={"a": {"type": "string"}, "b": {}, "c": {}})
    weather = schema_tool("weather")

    report = lint_tools([one, three, weather])

    undescribed = CHECKS["undescribed-param"][1]
    assert [t.score for t in report.tools] == [
        100 - undescribed,
        100 - undescribed,
        100 - CHECKS["no-verb"][1],
    ]
    assert report.score == round(sum(t.score for t in report.tools) / 3)


def test_score_never_goes_below_zero() -> None:
    worst = schema_tool(
        "do",
        "",
        {"mode": {"type": "string", "enum": ["a", "b"]}, "x": {}},
    )

    assert lint_tools([worst]).tools[0].score == 0


def test_no_tools_is_a_clean_report() -> None:
    report = lint_tools([])

    assert report.score == 100
    assert not report.has_errors
    assert "0 tools" in report.render()


def test_warnings_alone_do_not_make_errors() -> None:
    report = lint_tools([schema_tool("weather")])

    assert report.findings
    assert not report.has_errors


def test_render_has_a_block_per_tool_with_score_findings_and_fixes() -> None:
    report = lint_tools([schema_tool(), schema_tool("search", "Search the database.", {})])

    text = report.render()

    good, bad, total = text.strip().split("\n\n")
    assert good == "get_open_orders: 100/100, no findings"
    assert bad.startswith(f"search: {report.tools[1].score}/100\n")
    assert "error   restates-name: " in bad
    assert "fix: say what it works on" in bad
    assert total == (
        f"overall {report.score}/100: 2 tools, 1 error, {len(report.findings) - 1} warnings"
    )
    assert all(len(line) <= 100 for line in text.splitlines())


def test_render_names_the_parameter_a_finding_is_about() -> None:
    text = lint_tools([schema_tool(properties={"since": {"type": "string"}})]).render()

    assert "undescribed-param [since]: parameter `since` has no description" in text


def test_every_check_has_a_documented_weight() -> None:
    import steadyloop.lint

    doc = steadyloop.lint.__doc__ or ""
    for check, (severity, points) in CHECKS.items():
        assert f"{check:<20} {severity:<9} {points:>4}" in doc


# --- loading tools from a file ----------------------------------------------------------------


def write(tmp_path: Path, source: str, name: str = "my_tools.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_loader_collects_decorated_tools_and_wraps_functions_in_tools_list(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        '''
        from steadyloop import tool

        @tool
        def get_time() -> str:
            """Now."""
            return "12:00"

        def add_numbers(a: int, b: int) -> int:
            """Adds."""
            return a + b

        def not_a_tool() -> None: ...

        tools = [add_numbers, get_time]
        ''',
    )

    tools = load_tools_from_file(path)

    assert [t.name for t in tools] == ["get_time", "add_numbers"]
    assert tools[1].bind({"a": 1, "b": 2}).kwargs == {"a": 1, "b": 2}


def test_loader_does_not_run_the_main_block(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from steadyloop import tool

        @tool
        def get_time() -> str:
            return "12:00"

        if __name__ == "__main__":
            raise SystemExit("ran main")
        """,
    )

    assert [t.name for t in load_tools_from_file(str(path))] == ["get_time"]


def test_loader_supports_dataclasses_in_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from __future__ import annotations
        from dataclasses import dataclass
        from steadyloop import tool

        @dataclass
        class Point:
            x: int

        @tool
        def make_point(x: int) -> Point:
            return Point(x)
        """,
    )

    (make_point,) = load_tools_from_file(path)
    assert make_point.render(make_point.bind({"x": 3}).fn(3)).text == '{"x":3}'


def test_plain_functions_are_linted_as_the_agent_would_wrap_them() -> None:
    def get_open_orders(customer_id: str) -> list[str]:
        """Looks up a customer's open orders; use it when the customer asks where an order is.

        Returns up to 20 order ids, newest first.

        Args:
            customer_id: the customer's id, like 'C-1'.
        """
        return []

    def run(x: int) -> int:
        return x

    report = lint_tools([get_open_orders, run])

    described, bare = report.tools
    assert (described.tool, described.score) == ("get_open_orders", 100)
    assert {f.check for f in bare.findings} >= {"generic-name", "missing-description"}
    assert [t.tool for t in lint_tools([tool(run)]).tools] == ["run"]


def test_a_toolset_is_a_config_error_saying_to_lint_its_tools() -> None:
    with pytest.raises(ConfigError, match=r"lint_tools\(await toolset.tools\(\)\)"):
        lint_tools([Toolset()])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="not a tool or a function"):
        lint_tools([42])  # type: ignore[list-item]


def test_a_tools_file_imports_modules_next_to_it_as_a_script_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [*sys.path])
    before = [*sys.path]
    write(tmp_path, "RATES = {'apple': 3}\n", "price_table.py")
    write(tmp_path, "def discount(price: int) -> int:\n    return price - 1\n", "discounts.py")
    path = write(
        tmp_path,
        """
        from price_table import RATES
        from steadyloop import tool

        @tool
        def get_price(item: str) -> int:
            from discounts import discount  # imported when the tool runs

            return discount(RATES[item])
        """,
        "agent_tools.py",
    )

    (get_price,) = load_tools_from_file(path)

    assert get_price.bind({"item": "apple"}).fn("apple") == 2
    assert sys.path[: len(before)] == before  # nothing next to the file shadows later imports


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tools file not found: .*nope\.py \(check the path\)"):
        load_tools_from_file(tmp_path / "nope.py")


def test_directory_and_non_python_file_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "tools.txt").write_text("")

    with pytest.raises(ConfigError, match="is a directory"):
        load_tools_from_file(tmp_path / "pkg.py")
    with pytest.raises(ConfigError, match=r"must end in \.py"):
        load_tools_from_file(tmp_path / "tools.txt")


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop.py"
    os.symlink(loop, loop)

    with pytest.raises(ConfigError, match=r"cannot read tools file .*loop\.py: "):
        load_tools_from_file(loop)


def test_file_raising_on_import_names_the_exception_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, 'import json\nraise RuntimeError("database is not configured")\n')

    with pytest.raises(ConfigError) as info:
        load_tools_from_file(path)

    message = str(info.value)
    assert message == (
        f"tools file {path} raised RuntimeError on import: database is not configured"
    )
    assert "Traceback" not in message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def broken(:\n", r"raised SyntaxError on import: .*line 1"),
        ("import no_such_module_here\n", r"raised ModuleNotFoundError on import: No module"),
        ("import sys\nsys.exit(2)\n", r"raised SystemExit on import: 2"),
        ("raise KeyError\n", r"raised KeyError on import$"),
    ],
)
def test_import_failures_become_config_errors(tmp_path: Path, source: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_tools_from_file(write(tmp_path, source))


def test_invalid_tool_definition_in_file_is_a_config_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from steadyloop import tool

        @tool
        def spread(*args: int) -> int:
            return 0
        """,
    )

    with pytest.raises(ConfigError, match=r"raised ConfigError on import: tool 'spread'"):
        load_tools_from_file(path)


def test_two_tools_with_the_same_name_are_a_config_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from steadyloop import tool

        @tool
        def search() -> str:
            return ""

        @tool(name="search")
        def search_again() -> str:
            return ""
        """,
    )

    with pytest.raises(ConfigError, match=r"two tools are named 'search' .*search_again"):
        load_tools_from_file(path)


def test_file_without_tools_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "def helper() -> None: ...\n")

    with pytest.raises(ConfigError, match=r"defines no tools: decorate functions with @tool"):
        load_tools_from_file(path)


def test_tools_that_is_not_a_list_is_a_config_error(tmp_path: Path) -> None:
    bad_type = write(tmp_path, "tools = 'search'\n", "a.py")
    bad_item = write(tmp_path, "tools = [42]\n", "b.py")

    with pytest.raises(ConfigError, match=r"`tools` must be a list .*got str"):
        load_tools_from_file(bad_type)
    with pytest.raises(ConfigError, match=r"tools\[0\]: not a tool or a function: 42"):
        load_tools_from_file(bad_item)

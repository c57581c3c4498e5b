import pytest
from hypothesis import given
from hypothesis import strategies as st

from steadyloop import truncate
from steadyloop.truncate import truncation_marker


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_keeps_exactly_limit_characters_of_content(text: str, limit: int) -> None:
    out = truncate(text, limit)
    if len(text) <= limit:
        assert out == text
        return
    marker = truncation_marker(len(text) - limit)
    head, sep, tail = out.partition(marker)
    assert sep == marker
    assert len(head) + len(tail) == limit
    assert len(head) - len(tail) in (0, 1)
    assert text.startswith(head)
    assert text.endswith(tail)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, truncation_marker(10)),
        (1, "a" + truncation_marker(9)),
        (3, "ab" + truncation_marker(7) + "j"),
        (4, "ab" + truncation_marker(6) + "ij"),
    ],
)
def test_small_and_odd_limits(limit: int, expected: str) -> None:
    assert truncate("abcdefghij", limit) == expected


def test_marker_names_the_exact_number_of_characters_cut() -> None:
    out = truncate("x" * 400_000, 8_000)
    assert "[392000 characters omitted]" in out


def test_does_not_split_multibyte_characters() -> None:
    text = "é" * 10 + "😀" * 10
    out = truncate(text, 5)
    assert out.startswith("ééé")
    assert out.endswith("😀😀")
    out.encode("utf-8")


def test_negative_limit_is_an_error() -> None:
    with pytest.raises(ValueError, match="limit must be >= 0"):
        truncate("abc", -1)

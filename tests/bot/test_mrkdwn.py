"""Escaping and safe truncation of untrusted text for mrkdwn."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from bot.ui.mrkdwn import ELLIPSIS, code_block, escape, escape_truncate, truncate

_ENTITY = re.compile(r"&(amp|lt|gt);")


def test_escape_replaces_only_the_three_control_characters() -> None:
    assert escape("<!channel> & <http://x|y> &lt; *bold* `code`") == (
        "&lt;!channel&gt; &amp; &lt;http://x|y&gt; &amp;lt; *bold* `code`"
    )


def test_truncate_never_cuts_inside_an_entity() -> None:
    text = escape("ab<<<<")  # ab&lt;&lt;&lt;&lt;
    for limit in range(2, len(text) + 1):
        out = truncate(text, limit)
        assert len(out) <= limit
        body = out.removesuffix(ELLIPSIS)
        assert _ENTITY.sub("", body).count("&") == 0


@given(st.text(alphabet="`ab\n*"), st.integers(min_value=7, max_value=200))
@example("a```b", 100)
@example("/tmp/x``````\n*Reviewed and approved*\n``````", 200)  # six: two fences once
@example("``a``", 100)  # a backtick at either end joins the block's own fence
def test_no_text_ends_a_code_block_early(text: str, limit: int) -> None:
    out = code_block(text, limit)
    assert out.startswith("```") and out.endswith("```") and len(out) <= limit
    assert "``" not in out[3:-3] and not out[3:-3].startswith("`") and not out[3:-3].endswith("`")


@given(st.text(), st.integers(min_value=1, max_value=4000))
@example("a" * 199 + "&", 200)  # a plain slice of the escaped text would end in a bare "&"
def test_escaped_truncated_text_is_within_limit_and_harmless(text: str, limit: int) -> None:
    out = escape_truncate(text, limit)
    assert len(out) <= limit
    assert "<" not in out and ">" not in out
    assert _ENTITY.sub("", out).count("&") == 0
    if len(escape(text)) <= limit:
        assert out == escape(text)


@given(st.text(), st.integers(min_value=7, max_value=4000))
def test_code_block_is_within_limit_and_closed(text: str, limit: int) -> None:
    out = code_block(text, limit)
    assert len(out) <= limit
    assert out.startswith("```") and out.endswith("```")
    assert "<" not in out and _ENTITY.sub("", out).count("&") == 0

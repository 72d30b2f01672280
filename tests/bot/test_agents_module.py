"""The agents module SIGNOFF_AGENTS names: what a wrong one is told."""

from __future__ import annotations

import pytest

from bot.agents.registry import load_specs
from bot.errors import AgentsModuleError


@pytest.mark.parametrize(
    ("given", "told"),
    [
        (
            "my_agents.py",
            "give the module's name (my_agents), and start signoff in its folder or put that "
            "on PYTHONPATH",
        ),
        (
            "/srv/ops/my_agents.py",
            "give the module's name (my_agents), and start signoff in its folder",
        ),
    ],
)
def test_a_file_named_for_the_module_is_told_to_give_the_modules_name(
    given: str, told: str
) -> None:
    with pytest.raises(AgentsModuleError) as refused:
        load_specs(given)
    assert str(refused.value).startswith(f"SIGNOFF_AGENTS: cannot import {given!r} (")
    assert told in str(refused.value)


def test_a_module_that_is_not_there_is_not_told_about_files() -> None:
    with pytest.raises(AgentsModuleError) as refused:
        load_specs("no_such_agents_module")
    assert str(refused.value) == (
        "SIGNOFF_AGENTS: cannot import 'no_such_agents_module' "
        "(No module named 'no_such_agents_module')"
    )

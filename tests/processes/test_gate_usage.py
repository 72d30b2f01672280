"""A gate used wrongly exits 2, posts nothing and runs nothing, and its message names the
option as it was typed."""

from __future__ import annotations

import asyncio

import pytest
from gate_stack import MARK, Stack
from procs import (
    ALICE,
    GENERAL,
    SIGNOFF,
)

from signoff.gate_cli import USAGE


async def test_usage_errors_exit_2_and_post_nothing(stack: Stack) -> None:
    for args in (("--expires", "soon"), ("--approvers", "alice")):
        gate = await stack.gate(*args)
        _, err = await asyncio.wait_for(gate.communicate(), 30)
        assert gate.returncode == USAGE, err
        assert err.decode().startswith("signoff gate: ")
    env = stack.env
    stack.env = {**env, "SIGNOFF_URL": env["SIGNOFF_URL"].removeprefix("http://")}
    try:
        gate = await stack.gate()
        _, err = await asyncio.wait_for(gate.communicate(), 30)
    finally:
        stack.env = env
    assert gate.returncode == USAGE and b"SIGNOFF_URL: use the server's http://" in err
    assert [m for m in stack.sandbox.workspace.history(GENERAL) if m.blocks] == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "name --approvers, or set --anyone-in-channel"),
        (("--approvers", ALICE, "--min-approvals", "3"), "--min-approvals 3 but only 1 may"),
        (("--approvers", ALICE, "--editable", "limit"), "--editable 'limit': use NAME=VALUE"),
        (("--approvers", "@nosuch"), "--approvers @nosuch: no user group @nosuch"),
    ],
    ids=["no-approvers", "min-approvals", "editable", "unknown-group"],
)
async def test_a_usage_error_names_the_option_as_typed(
    stack: Stack, args: tuple[str, ...], said: str
) -> None:
    """Not the API's field (``approvers.0``, ``min_approvals``): the server's 400 too."""
    err = await _usage_error(stack, *args, "--", "sh", "-c", MARK)
    assert err.startswith(f"signoff gate: {said}"), err
    for named in ("approvers.0", "min_approvals", "anyone_in_channel", "--param"):
        assert named not in err
    assert not stack.marks.exists()
    assert [m for m in stack.sandbox.workspace.history(GENERAL) if m.blocks] == []


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("./no-such-cleanup.sh", "no such executable; nothing was asked"),
        ("no-such-cleanup", "no such executable on PATH; nothing was asked"),
    ],
    ids=["path", "name"],
)
async def test_a_command_that_cannot_run_is_refused_before_anyone_is_asked(
    stack: Stack, command: str, said: str
) -> None:
    """Asked first, approvers would approve a command that then fails with exit 127."""
    err = await _usage_error(stack, "--approvers", ALICE, "--", command, "--apply")
    assert err == f"signoff gate: cannot run {command}: {said}\n"
    assert [m for m in stack.sandbox.workspace.history(GENERAL) if m.blocks] == []


async def _usage_error(stack: Stack, *args: str) -> str:
    """What a gate asking in ``GENERAL`` with ``args`` (no others) said, once it exited 2."""
    gate = await asyncio.create_subprocess_exec(
        str(SIGNOFF),
        *("gate", "--channel", GENERAL, "--title", "Delete 42 stale volumes", *args),
        env=stack.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == USAGE, err
    return err.decode()

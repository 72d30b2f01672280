"""How Slack rewrites typed `@name`, `@handle` and `#channel` before an app reads them.

A slash command whose manifest entry says `should_escape: true` gets labelled forms
(`<@U0BOB|bob>`, `<!subteam^S0ONCALL|@oncall>`, `<#C0OPS|ops>`); a message, and so its
`app_mention` event, gets bare ids (`<@U0BOB>`, `<!subteam^S0ONCALL>`, `<#C0OPS>`).
Names nobody has stay as typed, and text already inside `<...>` is left alone.
"""

from __future__ import annotations

import re

from .workspace import Workspace

# `@` or `#` not glued to a word (e-mail addresses, `&#39;`), then a Slack-style name
# ending on a letter or digit, so `@bob.` at the end of a sentence is `@bob`.
_TYPED = re.compile(r"(?<![\w&@#])(?P<sigil>[@#])(?P<name>\w(?:[\w.\-]*\w)?)")
_CONTROL = re.compile(r"(<[^<>]*>)")


def escape_mentions(workspace: Workspace, text: str, *, labelled: bool) -> str:
    """`text` with every known `@user`, `@group` and `#channel` in Slack's escaped form;
    `labelled` for a slash command's text, bare ids for a message's."""
    parts = _CONTROL.split(text)
    # Odd indexes are the `<...>` sequences the split kept: already escaped, left alone.
    return "".join(
        part if i % 2 else _TYPED.sub(lambda m: _escaped(workspace, m, labelled), part)
        for i, part in enumerate(parts)
    )


def _escaped(workspace: Workspace, match: re.Match[str], labelled: bool) -> str:
    name = match["name"].lower()
    if match["sigil"] == "#":
        channel = next(
            (c for c in workspace.channels.values() if not c.is_im and c.name == name), None
        )
        if channel is None:
            return match[0]
        return f"<#{channel.id}|{channel.name}>" if labelled else f"<#{channel.id}>"
    user = next((u for u in workspace.users.values() if u.name.lower() == name), None)
    if user is not None:
        return f"<@{user.id}|{user.name}>" if labelled else f"<@{user.id}>"
    group = next((g for g in workspace.groups.values() if g.handle.lower() == name), None)
    if group is not None:
        return f"<!subteam^{group.id}|@{group.handle}>" if labelled else f"<!subteam^{group.id}>"
    return match[0]

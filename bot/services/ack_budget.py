"""How long an answer to Slack may wait for Redis: Slack shows the user its own error
when a click, a form or a command is not answered within 3 seconds."""

ACK_BUDGET = 2.0
"""Seconds an answer waits for Redis before it leaves anyway, saying what is not known."""

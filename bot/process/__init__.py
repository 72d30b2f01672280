"""One Signoff process: the ``signoff`` CLI, settings, the services it opens, the loops it
runs, and the HTTP servers (Slack events, operator endpoints) it serves."""

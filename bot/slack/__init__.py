"""Slack's way in: the Bolt app and its listeners, the HTTP-mode events route, the Socket
Mode connection, and the ``/signoff`` command, mentions and App Home."""

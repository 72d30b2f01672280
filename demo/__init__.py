"""The Signoff demo: the bot, a local Slack workspace and three agents, one command away.

``python -m demo`` (or ``./run demo``) prints the workspace's address. ``demo.stack``
holds the whole demo in-process (``DemoStack``). This package imports nothing beyond the
standard library, so ``./run demo --help`` answers before anything is installed.
"""

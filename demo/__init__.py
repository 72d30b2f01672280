"""The Signoff demo: the bot, a local Slack workspace and three agents, one command away.

``python -m demo`` (or ``./run demo``) prints the workspace's address. Public API:
``DemoStack`` (the whole demo in-process), ``demo_agents``, ``default_data_dir`` and
``DemoError``.
"""

from .agents import demo_agents
from .errors import DemoError
from .stack import DemoStack, default_data_dir

__all__ = ["DemoError", "DemoStack", "default_data_dir", "demo_agents"]

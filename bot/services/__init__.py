"""What every part of the bot shares, built once per process: the Slack client, storage,
the agents, the directory of users and groups, the clock, background work and metrics."""

from .shared import Services

__all__ = ["Services"]

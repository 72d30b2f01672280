"""Slack's Web API methods the sandbox plays, served under `/api/<method>`."""

from .router import METHODS, WebApi

__all__ = ["METHODS", "WebApi"]

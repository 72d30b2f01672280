"""Model providers the agent loop can call."""

from .base import Model, ModelRequest, ModelResponse, ToolSpec
from .openai import OpenAIChatModel
from .scripted import ScriptedModel

__all__ = [
    "Model",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "ScriptedModel",
    "ToolSpec",
]

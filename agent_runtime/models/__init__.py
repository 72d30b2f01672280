"""Model providers the agent loop can call."""

from .base import Model, ModelRequest, ModelResponse, ToolSpec
from .scripted import ScriptedModel

__all__ = ["Model", "ModelRequest", "ModelResponse", "ScriptedModel", "ToolSpec"]

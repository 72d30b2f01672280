"""Models of input from outside, which take no key they do not name."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class ClosedModel(BaseModel):
    """A model that refuses unknown keys, naming the first: only that one reaches
    pydantic, so input of thousands of them costs one error, not one each (building
    those held the bot's event loop for half a second a request)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _first_unknown_key(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = cls.model_fields
        unknown = next((key for key in data if key not in known), None)
        if unknown is None:
            return data
        return {key: value for key, value in data.items() if key in known or key == unknown}

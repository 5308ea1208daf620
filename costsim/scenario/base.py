"""The one strict base every scenario section derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Frozen, and unknown keys are an error: a typo must never pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

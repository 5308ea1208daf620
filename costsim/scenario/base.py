"""The one strict base every scenario section derives from."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")]
"""Names of options and job classes: letters, digits, `_ . -`."""


class StrictModel(BaseModel):
    """Frozen, and unknown keys are an error: a typo must never pass silently. No number is
    infinite or NaN (each would turn a cost or a delay into nonsense); collections are tuples, so a
    loaded scenario cannot be changed without validating it again."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

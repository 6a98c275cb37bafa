"""The error every refusal of a model derives from (:mod:`.paramfile`'s format, :mod:`.consistency`,
:mod:`.plausibility`), so that a caller catches all of them as one."""
from __future__ import annotations

__all__ = ["ModelFileError"]


class ModelFileError(ValueError):
    """A model file is missing, malformed, or does not fit the model it describes (key named)."""
